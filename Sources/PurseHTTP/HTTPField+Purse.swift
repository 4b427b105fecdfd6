import HTTPTypes

/// The header fields more than one Purse system reads or writes, beside swift-http-types' own.
extension HTTPField.Name {
    /// The key a client sends with every money-moving POST; a retry with the same key gets the
    /// first answer back.
    public static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    /// Set on an answer replayed for a repeated ``idempotencyKey``.
    public static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
    /// The id a request is logged under, echoed on its answer.
    public static let xRequestID = HTTPField.Name("X-Request-ID")!
}

extension HTTPResponse.Status {
    /// A status read off the wire, or `nil` when `code` is not three digits: swift-http-types
    /// stops the process on a code outside 0...999, and a peer's answer must never do that.
    public init?(wireCode code: Int) {
        guard (100...999).contains(code) else { return nil }
        self.init(code: code)
    }
}


/// What the MyCHIPs client reports. A struct over a private code so cases can be added without
/// breaking callers' `switch`es.
public struct ChipsError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, broadly. A struct with static members, so a kind added later breaks no
    /// caller's `switch` (which ends in `default`).
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidTicket = Kind(rawValue: "invalidTicket")
        public static let invalidLink = Kind(rawValue: "invalidLink")
        public static let ticketExpired = Kind(rawValue: "ticketExpired")
        public static let needsUsername = Kind(rawValue: "needsUsername")
        public static let notLoggedIn = Kind(rawValue: "notLoggedIn")
        public static let loginRefused = Kind(rawValue: "loginRefused")
        public static let disconnected = Kind(rawValue: "disconnected")
        public static let timeout = Kind(rawValue: "timeout")
        public static let server = Kind(rawValue: "server")
        public static let invalidResponse = Kind(rawValue: "invalidResponse")
        public static let offline = Kind(rawValue: "offline")
        public static let keyStore = Kind(rawValue: "keyStore")
    }

    public let kind: Kind
    public let message: String
    /// The provider's error code for ``Kind/server``: the schema's own `!schema.table:CODE`
    /// (`!mychips.chits:LIT`) wherever the provider put it — the code, or, for an exception the
    /// schema raised (`P0001`), the head of the message — else the protocol's code
    /// (`!wm.lang:badWhere`) or the bare SQLSTATE.
    public let code: String?
    public let detail: String?
    /// Values for the placeholders of the language data's text for ``code`` (`units` …).
    public let values: [String: String]

    init(_ kind: Kind, _ message: String, code: String? = nil, detail: String? = nil, values: [String: String] = [:]) {
        self.kind = kind
        self.message = message
        self.code = code
        self.detail = detail
        self.values = values
    }

    public static func invalidTicket(_ reason: String) -> ChipsError { ChipsError(.invalidTicket, reason) }
    /// A link or QR code this app does not read, or one whose fields are wrong.
    public static func invalidLink(_ reason: String) -> ChipsError { ChipsError(.invalidLink, reason) }
    public static let ticketExpired = ChipsError(.ticketExpired, "the connection ticket has expired: ask the provider for a new one")
    public static let needsUsername = ChipsError(.needsUsername, "the ticket does not name its user: give the username")
    public static let notLoggedIn = ChipsError(.notLoggedIn, "no connection key and provider are stored: connect with a ticket first")
    public static func loginRefused(_ reason: String) -> ChipsError { ChipsError(.loginRefused, reason) }
    public static let disconnected = ChipsError(.disconnected, "the connection to the provider was lost before the answer came")
    public static let timeout = ChipsError(.timeout, "the provider did not answer in time")
    public static let offline = ChipsError(.offline, "the provider cannot be reached")
    /// The user's certificate publishes a signing key this device does not hold: it was made on
    /// another device, whose backup (`signkey`) brings it here.
    public static let signingKeyElsewhere = ChipsError(.keyStore, "your signing key is on another device: import its backup here, or replace it",
                                                       code: "signing-key-elsewhere")
    /// This device's signing key is not the one the user's certificate publishes.
    public static let signingKeyDiffers = ChipsError(.keyStore, "this device's signing key is not the one your certificate publishes: import that key's backup, or replace it",
                                                     code: "signing-key-differs")
    /// True when no answer came (the connection dropped, timed out, or is down): the request may
    /// or may not have been acted on, and only a request that is safe to repeat may be sent again.
    public var isAnswerLost: Bool { [.disconnected, .timeout, .offline].contains(kind) }
    public static func invalidResponse(_ reason: String) -> ChipsError { ChipsError(.invalidResponse, reason) }
    public static func keyStore(_ reason: String) -> ChipsError { ChipsError(.keyStore, reason) }
    /// An error the provider answered a request with.
    public static func server(message: String, code: String?, detail: String?) -> ChipsError {
        ChipsError(.server, message, code: schemaCode(in: code ?? "") ?? schemaCode(in: message) ?? code, detail: detail)
    }

    /// The first `!schema.table:CODE` in `text` (`!mychips.chits:LMT`), if any.
    static func schemaCode(in text: String) -> String? {
        var rest = Substring(text)
        while let bang = rest.firstIndex(of: "!") {
            let candidate = rest[bang...].prefix { $0 == "!" || $0 == "." || $0 == ":" || $0 == "_" || $0.isLetter || $0.isNumber }
            let parts = candidate.dropFirst().split(separator: ":", omittingEmptySubsequences: false)
            if parts.count == 2, parts[0].contains("."), !parts[1].isEmpty, parts[1].allSatisfy({ $0.isLetter || $0.isNumber }) {
                return String(candidate)
            }
            rest = rest[rest.index(after: bang)...]
        }
        return nil
    }

    public var description: String {
        var text = message
        if let code { text += " (\(code))" }
        if let detail { text += ": \(detail)" }
        return text
    }
}

import HTTPTypes

/// The header fields of a Cuti-E device request, as the Cuti-E SDK sends them: who the app and
/// the device are, the device token, and the signature (with its timestamp and, where the app
/// requires App Attest, an assertion) over the request.
extension HTTPField.Name {
    public static let appID = HTTPField.Name("X-App-ID")!
    public static let deviceID = HTTPField.Name("X-Device-ID")!
    public static let deviceToken = HTTPField.Name("X-Device-Token")!
    public static let requestTimestamp = HTTPField.Name("X-Timestamp")!
    public static let requestSignature = HTTPField.Name("X-Signature")!
    public static let appAssertion = HTTPField.Name("X-App-Assertion")!
}

/// What a Cuti-E request signature (`X-Signature`) and an App Attest assertion over a request
/// (`X-App-Assertion`) cover, written once for the SDK that signs and the service that checks:
///
///     timestamp "\n" METHOD "\n" path?query "\n" hex(SHA-256(body)) [ "\n" Idempotency-Key ]
///
/// The last line is there exactly when the request carries an `Idempotency-Key`, so a captured
/// signed request cannot be sent again under a fresh key to act a second time.
public enum CutiESignedText {
    public static func make(timestamp: String, method: String, target: String, bodySHA256Hex: String, idempotencyKey: String?) -> String {
        var text = "\(timestamp)\n\(method.uppercased())\n\(target)\n\(bodySHA256Hex)"
        if let idempotencyKey { text += "\n" + idempotencyKey }
        return text
    }
}

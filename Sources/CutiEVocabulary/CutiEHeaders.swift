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

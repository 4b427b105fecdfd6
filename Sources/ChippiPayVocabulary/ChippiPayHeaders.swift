import HTTPTypes

extension HTTPField.Name {
    /// The merchant's public key (`pk_…`), beside its secret key as the bearer token, on every
    /// call to the ChippiPay provider.
    public static let apiKey = HTTPField.Name("x-api-key")!

    /// The signature on a webhook the provider sends a merchant: `t=…,v1=…`, HMAC-SHA256 of the
    /// timestamp and the raw body with the merchant's webhook secret.
    public static let chipiSignature = HTTPField.Name("Chipi-Signature")!
}

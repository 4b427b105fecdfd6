import Crypto
import Foundation
import PurseFormats
import PurseKit

/// The key this device logs in with: ECDSA P-521, as the current Wyseman client makes it. Its
/// public half goes to the provider with a ticket login; later logins sign the provider's
/// `/clientinfo` text with it (SHA-384, raw `r ‖ s`, base64url). Kept in the `SecureStore`,
/// exportable and importable as a JWK (the seed's "connection key import/export").
public struct ConnectionKey: Sendable {
    let privateKey: P521.Signing.PrivateKey

    public init() { privateKey = P521.Signing.PrivateKey() }

    /// A key from its private JWK (`kty` EC, `crv` P-521, `x`, `y`, `d`).
    public init(jwk text: String) throws(ChipsError) {
        guard let jwk = EllipticCurveJWK.parse(text), jwk.kty == "EC", jwk.crv == "P-521", let d = jwk.rawPrivateKey,
              let key = try? P521.Signing.PrivateKey(rawRepresentation: d) else {
            throw .keyStore("not a P-521 private key in JWK form")
        }
        if let raw = jwk.rawPublicKey, raw != key.publicKey.rawRepresentation {
            throw .keyStore("the key's public point does not match its private scalar")
        }
        privateKey = key
    }

    /// The private JWK, for export. Whoever holds it can log in as this device.
    public var privateJWK: String {
        let raw = privateKey.publicKey.rawRepresentation
        return EllipticCurveJWK(crv: "P-521", x: raw.prefix(66), y: raw.suffix(66), d: privateKey.rawRepresentation, keyOps: ["sign"]).jsonText
    }

    /// The public JWK, as the provider stores it.
    public var publicJWK: String {
        let raw = privateKey.publicKey.rawRepresentation
        return EllipticCurveJWK(crv: "P-521", x: raw.prefix(66), y: raw.suffix(66), keyOps: ["verify"]).jsonText
    }

    /// `pub` of a ticket login: base64url of the public JWK's JSON.
    public var loginPub: String { Base64URL.encode(Data(publicJWK.utf8)) }

    /// ECDSA P-521 over SHA-384 of `message`'s UTF-8, raw `r ‖ s` (132 bytes) in base64url.
    public func sign(_ message: String) throws -> String {
        Base64URL.encode(try privateKey.signature(for: SHA384.hash(data: Data(message.utf8))).rawRepresentation)
    }
}

/// Where the client keeps its connection key and which provider and user it logs in to.
public struct ChipsKeychain: Sendable {
    static let keyItem = "mychips.connection-key"
    static let accountItem = "mychips.account"

    /// The provider and user a stored key belongs to.
    public struct Account: Codable, Sendable, Equatable {
        public var host: String
        public var port: Int
        public var user: String
        /// The provider's HTTP port for `/clientinfo` when it is not the websocket's (the real
        /// provider serves HTTP on 1024 and the websocket on 1025).
        public var httpPort: Int?
        /// TLS (`wss`, `https`); off only for loopback development providers.
        public var secure: Bool

        public init(host: String, port: Int, user: String, httpPort: Int? = nil, secure: Bool) {
            self.host = host
            self.port = port
            self.user = user
            self.httpPort = httpPort
            self.secure = secure
        }
    }

    let store: any SecureStore

    public init(store: any SecureStore) { self.store = store }

    public func key() async throws -> ConnectionKey? {
        guard let text = try await store.string(for: Self.keyItem) else { return nil }
        return try ConnectionKey(jwk: text)
    }

    public func save(_ key: ConnectionKey) async throws { try await store.setString(key.privateJWK, for: Self.keyItem) }

    public func account() async throws -> Account? {
        guard let data = try await store.data(for: Self.accountItem) else { return nil }
        return try? JSONDecoder().decode(Account.self, from: data)
    }

    public func save(_ account: Account) async throws { try await store.set(try JSONEncoder().encode(account), for: Self.accountItem) }

    /// Imports a key exported from another device (its private JWK) for `account`.
    public func importKey(jwk: String, account: Account) async throws {
        let key = try ConnectionKey(jwk: jwk)
        try await save(key)
        try await save(account)
    }

    /// Forgets the key and the account (signing out this device).
    public func forget() async throws {
        try await store.remove(Self.keyItem)
        try await store.remove(Self.accountItem)
    }
}

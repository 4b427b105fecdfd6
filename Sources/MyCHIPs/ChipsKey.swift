import Crypto
import CryptoExtras
import Foundation
import PurseFormats
import PurseKit

/// What a key is for: logging in (``ConnectionKey``) or signing tallies and chits (``SigningKey``).
/// The two are kept apart by type, so one can never be used as the other.
public protocol ChipsKeyPurpose: Sendable {
    /// WebCrypto's `key_ops` of the exported private key.
    static var privateOperations: [String] { get }
}
public enum ConnectionPurpose: ChipsKeyPurpose { public static let privateOperations = ["sign"] }
public enum SigningPurpose: ChipsKeyPurpose { public static let privateOperations = ["sign"] }

/// The key this device logs in with: ECDSA P-521, as the current Wyseman client makes it. Its
/// public half goes to the provider with a ticket login; later logins sign the provider's
/// `/clientinfo` text with it. Kept in the `SecureStore`, exportable and importable as a JWK
/// (the seed's "connection key import/export").
public typealias ConnectionKey = ChipsKey<ConnectionPurpose>

/// The key the user's tallies and chits are signed with (separate from the connection key),
/// made when first needed; backed up as a `signkey` link (``SigningKeyBackup``).
public typealias SigningKey = ChipsKey<SigningPurpose>

/// An ECDSA P-521 key as MyCHIPs' clients make them with WebCrypto: JWK import and export,
/// signatures over SHA-384 as raw `r ‖ s` in base64url.
public struct ChipsKey<Purpose: ChipsKeyPurpose>: Sendable {
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

    /// The private JWK, for export. Whoever holds it can act as this key's owner.
    public var privateJWK: String {
        let raw = privateKey.publicKey.rawRepresentation
        return EllipticCurveJWK(crv: "P-521", x: raw.prefix(66), y: raw.suffix(66), d: privateKey.rawRepresentation, keyOps: Purpose.privateOperations).jsonText
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

    /// Whether `signature` (raw `r ‖ s`, base64url) is this key's over `message`.
    public func verifies(_ signature: String, over message: String) -> Bool {
        guard let raw = Base64URL.decode(signature), let ecdsa = try? P521.Signing.ECDSASignature(rawRepresentation: raw) else { return false }
        return privateKey.publicKey.isValidSignature(ecdsa, for: SHA384.hash(data: Data(message.utf8)))
    }
}

/// Where the client keeps its connection key and which provider and user it logs in to.
public struct ChipsKeychain: Sendable {
    static let keyItem = "mychips.connection-key"
    static let accountItem = "mychips.account"
    static let signingKeyItem = "mychips.signing-key"

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

    /// The signing key, after the user passes `gate` (the device's biometric prompt); nil when
    /// none is stored yet. Where biometrics are unavailable the key is read without a prompt:
    /// the app then asks for its own passphrase first, as MyCHIPs does.
    public func signingKey(unlockingWith gate: any BiometricGate, reason: String) async throws -> SigningKey? {
        guard let text = try await store.string(for: Self.signingKeyItem) else { return nil }
        if try Self.sealedKey(text) != nil { throw ChipsError.keyStore("the signing key is protected by a passphrase: open it with signingKey(passphrase:)") }
        if await gate.availability().isAvailable {
            guard await gate.authenticate(reason: reason) == .success else { throw ChipsError.keyStore("the signing key stays locked: \(reason) was not confirmed") }
        }
        return try SigningKey(jwk: text)
    }

    /// Where a device has no biometrics: seals the stored signing key with a passphrase (the
    /// `signkey` format: PBKDF2-SHA256, AES-256-GCM), so reading it needs the passphrase.
    public func protectSigningKey(passphrase: String) async throws {
        guard let text = try await store.string(for: Self.signingKeyItem) else { throw ChipsError.keyStore("there is no signing key to protect") }
        guard try Self.sealedKey(text) == nil else { return }
        try await store.setString(try SigningKeyBackup.seal(try SigningKey(jwk: text), passphrase: passphrase).json, for: Self.signingKeyItem)
    }

    /// True when the stored signing key is sealed with a passphrase.
    public func signingKeyNeedsPassphrase() async throws -> Bool {
        guard let text = try await store.string(for: Self.signingKeyItem) else { return false }
        return try Self.sealedKey(text) != nil
    }

    /// The signing key sealed with a passphrase (or stored plainly); nil when none is stored.
    public func signingKey(passphrase: String) async throws -> SigningKey? {
        guard let text = try await store.string(for: Self.signingKeyItem) else { return nil }
        if let sealed = try Self.sealedKey(text) { return try sealed.open(passphrase: passphrase) }
        return try SigningKey(jwk: text)
    }

    static func sealedKey(_ text: String) throws -> SigningKeyBackup? {
        guard text.contains("\"signkey\""), case .signkey(let backup) = try ChipsLink.parse(text) else { return nil }
        return backup
    }

    public func save(_ key: SigningKey) async throws { try await store.setString(key.privateJWK, for: Self.signingKeyItem) }

    /// Forgets the key and the account (signing out this device).
    public func forget() async throws {
        try await store.remove(Self.keyItem)
        try await store.remove(Self.accountItem)
    }
}

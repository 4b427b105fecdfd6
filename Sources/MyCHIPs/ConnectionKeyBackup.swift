import Foundation
import PurseFormats
import PurseKit

/// The connection key and the provider it logs in to, sealed with a passphrase as a signing key
/// backup is (PBKDF2-HMAC-SHA256, AES-256-GCM; ``SigningKeyBackup``): another device that opens
/// it logs in as this one without a new ticket. As a link `https://mychips.org/connect?s=…&i=…&d=…`
/// or as JSON `{"connect": {"s", "i", "d"}}`; the sealed text is
/// `{"key": PRIVATE_JWK, "account": {host, port, user, httpPort, secure}}`.
public struct ConnectionKeyBackup: Sendable, Equatable {
    static let kind = "connect"
    var seal: PassphraseSeal
    public var salt: [UInt8] { seal.salt }
    public var iv: [UInt8] { seal.iv }
    public var sealed: Data { seal.sealed }

    public init(salt: [UInt8], iv: [UInt8], sealed: Data) throws(ChipsError) {
        seal = try PassphraseSeal(salt: salt, iv: iv, sealed: sealed, kind: "connection key backup")
    }

    public static func seal(_ key: ConnectionKey, account: ChipsKeychain.Account, passphrase: String) throws -> ConnectionKeyBackup {
        let accountJSON = try StrictJSON.parse(Array(try JSONEncoder().encode(account)))
        let plain = JavaScriptJSON.stringify(.object(["key": .string(key.privateJWK), "account": accountJSON]))
        return ConnectionKeyBackup(seal: try PassphraseSeal.seal(Data(plain.utf8), passphrase: passphrase, kind: "connection key backup"))
    }

    /// The key and its provider, or ``ChipsError/keyStore(_:)`` when the passphrase does not open it.
    public func open(passphrase: String) throws(ChipsError) -> (key: ConnectionKey, account: ChipsKeychain.Account) {
        guard let plain = seal.open(passphrase: passphrase) else { throw .keyStore("the passphrase does not open this connection key") }
        guard let value = try? StrictJSON.parse(Array(plain)), let jwk = value["key"]?.stringValue, let accountValue = value["account"],
              let account = try? JSONDecoder().decode(ChipsKeychain.Account.self, from: Data(JavaScriptJSON.stringify(accountValue).utf8)) else {
            throw .invalidLink("the connection key backup does not hold a key and its provider")
        }
        return (try ConnectionKey(jwk: jwk), account)
    }

    public var link: String { seal.link(kind: Self.kind) }

    public var json: String { seal.json(kind: Self.kind) }

    private init(seal: PassphraseSeal) { self.seal = seal }

    init(fields: JSONValue) throws(ChipsError) {
        seal = try PassphraseSeal(fields: fields, kind: Self.kind)
    }
}

extension ChipsKeychain {
    /// The connection key and its provider sealed with `passphrase`, after the user passes
    /// `gate` (where the device has biometrics): the key logs in as this user, so it is read
    /// only for the user.
    public func exportConnection(passphrase: String, unlockingWith gate: any BiometricGate, reason: String) async throws -> ConnectionKeyBackup {
        guard let key = try await key(), let account = try await account() else { throw ChipsError.notLoggedIn }
        if await gate.availability().isAvailable {
            guard await gate.authenticate(reason: reason) == .success else { throw ChipsError.keyStore("the connection key stays locked: \(reason) was not confirmed") }
        }
        return try ConnectionKeyBackup.seal(key, account: account, passphrase: passphrase)
    }

    /// Opens a connection key backup and stores its key and provider: this device then logs in
    /// as the exporting one did.
    public func importConnection(_ backup: ConnectionKeyBackup, passphrase: String) async throws -> Account {
        let (key, account) = try backup.open(passphrase: passphrase)
        try await save(key)
        try await save(account)
        return account
    }
}

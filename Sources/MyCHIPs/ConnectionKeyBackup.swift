import Crypto
import Foundation
import PurseFormats
import PurseKit

/// The connection key and the provider it logs in to, sealed with a passphrase as a signing key
/// backup is (PBKDF2-HMAC-SHA256, AES-256-GCM; ``SigningKeyBackup``): another device that opens
/// it logs in as this one without a new ticket. As a link `https://mychips.org/connect?s=…&i=…&d=…`
/// or as JSON `{"connect": {"s", "i", "d"}}`; the sealed text is
/// `{"key": PRIVATE_JWK, "account": {host, port, user, httpPort, secure}}`.
public struct ConnectionKeyBackup: Sendable, Equatable {
    public var salt: [UInt8]
    public var iv: [UInt8]
    public var sealed: Data

    public init(salt: [UInt8], iv: [UInt8], sealed: Data) throws(ChipsError) {
        guard salt.count == 8, iv.count == 12, sealed.count > 16 else { throw .invalidLink("a connection key backup needs an 8-byte salt, a 12-byte IV and sealed data") }
        self.salt = salt
        self.iv = iv
        self.sealed = Data(sealed)
    }

    public static func seal(_ key: ConnectionKey, account: ChipsKeychain.Account, passphrase: String) throws -> ConnectionKeyBackup {
        guard !passphrase.isEmpty else { throw ChipsError.keyStore("a connection key backup needs a passphrase") }
        let salt = (0..<8).map { _ in UInt8.random(in: 0...255) }
        let iv = (0..<12).map { _ in UInt8.random(in: 0...255) }
        let accountJSON = try StrictJSON.parse(Array(try JSONEncoder().encode(account)))
        let plain = JavaScriptJSON.stringify(.object(["key": .string(key.privateJWK), "account": accountJSON]))
        let box = try AES.GCM.seal(Data(plain.utf8), using: try SigningKeyBackup.derive(passphrase, salt: salt), nonce: try AES.GCM.Nonce(data: iv))
        return try ConnectionKeyBackup(salt: salt, iv: iv, sealed: box.ciphertext + box.tag)
    }

    /// The key and its provider, or ``ChipsError/keyStore(_:)`` when the passphrase does not open it.
    public func open(passphrase: String) throws(ChipsError) -> (key: ConnectionKey, account: ChipsKeychain.Account) {
        let plain: Data
        do {
            let box = try AES.GCM.SealedBox(nonce: try AES.GCM.Nonce(data: iv), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            plain = try AES.GCM.open(box, using: try SigningKeyBackup.derive(passphrase, salt: salt))
        } catch {
            throw .keyStore("the passphrase does not open this connection key")
        }
        guard let value = try? StrictJSON.parse(Array(plain)), let jwk = value["key"]?.stringValue, let accountValue = value["account"],
              let account = try? JSONDecoder().decode(ChipsKeychain.Account.self, from: Data(JavaScriptJSON.stringify(accountValue).utf8)) else {
            throw .invalidLink("the connection key backup does not hold a key and its provider")
        }
        return (try ConnectionKey(jwk: jwk), account)
    }

    public var link: String {
        "https://mychips.org/connect?s=\(Hex.encode(salt))&i=\(Hex.encode(iv))&d=\(URIComponent.encode(sealed.base64EncodedString()))"
    }

    public var json: String {
        JavaScriptJSON.stringify(["connect": ["s": .string(Hex.encode(salt)), "i": .string(Hex.encode(iv)), "d": .string(sealed.base64EncodedString())]])
    }

    init(fields: JSONValue) throws(ChipsError) {
        let body = fields["connect"] ?? fields
        guard let s = body["s"]?.stringValue.flatMap(Hex.decode), let i = body["i"]?.stringValue.flatMap(Hex.decode),
              let d = body["d"]?.stringValue.flatMap({ Data(base64Encoded: $0) }) else {
            throw .invalidLink("a connection key backup needs s (hex salt), i (hex IV) and d (base64 data)")
        }
        try self.init(salt: s, iv: i, sealed: d)
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

import Foundation
import PurseFormats

/// A signing key encrypted with a passphrase, as MyCHIPs exports it (``PassphraseSeal``: an 8-byte
/// salt and a 12-byte IV in hex, PBKDF2-HMAC-SHA256 with 10,000 iterations to an AES-256-GCM key)
/// over the private JWK's JSON text. As a link `https://mychips.org/signkey?s=…&i=…&d=…` (a QR of it
/// carries it between devices) or as JSON `{"signkey": {"s", "i", "d"}}`.
public struct SigningKeyBackup: Sendable, Equatable {
    static let kind = "signkey"
    public static let rounds = PassphraseSeal.rounds
    var seal: PassphraseSeal
    public var salt: [UInt8] {
        get { seal.salt }
        set { seal.salt = newValue }
    }
    public var iv: [UInt8] {
        get { seal.iv }
        set { seal.iv = newValue }
    }
    public var sealed: Data {
        get { seal.sealed }
        set { seal.sealed = newValue }
    }

    public init(salt: [UInt8], iv: [UInt8], sealed: Data) throws(ChipsError) {
        seal = try PassphraseSeal(salt: salt, iv: iv, sealed: sealed, kind: Self.kind)
    }

    /// Encrypts `key` with `passphrase`; `salt` and `iv` are random unless given (tests).
    public static func seal(_ key: SigningKey, passphrase: String, salt: [UInt8]? = nil, iv: [UInt8]? = nil) throws -> SigningKeyBackup {
        SigningKeyBackup(seal: try PassphraseSeal.seal(Data(key.privateJWK.utf8), passphrase: passphrase, kind: "signing key backup", salt: salt, iv: iv))
    }

    /// The key, or ``ChipsError/keyStore(_:)`` when the passphrase does not open it.
    public func open(passphrase: String) throws(ChipsError) -> SigningKey {
        guard let plain = seal.open(passphrase: passphrase) else { throw .keyStore("the passphrase does not open this signing key") }
        return try SigningKey(jwk: String(decoding: plain, as: UTF8.self))
    }

    /// `https://mychips.org/signkey?s=HEX&i=HEX&d=BASE64` (the base64 percent-encoded).
    public var link: String { seal.link(kind: Self.kind) }

    public var json: String { seal.json(kind: Self.kind) }

    private init(seal: PassphraseSeal) { self.seal = seal }

    init(fields: JSONValue) throws(ChipsError) {
        seal = try PassphraseSeal(fields: fields, kind: Self.kind)
    }
}

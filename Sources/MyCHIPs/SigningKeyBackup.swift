import Crypto
import CryptoExtras
import Foundation
import PurseFormats

/// A signing key encrypted with a passphrase, as MyCHIPs exports it: an 8-byte salt and a 12-byte
/// IV (hex), PBKDF2-HMAC-SHA256 with 10,000 iterations to an AES-256-GCM key, and the private
/// JWK's JSON text sealed with it (`d`: base64 of ciphertext ‖ tag). As a link
/// `https://mychips.org/signkey?s=…&i=…&d=…` (a QR of it carries it between devices) or as JSON
/// `{"signkey": {"s", "i", "d"}}`.
public struct SigningKeyBackup: Sendable, Equatable {
    public static let rounds = 10_000
    public var salt: [UInt8]
    public var iv: [UInt8]
    public var sealed: Data

    public init(salt: [UInt8], iv: [UInt8], sealed: Data) throws(ChipsError) {
        guard salt.count == 8, iv.count == 12, sealed.count > 16 else { throw .invalidLink("a signkey needs an 8-byte salt, a 12-byte IV and sealed data") }
        self.salt = salt
        self.iv = iv
        self.sealed = Data(sealed)  // indices from 0, whatever slice it came from
    }

    /// Encrypts `key` with `passphrase`; `salt` and `iv` are random unless given (tests).
    public static func seal(_ key: SigningKey, passphrase: String, salt: [UInt8]? = nil, iv: [UInt8]? = nil) throws -> SigningKeyBackup {
        guard !passphrase.isEmpty else { throw ChipsError.keyStore("a signing key backup needs a passphrase") }
        let salt = salt ?? (0..<8).map { _ in UInt8.random(in: 0...255) }
        let iv = iv ?? (0..<12).map { _ in UInt8.random(in: 0...255) }
        let box = try AES.GCM.seal(Data(key.privateJWK.utf8), using: try derive(passphrase, salt: salt), nonce: try AES.GCM.Nonce(data: iv))
        return try SigningKeyBackup(salt: salt, iv: iv, sealed: box.ciphertext + box.tag)
    }

    /// The key, or ``ChipsError/keyStore(_:)`` when the passphrase does not open it.
    public func open(passphrase: String) throws(ChipsError) -> SigningKey {
        let plain: Data
        do {
            let box = try AES.GCM.SealedBox(nonce: try AES.GCM.Nonce(data: iv), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16))
            plain = try AES.GCM.open(box, using: try Self.derive(passphrase, salt: salt))
        } catch {
            throw .keyStore("the passphrase does not open this signing key")
        }
        return try SigningKey(jwk: String(decoding: plain, as: UTF8.self))
    }

    static func derive(_ passphrase: String, salt: [UInt8]) throws -> SymmetricKey {
        try KDF.Insecure.PBKDF2.deriveKey(from: Data(passphrase.utf8), salt: salt, using: .sha256, outputByteCount: 32, unsafeUncheckedRounds: rounds)
    }

    /// `https://mychips.org/signkey?s=HEX&i=HEX&d=BASE64` (the base64 percent-encoded).
    public var link: String {
        "https://mychips.org/signkey?s=\(Hex.encode(salt))&i=\(Hex.encode(iv))&d=\(URIComponent.encode(sealed.base64EncodedString()))"
    }

    public var json: String {
        JavaScriptJSON.stringify(["signkey": ["s": .string(Hex.encode(salt)), "i": .string(Hex.encode(iv)), "d": .string(sealed.base64EncodedString())]])
    }

    init(fields: JSONValue) throws(ChipsError) {
        let body = fields["signkey"] ?? fields
        guard let s = body["s"]?.stringValue.flatMap(Hex.decode), let i = body["i"]?.stringValue.flatMap(Hex.decode),
              let d = body["d"]?.stringValue.flatMap({ Data(base64Encoded: $0) }) else {
            throw .invalidLink("a signkey needs s (hex salt), i (hex IV) and d (base64 data)")
        }
        try self.init(salt: s, iv: i, sealed: d)
    }
}

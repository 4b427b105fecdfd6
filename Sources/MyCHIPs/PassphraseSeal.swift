import Crypto
import CryptoExtras
import Foundation
import PurseFormats

/// Data sealed with a passphrase as MyCHIPs seals a signing key: an 8-byte salt and a 12-byte IV,
/// PBKDF2-HMAC-SHA256 with 10,000 iterations to an AES-256-GCM key, and the text sealed with it
/// (`d`: base64 of ciphertext ‖ tag); as `https://mychips.org/KIND?s=HEX&i=HEX&d=BASE64` or
/// `{"KIND": {"s", "i", "d"}}`. The signing key and connection key backups are each one of these.
struct PassphraseSeal: Sendable, Equatable {
    static let rounds = 10_000
    var salt: [UInt8]
    var iv: [UInt8]
    var sealed: Data

    init(salt: [UInt8], iv: [UInt8], sealed: Data, kind: String) throws(ChipsError) {
        guard salt.count == 8, iv.count == 12, sealed.count > 16 else { throw .invalidLink("a \(kind) needs an 8-byte salt, a 12-byte IV and sealed data") }
        self.salt = salt
        self.iv = iv
        self.sealed = Data(sealed)  // indices from 0, whatever slice it came from
    }

    static func seal(_ plain: Data, passphrase: String, kind: String, salt: [UInt8]? = nil, iv: [UInt8]? = nil) throws -> PassphraseSeal {
        guard !passphrase.isEmpty else { throw ChipsError.keyStore("a \(kind) needs a passphrase") }
        let salt = salt ?? (0..<8).map { _ in UInt8.random(in: 0...255) }
        let iv = iv ?? (0..<12).map { _ in UInt8.random(in: 0...255) }
        let box = try AES.GCM.seal(plain, using: try derive(passphrase, salt: salt), nonce: try AES.GCM.Nonce(data: iv))
        return try PassphraseSeal(salt: salt, iv: iv, sealed: box.ciphertext + box.tag, kind: kind)
    }

    /// The plain text, or nil when the passphrase does not open it.
    func open(passphrase: String) -> Data? {
        guard let box = try? AES.GCM.SealedBox(nonce: try AES.GCM.Nonce(data: iv), ciphertext: sealed.dropLast(16), tag: sealed.suffix(16)),
              let key = try? Self.derive(passphrase, salt: salt) else { return nil }
        return try? AES.GCM.open(box, using: key)
    }

    static func derive(_ passphrase: String, salt: [UInt8]) throws -> SymmetricKey {
        try KDF.Insecure.PBKDF2.deriveKey(from: Data(passphrase.utf8), salt: salt, using: .sha256, outputByteCount: 32, unsafeUncheckedRounds: rounds)
    }

    func link(kind: String) -> String {
        "https://mychips.org/\(kind)?s=\(Hex.encode(salt))&i=\(Hex.encode(iv))&d=\(URIComponent.encode(sealed.base64EncodedString()))"
    }

    func json(kind: String) -> String {
        JavaScriptJSON.stringify([kind: ["s": .string(Hex.encode(salt)), "i": .string(Hex.encode(iv)), "d": .string(sealed.base64EncodedString())]])
    }

    init(fields: JSONValue, kind: String) throws(ChipsError) {
        let body = fields[kind] ?? fields
        guard let s = body["s"]?.stringValue.flatMap(Hex.decode), let i = body["i"]?.stringValue.flatMap(Hex.decode),
              let d = body["d"]?.stringValue.flatMap({ Data(base64Encoded: $0) }) else {
            throw .invalidLink("a \(kind) needs s (hex salt), i (hex IV) and d (base64 data)")
        }
        try self.init(salt: s, iv: i, sealed: d, kind: kind)
    }
}

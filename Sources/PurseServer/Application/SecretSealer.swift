import Crypto
import Foundation
import PurseFormats

/// Seals secrets the server keeps in its database only to use them again — a merchant's webhook
/// signing secret, a merchant's HS256 issuer secret — so that a copy of the database (a backup,
/// a dump, a stolen file) does not hold them in clear.
///
/// AES-256-GCM under the key `PURSE_SEAL_KEY`, or the file `PURSE_SEAL_KEY_FILE` names (replicas
/// on separate machines set the same one), or, when neither is set, `DATA_DIR/secrets/seal.key`
/// (0600, made once). That last one is for development: whoever copies the data directory then
/// holds both the sealed values and their key, so production keeps the key outside it (a warning
/// at start-up says so, ``isInsideDataDirectory(_:)``). A sealed value is
/// `sealed.v1.` and the base64url of nonce, ciphertext and tag; the column's name is the
/// authenticated data, so a sealed value moved to another column does not open. A value without
/// the prefix is a row written before sealing and is read as it is.
public struct SecretSealer: Sendable {
    let key: SymmetricKey

    static let prefix = "sealed.v1."

    public init(key: [UInt8]) {
        self.key = SymmetricKey(data: SHA256.hash(data: Data("purse secret sealer v1".utf8) + key))
    }

    /// The key in force for `configuration`.
    public init(configuration: PurseConfiguration) throws {
        if let configured = configuration.sealKey {
            guard configured.utf8.count >= 32 else { throw ConfigurationError("PURSE_SEAL_KEY must be at least 32 bytes") }
            self.init(key: Array(configured.utf8))
        } else if let path = configuration.sealKeyFile {
            guard let data = FileManager.default.contents(atPath: path) else { throw ConfigurationError("PURSE_SEAL_KEY_FILE: cannot read \(path)") }
            // A trailing line break (an editor's, `echo`'s) is not part of the key.
            var bytes = Array(data)
            while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
            guard bytes.count >= 32 else { throw ConfigurationError("PURSE_SEAL_KEY_FILE must hold at least 32 bytes") }
            self.init(key: bytes)
        } else {
            self.init(key: try ServerSecrets(dataDirectory: configuration.dataDirectory).secret(named: "seal.key"))
        }
    }

    /// Whether the key in force for `configuration` lies inside its data directory, so that a copy
    /// of that directory opens every sealed secret: no key set, or a key file under `DATA_DIR`.
    public static func isInsideDataDirectory(_ configuration: PurseConfiguration) -> Bool {
        if configuration.sealKey != nil { return false }
        guard let file = configuration.sealKeyFile else { return true }
        let directory = URL(fileURLWithPath: configuration.dataDirectory).standardizedFileURL.resolvingSymlinksInPath().path
        let key = URL(fileURLWithPath: file).standardizedFileURL.resolvingSymlinksInPath().path
        return key == directory || key.hasPrefix(directory.hasSuffix("/") ? directory : directory + "/")
    }

    /// `secret` sealed for `column`.
    public func seal(_ secret: String, column: String) throws -> String {
        let box = try AES.GCM.seal(Data(secret.utf8), using: key, authenticating: Data(column.utf8))
        guard let combined = box.combined else { throw SealError() }
        return Self.prefix + Base64URL.encode(combined)
    }

    /// The secret in `stored`, as ``seal(_:column:)`` made it for `column`.
    /// - Throws: when it was sealed under another key or for another column, or altered.
    public func open(_ stored: String, column: String) throws -> String {
        guard stored.hasPrefix(Self.prefix) else { return stored }
        guard let combined = Base64URL.decode(String(stored.dropFirst(Self.prefix.count))),
              let box = try? AES.GCM.SealedBox(combined: combined),
              let plain = try? AES.GCM.open(box, using: key, authenticating: Data(column.utf8)) else { throw SealError() }
        return String(decoding: plain, as: UTF8.self)
    }

    public struct SealError: Error, CustomStringConvertible {
        public var description: String { "a sealed secret does not open with this server's seal key (PURSE_SEAL_KEY or DATA_DIR/secrets/seal.key)" }
    }
}

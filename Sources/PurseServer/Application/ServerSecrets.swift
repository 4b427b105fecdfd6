import Crypto
import HTTPTypes
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
import PurseDatabase
#endif

/// Server-side secrets that must survive restarts but may be generated on a development machine.
///
/// In development a missing secret is generated once and kept in `DATA_DIR/secrets/NAME`
/// (mode 0600, directory 0700). In production it must be configured explicitly.
public struct ServerSecrets: Sendable {
    let directory: URL

    public init(dataDirectory: String) {
        self.directory = URL(fileURLWithPath: dataDirectory).appendingPathComponent("secrets")
    }

    /// Returns the secret `name`, creating 32 random bytes the first time.
    public func secret(named name: String) throws -> [UInt8] {
        let file = directory.appendingPathComponent(name)
        if let data = try? Data(contentsOf: file), data.count >= 32 { return [UInt8](data) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let bytes = RandomID.bytes(32)
        // O_EXCL: when two processes start at once, one writes and the other reads what it wrote.
        let fd = open(file.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            if let data = try? Data(contentsOf: file), data.count >= 32 { return [UInt8](data) }
            throw ConfigurationError("cannot create \(file.path) (errno \(errno))")
        }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
        close(fd)
        guard written == bytes.count else { throw ConfigurationError("cannot write \(file.path)") }
        return bytes
    }
}

extension ServerSecrets {
    /// Writes `text` to `DATA_DIR/secrets/NAME` (mode 0600), replacing what was there, and returns
    /// the file's path: for development credentials a person needs (a sandbox merchant's keys),
    /// which are handed over by file, never by log.
    public func store(_ text: String, named name: String) throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let file = directory.appendingPathComponent(name)
        let fd = open(file.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else { throw ConfigurationError("cannot create \(file.path) (errno \(errno))") }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
        fchmod(fd, 0o600)
        close(fd)
        guard written == bytes.count else { throw ConfigurationError("cannot write \(file.path)") }
        return file.path
    }

    /// A P-256 signing key made from the secret `name` (hashed again until it is a valid scalar,
    /// which the first try nearly always is): the same key on every start of this data directory.
    public func p256Key(named name: String) throws -> P256.Signing.PrivateKey {
        var material = Data(SHA256.hash(data: try secret(named: name)))
        while true {
            if let key = try? P256.Signing.PrivateKey(rawRepresentation: material) { return key }
            material = Data(SHA256.hash(data: material))
        }
    }
}

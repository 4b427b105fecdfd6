import HTTPTypes
import Foundation

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
        FileManager.default.createFile(atPath: file.path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
        return bytes
    }
}

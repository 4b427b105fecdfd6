import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A secure store for Linux and the CLI: one AES-256-GCM sealed file per item.
///
/// The 256-bit key sits in `store.key` (mode 0600) in a 0700 directory. Items are files named by
/// the SHA-256 of their key; the key name is the GCM associated data, so a file copied over
/// another item's name fails to open instead of returning the wrong secret.
public actor EncryptedFileSecureStore: SecureStore {
    public nonisolated let directory: URL
    private var key: SymmetricKey?

    /// - Parameter directory: Created (0700) on first write.
    public init(directory: URL) {
        self.directory = directory
    }

    /// `$PURSE_HOME` or `~/.purse`.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let home = environment["PURSE_HOME"], !home.isEmpty { return URL(fileURLWithPath: home) }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".purse")
    }

    public func data(for name: String) throws -> Data? {
        let file = itemURL(name)
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        let sealed = try Data(contentsOf: file)
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            return try AES.GCM.open(box, using: try storeKey(create: false), authenticating: Data(name.utf8))
        } catch {
            throw SecureStoreError("item '\(name)' cannot be decrypted (wrong key or tampered file)")
        }
    }

    public func set(_ data: Data, for name: String) throws {
        let key = try storeKey(create: true)
        let box = try AES.GCM.seal(data, using: key, authenticating: Data(name.utf8))
        guard let combined = box.combined else { throw SecureStoreError("sealing failed") }
        try write(combined, to: itemURL(name))
    }

    public func remove(_ name: String) throws {
        let file = itemURL(name)
        if FileManager.default.fileExists(atPath: file.path) { try FileManager.default.removeItem(at: file) }
    }

    private func itemURL(_ name: String) -> URL {
        let digest = SHA256.hash(data: Data(name.utf8)).map { String(format: "%02x", $0) }.joined()
        return directory.appendingPathComponent("item-\(digest)")
    }

    private func storeKey(create: Bool) throws -> SymmetricKey {
        if let key { return key }
        let file = directory.appendingPathComponent("store.key")
        if let bytes = try? Data(contentsOf: file) {
            guard bytes.count == 32 else { throw SecureStoreError("store.key is corrupt") }
            let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
            if let mode = attributes[.posixPermissions] as? NSNumber, mode.intValue & 0o077 != 0 {
                throw SecureStoreError("\(file.path) is readable by other users; run chmod 600 on it")
            }
            let loaded = SymmetricKey(data: bytes)
            key = loaded
            return loaded
        }
        guard create else { throw SecureStoreError("no store key") }
        let made = SymmetricKey(size: .bits256)
        try write(made.withUnsafeBytes { Data($0) }, to: file)
        key = made
        return made
    }

    private func write(_ data: Data, to file: URL) throws {
        let manager = FileManager.default
        try manager.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = directory.appendingPathComponent(".tmp-\(UUID().uuidString)")
        // open(2) with mode 0600 from the start: the secret is never readable by others, not even
        // briefly, and nothing is left behind in /tmp (Foundation's atomic writes leave a directory there).
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw SecureStoreError("cannot write \(file.path) (errno \(errno))") }
        let written = data.withUnsafeBytes { buffer in buffer.isEmpty ? 0 : Glibc_write(fd, buffer.baseAddress!, buffer.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced else {
            unlink(temporary.path)
            throw SecureStoreError("cannot write \(file.path)")
        }
        // rename(2) replaces atomically: a reader sees the old item or the new one, never half.
        guard rename(temporary.path, file.path) == 0 else {
            unlink(temporary.path)
            throw SecureStoreError("cannot replace \(file.path) (errno \(errno))")
        }
    }
}

#if canImport(Glibc)
private func Glibc_write(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int { Glibc.write(fd, pointer, count) }
#elseif canImport(Darwin)
private func Glibc_write(_ fd: Int32, _ pointer: UnsafeRawPointer, _ count: Int) -> Int { Darwin.write(fd, pointer, count) }
#endif

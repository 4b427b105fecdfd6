import Foundation
import PurseDatabase
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The data directory and the SQLite database in it hold sessions' secrets, merchants' keys and
/// every user's money: readable by the server's user only, whatever the umask.
enum DataDirectory {
    /// Makes the data directory 0700 and the SQLite database file 0600 (created empty when new,
    /// before SQLite opens it: its journal and WAL files take the database file's mode).
    static func secure(_ configuration: PurseConfiguration) throws {
        let directory = configuration.dataDirectory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try restrict(directory, to: 0o700)
        guard let path = Database.sqliteFilePath(configuration.effectiveDatabaseURL) else { return }
        let parent = (path as NSString).deletingLastPathComponent
        if !parent.isEmpty { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) }
        let fd = open(path, O_WRONLY | O_CREAT, 0o600)
        guard fd >= 0 else { throw ConfigurationError("cannot open \(path) (errno \(errno))") }
        close(fd)
        for file in [path, path + "-wal", path + "-shm", path + "-journal"] where FileManager.default.fileExists(atPath: file) {
            try restrict(file, to: 0o600)
        }
    }

    static func restrict(_ path: String, to mode: mode_t) throws {
        guard chmod(path, mode) == 0 else { throw ConfigurationError("cannot restrict \(path) to mode \(String(mode, radix: 8)) (errno \(errno))") }
    }
}

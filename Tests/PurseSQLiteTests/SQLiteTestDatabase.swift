import Foundation
import Logging
import PurseDatabase
@testable import PurseSQLite
import PurseTestSupport

/// Opens the SQLite database at `path` (nil: in memory) as the server does: the process-wide
/// hooks of `PURSE_SQLITE_TUNING` (default all) installed first, the per-database ones as asked.
func openSQLite(_ path: String?, tuning: SQLiteTuning = TestEngines.sqliteTuning, walRestarts: WALRestartPolicy = WALRestartPolicy()) async throws -> Database {
    var options = SQLiteOptions(tuning: tuning.installProcessHooks())
    options.walRestarts = walRestarts
    return Database(driver: try await SQLiteDriver.open(path: path, options: options, logger: Logger(label: "test")))
}

/// One raw connection, after the process-wide hooks of `PURSE_SQLITE_TUNING` are installed (so
/// that a test opening SQLite first does not leave the process without them).
func sqliteConnection(path: String?, combiningWALWrites: Bool = TestEngines.sqliteTuning.contains(.combinedWALWrites)) throws -> SQLiteConnectionHandle {
    TestEngines.sqliteTuning.installProcessHooks()
    return try SQLiteConnectionHandle(path: path, combiningWALWrites: combiningWALWrites)
}

extension Database {
    /// The SQLite engine's own counters.
    var sqliteStatistics: SQLiteStatistics { (driver as! SQLiteDriver).sqliteStatistics }
}

/// Runs `body` against a fresh SQLite database file in a temporary directory, then shuts the
/// database down and removes the directory (also when `body` throws).
func withSQLiteFile(walRestarts: WALRestartPolicy = WALRestartPolicy(), _ body: (Database) async throws -> Void) async throws {
    try await withSQLiteFile(walRestarts: walRestarts) { database, _ in try await body(database) }
}

/// ``withSQLiteFile(_:)`` for tests that look at the file itself: `body` also gets its path (its
/// directory is removed afterwards, so files made beside it need no cleaning up).
func withSQLiteFile(walRestarts: WALRestartPolicy = WALRestartPolicy(), _ body: (Database, _ path: String) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-sqlite-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appendingPathComponent("test.sqlite").path
    let database = try await openSQLite(path, walRestarts: walRestarts)
    do {
        try await body(database, path)
    } catch {
        await database.shutdown()
        throw error
    }
    await database.shutdown()
}

/// Runs `body` with a fresh directory under the system's temporary directory (named `prefix-<uuid>`),
/// removed with everything in it afterwards, also when `body` throws.
func withTemporaryDirectory<T>(_ prefix: String, _ body: (URL) throws -> T) throws -> T {
    let directory = try makeTemporaryDirectory(prefix)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try body(directory)
}

/// ``withTemporaryDirectory(_:_:)`` for an asynchronous `body`.
func withTemporaryDirectory<T>(_ prefix: String, _ body: (URL) async throws -> T) async throws -> T {
    let directory = try makeTemporaryDirectory(prefix)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

private func makeTemporaryDirectory(_ prefix: String) throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

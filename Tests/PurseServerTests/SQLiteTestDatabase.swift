import Foundation
import Logging
@testable import PurseServer

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
    let database = try await Database.open(url: path, walRestarts: walRestarts, logger: Logger(label: "test"))
    do {
        try await body(database, path)
    } catch {
        await database.shutdown()
        throw error
    }
    await database.shutdown()
}

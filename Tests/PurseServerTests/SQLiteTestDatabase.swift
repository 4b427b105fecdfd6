import Foundation
import Logging
import PurseServer

/// Runs `body` against a fresh SQLite database file in a temporary directory, then shuts the
/// database down and removes the directory (also when `body` throws).
func withSQLiteFile(_ body: (Database) async throws -> Void) async throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-sqlite-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: directory) }
    let database = try await Database.open(url: directory.appendingPathComponent("test.sqlite").path, logger: Logger(label: "test"))
    do {
        try await body(database)
    } catch {
        await database.shutdown()
        throw error
    }
    await database.shutdown()
}

import Foundation
import Logging
import NIOCore
import NIOPosix
import SQLKit
import SQLiteKit
import SQLiteNIO

/// SQLite behind one connection, used by one task at a time.
///
/// A connection shared between tasks would let one task's statement land inside another's
/// transaction, so every session holds ``AsyncLock`` for its whole duration. The file is in WAL
/// mode with a busy timeout, so other processes (the CLI, a backup) can still read it.
final class SQLiteDriver: DatabaseDriver {
    let engine = DatabaseEngine.sqlite
    private let connection: SQLiteConnection
    private let database: any SQLDatabase
    private let lock = AsyncLock()

    private init(connection: SQLiteConnection, logger: Logger) {
        self.connection = connection
        self.database = connection.sql(queryLogLevel: .trace)
    }

    static func open(path: String?, logger: Logger) async throws -> SQLiteDriver {
        let storage: SQLiteConnection.Storage
        if let path {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            storage = .file(path: path)
        } else {
            storage = .memory
        }
        let connection = try await SQLiteConnection.open(storage: storage, logger: logger)
        let driver = SQLiteDriver(connection: connection, logger: logger)
        let db = driver.database
        if path != nil {
            try await db.raw("PRAGMA journal_mode = WAL").run()
            try await db.raw("PRAGMA synchronous = NORMAL").run()
        }
        try await db.raw("PRAGMA foreign_keys = ON").run()
        try await db.raw("PRAGMA busy_timeout = 5000").run()
        return driver
    }

    /// Set while a task holds the connection: a nested `read`/`transaction` from the same task
    /// would wait for itself forever, so it is refused instead (pass the `db` you were given).
    @TaskLocal static var holdsSession = false

    func withSession<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        guard !Self.holdsSession else { throw NestedSessionError() }
        return try await lock.withLock {
            try await Self.$holdsSession.withValue(true) { try await body(database) }
        }
    }

    func shutdown() async {
        await lock.withLock { try? await connection.close() }
    }
}

/// A database session was opened inside another one on the same task.
struct NestedSessionError: Error, CustomStringConvertible {
    var description: String { "nested database session: use the db of the enclosing transaction" }
}

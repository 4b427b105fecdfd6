import Foundation
import Logging
import SQLKit

/// Which SQL engine a ``Database`` runs on.
public enum DatabaseEngine: String, Sendable {
    case sqlite
    case postgres
}

/// The one place where SQLite and PostgreSQL must be told apart.
///
/// Everything else — schema, queries, upserts (`ON CONFLICT`), `RETURNING` — is written once.
public struct SQLDialectDifferences: Sendable {
    public let engine: DatabaseEngine

    /// Appended to a `SELECT` that claims rows for exclusive work (job claiming).
    /// PostgreSQL locks the rows and lets other replicas skip them; SQLite has already taken
    /// the database write lock with `BEGIN IMMEDIATE`, so it needs nothing here.
    public var claimRowsClause: String {
        switch engine {
        case .postgres: " FOR UPDATE SKIP LOCKED"
        case .sqlite: ""
        }
    }

    /// Appended to a `SELECT` whose rows the transaction is about to update (read-modify-write).
    public var lockRowsClause: String {
        switch engine {
        case .postgres: " FOR UPDATE"
        case .sqlite: ""
        }
    }

    /// The statement that opens a write transaction.
    var beginWriteTransaction: String {
        switch engine {
        case .postgres: "BEGIN"
        case .sqlite: "BEGIN IMMEDIATE"
        }
    }

    /// Serialises concurrent migration runs of several replicas.
    var migrationLock: String? {
        switch engine {
        case .postgres: "SELECT pg_advisory_xact_lock(7305307)"
        case .sqlite: nil
        }
    }
}

/// A database driver: hands out a session for a closure and runs write transactions.
protocol DatabaseDriver: Sendable {
    var engine: DatabaseEngine { get }
    func withSession<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T
    /// Housekeeping that must not run inside requests (SQLite: WAL checkpoints). Called
    /// periodically by the server while it runs.
    func maintain() async throws
    func shutdown() async
}

/// The service's database: SQLite by default, PostgreSQL when a `postgres://` URL is configured.
///
/// Use ``read(_:)`` for single statements and ``transaction(_:)`` for anything that writes more
/// than one row: the closure's statements commit together or not at all.
public final class Database: Sendable {
    public let engine: DatabaseEngine
    public var dialect: SQLDialectDifferences { SQLDialectDifferences(engine: engine) }
    let driver: any DatabaseDriver

    init(driver: any DatabaseDriver) {
        self.driver = driver
        self.engine = driver.engine
    }

    /// Opens the database named by `url` (`sqlite:///path`, a plain path, `sqlite::memory:`,
    /// or `postgres://user:pass@host:port/db`).
    public static func open(url: String, logger: Logger) async throws -> Database {
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return Database(driver: try PostgresDriver(url: url, logger: logger))
        }
        let path: String?
        if url == "sqlite::memory:" || url == ":memory:" {
            path = nil
        } else if url.hasPrefix("sqlite://") {
            path = String(url.dropFirst("sqlite://".count))
        } else {
            path = url
        }
        return Database(driver: try await SQLiteDriver.open(path: path, logger: logger))
    }

    /// Runs `body` with a database session, outside any explicit transaction.
    public func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await driver.withSession(body)
    }

    /// Runs `body` in a write transaction: committed when it returns, rolled back when it throws.
    public func transaction<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        let begin = dialect.beginWriteTransaction
        return try await driver.withSession { db in
            try await db.raw(SQLQueryString(begin)).run()
            do {
                let result = try await body(db)
                try await db.raw("COMMIT").run()
                return result
            } catch {
                try? await db.raw("ROLLBACK").run()
                throw error
            }
        }
    }

    /// `SELECT 1`, for health checks.
    public func ping() async throws {
        try await read { db in try await db.raw("SELECT 1 AS one").run() }
    }

    /// Runs the engine's periodic housekeeping once (see ``DatabaseMaintenance``).
    public func maintain() async throws {
        try await driver.maintain()
    }

    public func shutdown() async {
        await driver.shutdown()
    }
}

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

    init(engine: DatabaseEngine) {
        self.engine = engine
    }

    /// The differences for the engine behind a session (code that is handed a `db`, not the
    /// ``Database``).
    public init(_ db: any SQLDatabase) {
        self.engine = db.dialect.name == "postgresql" ? .postgres : .sqlite
    }

    /// Appended to a `SELECT` that claims rows for exclusive work (job claiming).
    /// PostgreSQL locks the rows and lets other replicas skip them; SQLite has already taken
    /// the database write lock with `BEGIN IMMEDIATE`, so it needs nothing here.
    public var claimRowsClause: String {
        switch engine {
        case .postgres: " FOR UPDATE SKIP LOCKED"
        case .sqlite: ""
        }
    }

    /// Appended to a `SELECT` that locks the rows the transaction is about to update, or nil
    /// where no such `SELECT` is needed: a SQLite write transaction already excludes every other
    /// writer.
    public var lockRowsClause: String? {
        switch engine {
        case .postgres: " FOR UPDATE"
        case .sqlite: nil
        }
    }

    /// True where a write transaction runs alone from its first statement to its commit (SQLite's
    /// one writer), so what it read cannot be changed by another writer before it commits.
    /// PostgreSQL runs them side by side: a row that must exist once is claimed, not looked up.
    public var writesAreSerial: Bool { engine == .sqlite }

    /// Serialises concurrent migration runs of several replicas.
    var migrationLock: String? {
        switch engine {
        case .postgres: "SELECT pg_advisory_xact_lock(7305307)"
        case .sqlite: nil
        }
    }
}

/// What the database has done since it opened, for `/metrics`.
public struct DatabaseStatistics: Sendable, Equatable {
    /// Write transactions that committed.
    public var committedTransactions = 0
    /// `COMMIT`s that carried them: fewer than the transactions when SQLite commits them in groups.
    public var commits = 0
    /// SQLite: time the one writer spent running transaction groups (bodies and `COMMIT`). Its
    /// growth per second of wall time is the writer's utilisation: near 1, writes queue behind it.
    public var writerBusySeconds = 0.0
    /// SQLite: checkpoint passes of the server's housekeeping (every 20 ms while writes commit,
    /// every 200 ms when idle, plus the paused ones below); a pass with nothing new to copy costs
    /// next to nothing.
    public var checkpoints = 0
    /// SQLite: the WAL's size, in pages, at the last checkpoint.
    public var walPages = 0
    /// SQLite: times the writer was paused so that the WAL could start again from its beginning,
    /// and how long it was held in all (from when it stopped, not from when the pause was queued).
    public var writerPauses = 0
    public var writerPausedSeconds = 0.0
    /// SQLite: restarts put off because the disk was slow to sync at the time.
    public var deferredRestarts = 0
    /// SQLite: times an idle server emptied its WAL file.
    public var walTruncations = 0

    public init() {}
}

/// What a housekeeping pass found: writes committed since the pass before (`busy`: the next
/// should come soon, while there is little to copy) or none (`idle`).
public enum MaintenancePace: Sendable, Equatable {
    case busy
    case idle
}

/// A database driver: hands out sessions for reads and runs write transactions.
protocol DatabaseDriver: Sendable {
    var engine: DatabaseEngine { get }
    func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T
    /// Housekeeping that must not run inside requests (SQLite: WAL checkpoints). Called
    /// periodically by the server while it runs.
    func maintain() async throws -> MaintenancePace
    func shutdown() async
    var statistics: DatabaseStatistics { get }
}

/// The service's database: SQLite by default, PostgreSQL when a `postgres://` URL is configured.
///
/// Use ``read(_:)`` for statements that only read and ``transaction(_:)`` for anything that
/// writes: the closure's statements commit together or not at all.
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
        try await open(url: url, walRestarts: WALRestartPolicy(), logger: logger)
    }

    /// ``open(url:logger:)`` with SQLite's WAL restarts as `walRestarts` says.
    static func open(url: String, walRestarts: WALRestartPolicy, logger: Logger) async throws -> Database {
        if url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            return Database(driver: try await PostgresDriver(url: url, logger: logger))
        }
        let path: String?
        if url == "sqlite::memory:" || url == ":memory:" {
            path = nil
        } else if url.hasPrefix("sqlite://") {
            path = String(url.dropFirst("sqlite://".count))
        } else {
            path = url
        }
        return Database(driver: try await SQLiteDriver.open(path: path, walRestarts: walRestarts, logger: logger))
    }

    /// Runs `body` with a session for reading, outside any explicit transaction. On SQLite it is
    /// one of several read-only connections that run beside the writer, so a statement that
    /// writes fails there: use ``transaction(_:)``.
    public func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await driver.read(body)
    }

    /// Runs `body` in a write transaction: committed when it returns, rolled back when it throws.
    /// It returns only once the commit is done. On SQLite the body may run on another task, as
    /// part of a group of transactions committed together (``SQLiteWriter``); it must not open
    /// another session (use the `db` it is given).
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await driver.transaction(body)
    }

    /// Transactions and commits so far.
    public var statistics: DatabaseStatistics { driver.statistics }

    /// `SELECT 1`, for health checks.
    public func ping() async throws {
        try await read { db in try await db.raw("SELECT 1 AS one").run() }
    }

    /// Runs the engine's periodic housekeeping once (see ``DatabaseMaintenance``).
    /// - Returns: Whether writes committed since the previous pass, so the next should come soon.
    @discardableResult
    public func maintain() async throws -> MaintenancePace {
        try await driver.maintain()
    }

    public func shutdown() async {
        await driver.shutdown()
    }
}

/// The database was shut down.
struct DatabaseClosedError: Error, CustomStringConvertible {
    var description: String { "the database is closed" }
}

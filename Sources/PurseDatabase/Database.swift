import SQLKit

/// The service's database, over one ``DatabaseDriver``: SQLite by default, PostgreSQL when a
/// `postgres://` URL is configured (`PurseServer`'s `Database.open(url:options:logger:)`).
///
/// Use ``read(_:)`` for statements that only read and ``transaction(_:)`` for anything that
/// writes: the closure's statements commit together or not at all.
public final class Database: Sendable {
    public let engine: DatabaseEngine
    public var dialect: SQLDialectDifferences { SQLDialectDifferences(engine: engine) }
    /// The engine itself, for what only it offers (SQLite's WAL counters, say).
    public let driver: any DatabaseDriver

    public init(driver: any DatabaseDriver) {
        self.driver = driver
        self.engine = driver.engine
    }

    /// Runs `body` with a session for reading, outside any explicit transaction. On SQLite it is
    /// one of several read-only connections that run beside the writer, so a statement that
    /// writes fails there: use ``transaction(_:)``.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any DatabaseSession) async throws -> T) async throws -> T {
        try await driver.read(body)
    }

    /// Runs `body` in a write transaction: committed when it returns, rolled back when it throws.
    /// It returns only once the commit is done. On SQLite the body may run on another task, as
    /// part of a group of transactions committed together; it must not open another session (use
    /// the `db` it is given).
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any DatabaseSession) async throws -> T) async throws -> T {
        try await driver.transaction(body)
    }

    /// Transactions and commits so far.
    public var statistics: DatabaseStatistics { driver.statistics }

    /// `SELECT 1`, for health checks.
    public func ping() async throws {
        try await read { db in try await db.raw("SELECT 1 AS one").run() }
    }

    /// Runs the engine's periodic housekeeping once.
    /// - Returns: Whether writes committed since the previous pass, so the next should come soon.
    @discardableResult
    public func maintain() async throws -> MaintenancePace {
        try await driver.maintain()
    }

    public func shutdown() async {
        await driver.shutdown()
    }
}

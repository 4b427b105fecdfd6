import Metrics
import SQLKit

/// A database engine behind ``Database``: hands out sessions for reads and runs write
/// transactions. PostgreSQL's is postgres-kit's pool (`PurseServer`); SQLite's is `PurseSQLite`.
public protocol DatabaseDriver: Sendable {
    var engine: DatabaseEngine { get }
    /// Runs `body` with a session outside any explicit transaction.
    func read<T: Sendable>(_ body: @escaping @Sendable (any DatabaseSession) async throws -> T) async throws -> T
    /// Runs `body` in a write transaction, committed when it returns and rolled back when it throws.
    func transaction<T: Sendable>(_ body: @escaping @Sendable (any DatabaseSession) async throws -> T) async throws -> T
    /// Housekeeping that must not run inside requests (SQLite: WAL checkpoints). Called
    /// periodically by the server while it runs.
    func maintain() async throws -> MaintenancePace
    func shutdown() async
    /// What every engine counts; engine-specific counters go to the engine's own metrics.
    var statistics: DatabaseStatistics { get }
    /// Whether ``listen(channel:receive:)`` works: PostgreSQL's `LISTEN`/`NOTIFY`, which reaches
    /// every server on the database. SQLite has one server process, so it has none.
    var deliversNotifications: Bool { get }
    /// Calls `receive` with the payload of each notification on `channel` until the task is
    /// cancelled (then returns) or the connection fails (then throws). A notification is sent
    /// with `SELECT pg_notify(channel, payload)` in a transaction and arrives when it commits.
    func listen(channel: String, receive: @escaping @Sendable (String) -> Void) async throws
}

extension DatabaseDriver {
    public var deliversNotifications: Bool { false }
    public func listen(channel: String, receive: @escaping @Sendable (String) -> Void) async throws {
        throw NotificationsUnsupportedError()
    }
}

/// The engine has no notifications between servers (``DatabaseDriver/deliversNotifications``).
public struct NotificationsUnsupportedError: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "this database engine does not deliver notifications" }
}

/// A session a ``DatabaseDriver`` hands to a read or a transaction: SQLKit's `SQLDatabase`, plus
/// the ``DatabaseStatement``s every store writes its hot statements as. Each engine runs them its own
/// way — SQLite binds the values straight into a cached prepared statement, PostgreSQL sends
/// them through postgres-nio's query API with one binary bind per parameter, and keeps a
/// ``PreparedDatabaseStatement`` prepared on each connection — so no store needs to know which
/// engine it is on.
public protocol DatabaseSession: SQLDatabase {
    /// Runs `statement` with `values` (value *n* for `$n`) and returns its rows.
    func query(_ statement: DatabaseStatement, _ values: [SQLValue]) async throws -> [any SQLRow]

    /// Runs an `INSERT … ON CONFLICT DO NOTHING` — written without `RETURNING` — and returns how
    /// many rows it inserted.
    func insertedRows(_ statement: DatabaseStatement, _ values: [SQLValue]) async throws -> Int

    /// Runs a statement the engine may keep prepared on its connection (see
    /// ``PreparedDatabaseStatement``) with `values`, and returns its rows.
    func query<Prepared: PreparedDatabaseStatement>(_ prepared: Prepared.Type, _ values: [SQLValue]) async throws -> [any SQLRow]

    /// ``insertedRows(_:_:)`` for a statement the engine may keep prepared.
    func insertedRows<Prepared: PreparedDatabaseStatement>(_ prepared: Prepared.Type, _ values: [SQLValue]) async throws -> Int

    /// Runs a statement that declares its columns with `values`, and returns its rows as the
    /// statement's own type, each column read by position (see ``PreparedDatabaseQuery``).
    func rows<Query: PreparedDatabaseQuery>(_ query: Query.Type, _ values: [SQLValue]) async throws -> [Query.Row]

    /// Runs `prepared` as its transaction's last statement, its rows ignored. PostgreSQL sends it
    /// with COMMIT, and the transaction waits once for both instead of once for each; elsewhere
    /// (SQLite, a session outside a transaction) it runs at once.
    ///
    /// Nothing may run on the session after it: on PostgreSQL a later statement fails. Its own
    /// failure fails the transaction, which then rolls back; the transaction's body has returned
    /// by then, so the error reaches the caller of `transaction`.
    func runLast<Prepared: PreparedDatabaseStatement>(_ prepared: Prepared.Type, _ values: [SQLValue]) async throws
}

extension DatabaseSession {
    /// An engine that prepares every statement anyway runs a declared one as any other.
    public func query<Prepared: PreparedDatabaseStatement>(_ prepared: Prepared.Type, _ values: [SQLValue]) async throws -> [any SQLRow] {
        try Prepared.check(values)
        return try await query(Prepared.statement, values)
    }

    public func insertedRows<Prepared: PreparedDatabaseStatement>(_ prepared: Prepared.Type, _ values: [SQLValue]) async throws -> Int {
        try Prepared.check(values)
        return try await insertedRows(Prepared.statement, values)
    }

    /// Reads each row by its column names, in order.
    public func rows<Query: PreparedDatabaseQuery>(_ query: Query.Type, _ values: [SQLValue]) async throws -> [Query.Row] {
        try await self.query(query, values).map(Query.row(from:))
    }

    public func runLast<Prepared: PreparedDatabaseStatement>(_ prepared: Prepared.Type, _ values: [SQLValue]) async throws {
        _ = try await query(prepared, values)
    }

    /// Runs a declared statement with `values`, ignoring any rows.
    public func run<Prepared: PreparedDatabaseStatement>(_ prepared: Prepared.Type, _ values: [SQLValue]) async throws {
        _ = try await query(prepared, values)
    }

    /// Runs `statement` with `values`, ignoring any rows.
    public func run(_ statement: DatabaseStatement, _ values: [SQLValue]) async throws {
        _ = try await query(statement, values)
    }
}

/// What every engine has done since it opened.
public struct DatabaseStatistics: Sendable, Equatable {
    /// Write transactions that committed.
    public var committedTransactions = 0
    /// `COMMIT`s that carried them: fewer than the transactions where an engine commits several
    /// together (SQLite's writer groups).
    public var commits = 0

    public init(committedTransactions: Int = 0, commits: Int = 0) {
        self.committedTransactions = committedTransactions
        self.commits = commits
    }
}

/// What a housekeeping pass found: writes committed since the pass before (`busy`: the next
/// should come soon, while there is little to copy) or none (`idle`).
public enum MaintenancePace: Sendable, Equatable {
    case busy
    case idle
}

/// The database was shut down.
public struct DatabaseClosedError: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "the database is closed" }
}

/// A database URL or setting that cannot be used.
public struct DatabaseConfigurationError: Error, CustomStringConvertible {
    public var message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// The counters every engine reports to `/metrics` (through swift-metrics).
public struct DatabaseMetrics: Sendable {
    /// Write transactions committed.
    public let transactions: Counter
    /// `COMMIT`s that carried them.
    public let commits: Counter

    public init(factory: any MetricsFactory) {
        transactions = Counter(label: "purse_db_transactions_total", factory: factory)
        commits = Counter(label: "purse_db_commits_total", factory: factory)
    }

    /// One `COMMIT` that carried `transactions` transactions.
    public func committed(transactions count: Int) {
        transactions.increment(by: count)
        commits.increment()
    }
}

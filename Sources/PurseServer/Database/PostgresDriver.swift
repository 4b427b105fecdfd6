import Foundation
import Logging
import Metrics
import NIOCore
import NIOSSL
import PostgresKit
import PostgresNIO
import PurseDatabase
import SQLKit
import Synchronization

/// PostgreSQL through postgres-nio's connection pool; each session leases one connection.
final class PostgresDriver: DatabaseDriver {
    let engine = DatabaseEngine.postgres
    private let client: PostgresClient
    private let runTask: Task<Void, Never>
    private let committed = Atomic<Int>(0)
    private let metrics: DatabaseMetrics
    private let closed = Atomic<Bool>(false)
    private let closings = ConnectionClosings()
    /// How long a session waits for a connection while none is being handed out (`lease_timeout`,
    /// 3 s): while PostgreSQL is down the pool keeps reconnecting and a lease would wait until it
    /// is back; past this bound the request fails with ``DatabaseLeaseTimeout``, a 503 to retry,
    /// and the pool recovers by itself. A pool that is merely busy — some lease came within the
    /// bound — keeps the session waiting, up to ``longestLeaseWait``.
    private let leaseTimeout: Duration
    /// When a connection was last handed out (``ContinuousClock`` nanoseconds since `started`).
    private let lastLease = Atomic<Int64>(0)
    private let started = ContinuousClock.now
    static let longestLeaseWait: Duration = .seconds(30)

    /// One commit per transaction.
    var statistics: DatabaseStatistics {
        var statistics = DatabaseStatistics()
        statistics.committedTransactions = committed.load(ordering: .relaxed)
        statistics.commits = statistics.committedTransactions
        return statistics
    }

    init(url: String, metrics: any MetricsFactory, logger: Logger) async throws {
        self.metrics = DatabaseMetrics(factory: metrics)
        guard let components = URLComponents(string: url), let host = components.host else {
            throw DatabaseConfigurationError(message: "DATABASE_URL is not a postgres:// URL")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 }
        )
        let tls: PostgresClient.Configuration.TLS
        switch query["sslmode"] ?? "disable" {
        case "require", "verify-full", "verify-ca":
            tls = .require(TLSConfiguration.makeClientConfiguration())
        case "prefer":
            tls = .prefer(TLSConfiguration.makeClientConfiguration())
        default:
            tls = .disable
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        var configuration = PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: components.user?.removingPercentEncoding ?? "postgres",
            password: components.password?.removingPercentEncoding,
            database: database.isEmpty ? nil : database,
            tls: tls
        )
        configuration.options.maximumConnections = Int(query["pool_size"] ?? "") ?? 16
        leaseTimeout = try Self.duration(query["lease_timeout"], default: .seconds(3), name: "lease_timeout")
        // No session waits without bound: a statement or lock wait that runs away fails its request,
        // and a connection left inside a transaction is closed by the server.
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", query["statement_timeout"] ?? "30s"),
            ("lock_timeout", query["lock_timeout"] ?? "10s"),
            ("idle_in_transaction_session_timeout", query["idle_in_transaction_session_timeout"] ?? "60s"),
        ]
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        // The pool must be running before the first lease (postgres-nio warns otherwise): wait
        // until the task is about to call `run()`, which marks the client running before it
        // first suspends.
        let (started, signal) = AsyncStream<Never>.makeStream()
        self.runTask = Task {
            signal.finish()
            await client.run()
        }
        for await _ in started {}
    }

    /// `lease_timeout`'s value: `3s`, `500ms` or a number of seconds.
    static func duration(_ text: String?, default fallback: Duration, name: String) throws -> Duration {
        guard let text, !text.isEmpty else { return fallback }
        let (digits, unit): (Substring, Int64) = text.hasSuffix("ms") ? (text.dropLast(2), 1) : text.hasSuffix("s") ? (text.dropLast(), 1000) : (Substring(text), 1000)
        guard let value = Int64(digits), value > 0, value <= 600_000 / unit else {
            throw DatabaseConfigurationError(message: "DATABASE_URL's \(name) must be a duration such as 3s or 500ms")
        }
        return .milliseconds(value * unit)
    }

    /// Runs `body` on a leased connection, or fails with ``DatabaseLeaseTimeout`` when none comes
    /// within ``leaseTimeout``. Only the wait for the connection is bounded; once leased, the
    /// statements have `statement_timeout`.
    private func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        // 0: waiting, 1: leased, 2: gave up. Whichever of the lease and the clock moves first wins.
        let state = LeaseState()
        let client = client, timeout = leaseTimeout
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await client.withConnection { connection in
                    guard state.value.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged else { throw DatabaseLeaseTimeout() }
                    self.lastLease.store(self.sinceStart(), ordering: .relaxed)
                    return try await body(connection)
                }
            }
            group.addTask {
                let deadline = ContinuousClock.now + Self.longestLeaseWait
                while true {
                    try? await Task.sleep(for: timeout)
                    guard state.value.load(ordering: .acquiring) == 0 else { return nil }
                    // Connections are still being handed out: the pool is busy, not cut off.
                    let idle = Duration.nanoseconds(self.sinceStart() - self.lastLease.load(ordering: .relaxed))
                    if idle < timeout, ContinuousClock.now < deadline { continue }
                    if state.value.compareExchange(expected: 0, desired: 2, ordering: .acquiringAndReleasing).exchanged { throw DatabaseLeaseTimeout() }
                    return nil
                }
            }
            while let next = try await group.next() {
                if let value = next {
                    group.cancelAll()
                    return value
                }
            }
            throw DatabaseLeaseTimeout()
        }
    }

    private func sinceStart() -> Int64 {
        let elapsed = ContinuousClock.now - started
        return elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
    }

    private final class LeaseState: Sendable {
        let value = Atomic<Int>(0)
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any DatabaseSession) async throws -> T) async throws -> T {
        guard !closed.load(ordering: .relaxed) else { throw DatabaseClosedError() }
        return try await withConnection { connection in
            let db = PostgresSession(connection)
            return try await db.closingIfUnfit {
                try await self.closings.untilClosed(connection) { try await body(db) }
            }
        }
    }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (any DatabaseSession) async throws -> T) async throws -> T {
        guard !closed.load(ordering: .relaxed) else { throw DatabaseClosedError() }
        return try await withConnection { connection in
            let db = PostgresSession(connection, inTransaction: true)
            return try await db.closingIfUnfit {
                try await self.closings.untilClosed(connection) {
                    // BEGIN goes out without a wait of its own: the connection runs its statements
                    // in order, so the body's first statement follows it and its answer comes
                    // after BEGIN's. Whether BEGIN failed is known by then (see ``Begun``).
                    let begun = Begun(connection.query("BEGIN", logger: db.logger))
                    do {
                        let result = try await body(db)
                        try begun.check()
                        try await Self.commit(db)
                        self.committed.add(1, ordering: .relaxed)
                        self.metrics.committed(transactions: 1)
                        return result
                    } catch {
                        do {
                            try await connection.query("ROLLBACK", logger: db.logger)
                        } catch {
                            // A connection whose transaction could not be ended (and may still hold
                            // locks) must not go back to the pool for another session to inherit.
                            try? await connection.close()
                        }
                        throw error
                    }
                }
            }
        }
    }

    /// Sends COMMIT, behind the body's last statement when it left one
    /// (``PostgresSession/runLast(_:_:)``): both go out together and the transaction waits once.
    ///
    /// PostgreSQL answers COMMIT in a transaction that a failed statement aborted with the tag
    /// `ROLLBACK` and no error, so the tag is checked: a body that caught a statement's error and
    /// returned does not pass for committed.
    static func commit(_ db: PostgresSession) async throws {
        let last = db.takeLast().map { last -> EventLoopFuture<PostgresQueryResult> in db.connection.query(last, logger: db.logger) }
        let commit: EventLoopFuture<PostgresQueryResult> = db.connection.query("COMMIT", logger: db.logger)
        _ = try await last?.get()
        let tag = try await commit.get().metadata.command
        guard tag == "COMMIT" else { throw TransactionRolledBackError(tag: tag) }
    }

    /// The outcome of a BEGIN sent ahead of the transaction's first statement. postgres-nio
    /// settles each statement's future on the connection's event loop as its answer arrives, in
    /// order, so once any later statement of the session has answered, BEGIN's failure, if any,
    /// is recorded here.
    ///
    /// PostgreSQL fails BEGIN only when the connection itself fails (inside a transaction block it
    /// warns, no more), and then every later statement fails with it; a transaction whose BEGIN
    /// failed is refused before COMMIT all the same.
    final class Begun: Sendable {
        private let failure = Mutex<(any Error)?>(nil)

        init(_ future: EventLoopFuture<PostgresQueryResult>) {
            future.whenFailure { error in self.failure.withLock { $0 = error } }
        }

        func check() throws {
            if let error = failure.withLock({ $0 }) { throw error }
        }
    }

    var deliversNotifications: Bool { true }

    /// Holds one pooled connection for as long as it listens.
    func listen(channel: String, receive: @escaping @Sendable (String) -> Void) async throws {
        guard !closed.load(ordering: .relaxed) else { throw DatabaseClosedError() }
        try await client.withConnection { connection in
            try await connection.listen(on: channel) { notifications in
                for try await notification in notifications {
                    receive(notification.payload)
                }
            }
        }
    }

    /// PostgreSQL checkpoints and vacuums on its own.
    func maintain() async throws -> MaintenancePace { .idle }

    /// Closes the pool; sessions asked for afterwards fail with `DatabaseClosedError` at once
    /// rather than waiting for a connection that will never come.
    func shutdown() async {
        closed.store(true, ordering: .relaxed)
        runTask.cancel()
        _ = await runTask.value
    }
}

/// Ends a session's wait when its connection closes. postgres-nio hands a statement to a
/// connection's channel without a write promise, so a statement sent just as the server went away
/// (PostgreSQL killed or restarted) is never answered and its caller would wait forever; a
/// session run through ``untilClosed(_:_:)`` ends with ``DatabaseConnectionLost`` instead, and its
/// abandoned statement is left to the connection, which is gone.
///
/// Each connection gets one close callback, however many sessions it carries; a session registers
/// while it runs and leaves when it ends.
final class ConnectionClosings: Sendable {
    private struct Watch {
        var waiters: [UInt64: @Sendable () -> Void] = [:]
    }
    private let watches = Mutex<[PostgresConnection.ID: Watch]>([:])
    private let next = Atomic<UInt64>(0)

    func untilClosed<T: Sendable>(_ connection: PostgresConnection, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let settled = Mutex(false)
        let work = Mutex<Task<Void, Never>?>(nil)
        let token = next.add(1, ordering: .relaxed).newValue
        defer { watches.withLock { $0[connection.id]?.waiters[token] = nil } }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let settle: @Sendable (Result<T, any Error>) -> Void = { result in
                    guard settled.withLock({ done in defer { done = true }; return !done }) else { return }
                    continuation.resume(with: result)
                }
                let firstSession = watches.withLock { watches in
                    let first = watches[connection.id] == nil
                    watches[connection.id, default: Watch()].waiters[token] = { settle(.failure(DatabaseConnectionLost())) }
                    return first
                }
                if firstSession {
                    connection.closeFuture.whenComplete { _ in
                        let waiters = self.watches.withLock { $0.removeValue(forKey: connection.id)?.waiters.values.map { $0 } ?? [] }
                        for fail in waiters { fail() }
                    }
                }
                work.withLock {
                    $0 = Task {
                        do { settle(.success(try await body())) } catch { settle(.failure(error)) }
                    }
                }
            }
        } onCancel: {
            work.withLock { $0?.cancel() }
        }
    }
}

/// COMMIT was answered with another tag (`ROLLBACK`): a statement of the transaction failed, and
/// PostgreSQL rolled the whole transaction back.
struct TransactionRolledBackError: Error, CustomStringConvertible {
    let tag: String
    var description: String { "the transaction was rolled back at COMMIT (\(tag)): one of its statements failed" }
}

/// A statement run on a transaction's session after its last (``PostgresSession/runLast(_:_:)``).
struct StatementAfterLastError: Error, CustomStringConvertible {
    var description: String { "a statement ran after the transaction's last statement" }
}

/// A leased PostgreSQL connection as a ``DatabaseSession``: SQLKit's own database for the
/// statements SQLKit builds, and postgres-nio's query API for ``DatabaseStatement``s — their text
/// goes to the server as written, with one binary bind per parameter number, and the rows come
/// back without SQLKit's serialisation of the statement or boxing of its values.
struct PostgresSession: DatabaseSession {
    let base: any SQLDatabase
    let connection: PostgresConnection
    /// Set when a prepared statement failed on this connection: postgres-nio keeps a failed
    /// preparation for the connection's life (a statement first prepared inside a transaction
    /// already aborted, or while a migration held its table, would fail there ever after), so the
    /// connection is closed when the session ends and the pool opens a fresh one.
    private let unfit = Unfit()

    /// A transaction's last statement, held for COMMIT (``runLast(_:_:)``); nil outside a
    /// transaction, where it runs at once.
    private let last: Last?

    final class Unfit: Sendable {
        let marked = Atomic<Bool>(false)
    }

    final class Last: Sendable {
        /// The statement, and whether one was given (it stays given once COMMIT has taken it).
        let held = Mutex<(query: PostgresQuery?, given: Bool)>((nil, false))
    }

    init(_ connection: PostgresConnection, inTransaction: Bool = false) {
        self.connection = connection
        self.base = connection.sql(queryLogLevel: .trace)
        self.last = inTransaction ? Last() : nil
    }

    /// The last statement the body left for COMMIT, if any.
    func takeLast() -> PostgresQuery? {
        last?.held.withLock { held in
            defer { held.query = nil }
            return held.query
        }
    }

    /// Throws once the transaction's last statement was given: nothing runs after it.
    private func checkOpen() throws {
        if let last, last.held.withLock({ $0.given }) { throw StatementAfterLastError() }
    }

    /// Sent with COMMIT as an unnamed statement (postgres-nio's queue-and-return API has no
    /// prepared form), so it is parsed on each run: it is meant for a short write, an update by
    /// key.
    func runLast<Prepared: PreparedDatabaseStatement>(_ prepared: Prepared.Type, _ values: [SQLValue]) async throws {
        try Prepared.check(values)
        guard let last else {
            _ = try await query(prepared, values)
            return
        }
        let query = try Self.query(Prepared.statement.text, Prepared.statement, values)
        try last.held.withLock { held in
            guard !held.given else { throw StatementAfterLastError() }
            held = (query, true)
        }
    }

    /// Each cell straight into the column's declared type: a `String` or an `Int64`, no row
    /// wrapper and no `Decodable` decoder.
    func rows<Query: PreparedDatabaseQuery>(_ query: Query.Type, _ values: [SQLValue]) async throws -> [Query.Row] {
        try checkOpen()
        try Query.check(values)
        return try await markingUnfitOnFailure {
            var rows: [Query.Row] = []
            for try await row in try await connection.execute(PostgresPreparedQuery<Query>(values: values), logger: logger) {
                rows.append(row)
            }
            return rows
        }
    }

    /// Runs `session` (the whole session, its answer settled) and then closes the connection when
    /// a prepared statement failed on it (see ``unfit``), before the pool can lend it again.
    func closingIfUnfit<T: Sendable>(_ session: () async throws -> T) async throws -> T {
        let result: T
        do {
            result = try await session()
        } catch {
            if unfit.marked.load(ordering: .relaxed) { try? await connection.close() }
            throw error
        }
        if unfit.marked.load(ordering: .relaxed) { try? await connection.close() }
        return result
    }

    var logger: Logger { base.logger }
    var eventLoop: any EventLoop { base.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { base.version }
    var dialect: any SQLDialect { base.dialect }
    var queryLogLevel: Logger.Level? { base.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        do {
            try checkOpen()
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
        return base.execute(sql: query, onRow)
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try checkOpen()
        try await base.execute(sql: query, onRow)
    }

    func withSession<R>(_ closure: @escaping @Sendable (any DatabaseSession) async throws -> R) async throws -> R {
        try await closure(self)
    }

    func query(_ statement: DatabaseStatement, _ values: [SQLValue]) async throws -> [any SQLRow] {
        try checkOpen()
        var rows: [any SQLRow] = []
        for try await row in try await connection.query(try Self.query(statement.text, statement, values), logger: logger) {
            rows.append(row.sql())
        }
        return rows
    }

    /// Prepared on this connection the first time it runs here (one more round trip, once), then
    /// run by name: PostgreSQL plans it once per connection instead of on every run.
    func query<Prepared: PreparedDatabaseStatement>(_ prepared: Prepared.Type, _ values: [SQLValue]) async throws -> [any SQLRow] {
        try checkOpen()
        try Prepared.check(values)
        return try await markingUnfitOnFailure {
            var rows: [any SQLRow] = []
            for try await row in try await connection.execute(PostgresPrepared<Prepared>(values: values), logger: logger) {
                rows.append(row.sql())
            }
            return rows
        }
    }

    /// As ``insertedRows(_:_:)``, the statement kept prepared with its `RETURNING 1`.
    func insertedRows<Prepared: PreparedDatabaseStatement>(_ prepared: Prepared.Type, _ values: [SQLValue]) async throws -> Int {
        try checkOpen()
        try Prepared.check(values)
        return try await markingUnfitOnFailure {
            var count = 0
            for try await _ in try await connection.execute(PostgresPreparedCounting<Prepared>(values: values), logger: logger) {
                count += 1
            }
            return count
        }
    }

    /// Runs a prepared statement; when it fails, the connection is closed once the session ends
    /// (see ``unfit``).
    private func markingUnfitOnFailure<T>(_ run: () async throws -> T) async throws -> T {
        do {
            return try await run()
        } catch {
            unfit.marked.store(true, ordering: .relaxed)
            throw error
        }
    }

    /// PostgreSQL's count of inserted rows does not reach the session: the statement runs with
    /// `RETURNING 1` and its rows are counted.
    func insertedRows(_ statement: DatabaseStatement, _ values: [SQLValue]) async throws -> Int {
        try checkOpen()
        var count = 0
        for try await _ in try await connection.query(try Self.query(statement.text + " RETURNING 1", statement, values), logger: logger) {
            count += 1
        }
        return count
    }

    /// `text` (the statement's, numbered as PostgreSQL numbers parameters) with `values` bound
    /// in order: the first to `$1`.
    static func query(_ text: String, _ statement: DatabaseStatement, _ values: [SQLValue]) throws -> PostgresQuery {
        guard values.count == statement.parameterCount else {
            throw SQLStatementValuesError(statement: statement.text, expected: statement.parameterCount, given: values.count)
        }
        return PostgresQuery(unsafeSQL: text, binds: bindings(values))
    }

    /// One binary bind per value, in order.
    static func bindings(_ values: [SQLValue]) -> PostgresBindings {
        var binds = PostgresBindings(capacity: values.count)
        for value in values {
            switch value {
            case .text(let text): binds.append(text, context: .default)
            case .integer(let integer): binds.append(integer, context: .default)
            case .null: binds.appendNull()
            }
        }
        return binds
    }
}

/// A ``PreparedDatabaseStatement`` as postgres-nio's prepared statement: named after the
/// statement's number in the process, typed as declared, its rows handed back as they come.
struct PostgresPrepared<Declared: PreparedDatabaseStatement>: PostgresPreparedStatement {
    typealias Row = PostgresRow

    static var name: String { "purse_\(Declared.statement.cacheKey)" }
    static var sql: String { Declared.statement.text }
    static var bindingDataTypes: [PostgresDataType] { types }
    static var types: [PostgresDataType] {
        Declared.parameterTypes.map { type in
            switch type {
            case .text: .text
            case .integer: .int8
            }
        }
    }

    let values: [SQLValue]

    func makeBindings() -> PostgresBindings { PostgresSession.bindings(values) }
    func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
}

/// The same statement with `RETURNING 1`, under a name of its own: how many rows it inserted is
/// how many rows come back.
struct PostgresPreparedCounting<Declared: PreparedDatabaseStatement>: PostgresPreparedStatement {
    typealias Row = PostgresRow

    static var name: String { "purse_\(Declared.statement.cacheKey)_counted" }
    static var sql: String { Declared.statement.text + " RETURNING 1" }
    static var bindingDataTypes: [PostgresDataType] { PostgresPrepared<Declared>.types }

    let values: [SQLValue]

    func makeBindings() -> PostgresBindings { PostgresSession.bindings(values) }
    func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
}

/// A ``PreparedDatabaseQuery`` as postgres-nio's prepared statement, under the same name as
/// ``PostgresPrepared`` (the text and types are the same): each row decoded by position into the
/// declared column types.
struct PostgresPreparedQuery<Declared: PreparedDatabaseQuery>: PostgresPreparedStatement {
    typealias Row = Declared.Row

    static var name: String { PostgresPrepared<Declared>.name }
    static var sql: String { Declared.statement.text }
    static var bindingDataTypes: [PostgresDataType] { PostgresPrepared<Declared>.types }

    let values: [SQLValue]

    func makeBindings() -> PostgresBindings { PostgresSession.bindings(values) }

    func decodeRow(_ row: PostgresRow) throws -> Declared.Row {
        try Declared.checkColumnCount(row.count)
        var columns: [SQLValue] = []
        columns.reserveCapacity(row.count)
        for (index, (cell, type)) in zip(row, Declared.columnTypes).enumerated() {
            do {
                switch type {
                case .text: columns.append(.text(try cell.decode(String?.self)))
                case .integer: columns.append(try cell.decode(Int64?.self).map(SQLValue.integer) ?? .null)
                }
            } catch is PostgresDecodingError {
                throw DatabaseColumnError(statement: Declared.statement.text, column: index, expected: type)
            }
        }
        return try Declared.row(DatabaseColumns(columns, of: Declared.statement))
    }
}

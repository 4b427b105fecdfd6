import Foundation
import Metrics
import PurseDatabase
import SQLKit
import Synchronization
import VaporCSQLite

/// Write transactions on SQLite's one writer connection, committed in groups.
///
/// SQLite lets one connection write at a time. Taking a lock per transaction meant every
/// transaction paid a `BEGIN`, a `COMMIT` (the WAL writes of every page it touched) and a wake-up
/// of the next waiter, one after another. Here transactions queue, and whoever finds the writer
/// idle runs everything queued as **one** SQLite transaction (group commit), each caller's body
/// after the first inside its own savepoint:
///
/// - a body that throws rolls back alone (to its savepoint, or the whole transaction when it is
///   the first) and its caller gets the error at once; the others in the group are unaffected;
/// - a caller whose body returned is answered only after the `COMMIT` that contains its writes —
///   if that commit fails, every such caller gets the error and nothing of theirs was written;
/// - bodies run one after another in arrival order, each seeing the writes of those before it:
///   the same serial order a lock gives, so invariants checked inside a body still hold.
///
/// Groups run on the writer's own thread (``WriterThread``), at a raised priority where the
/// process may raise it: a task started by the caller that found the writer idle runs groups
/// until the queue is empty.
final class SQLiteWriter: Sendable {
    private let database: SQLiteSession
    private let connection: SQLiteConnectionHandle
    private let maxGroup: Int
    private let state = Mutex(State())
    private let counts = Mutex((statistics: DatabaseStatistics(), busySeconds: 0.0))
    private let metrics: SQLiteMetrics

    /// Transactions committed and the commits that carried them, since the database opened.
    var statistics: DatabaseStatistics { counts.withLock { $0.statistics } }
    /// Time spent running groups (bodies and `COMMIT`), in seconds.
    var busySeconds: Double { counts.withLock { $0.busySeconds } }

    /// Transactions and pauses waiting for the writer (for tests).
    var queued: Int { state.withLock { $0.queue.count } }

    private struct State {
        /// Bounded by the number of callers waiting, so taking from the front by copying is cheap.
        var queue: [any QueuedTransaction] = []
        var leading = false

        var isEmpty: Bool { queue.isEmpty }

        /// The next group: transactions up to `limit`, stopping before a pause — or a pause alone.
        mutating func take(upTo limit: Int) -> [any QueuedTransaction] {
            guard let first = queue.first else { return [] }
            let count = first.isPause ? 1 : queue.prefix(limit).prefix { !$0.isPause }.count
            let group = Array(queue.prefix(count))
            queue.removeFirst(count)
            return group
        }
    }

    /// Set on the task that runs transaction bodies: a `read` or `transaction` started from inside
    /// a body would wait for the writer that is running it, so it is refused instead.
    @TaskLocal static var runningBody = false

    /// The thread every group runs on.
    let thread: WriterThread
    /// Whether the thread asked for a raised priority (``SQLiteTuning/Hook/writerPriority``).
    let raisingPriority: Bool
    /// Its nice value then, where the process may set it: the writer preempts the rest of the
    /// process (see ``WriterThread``).
    static let niceness: Int32 = -10

    init(
        database: SQLiteSession, connection: SQLiteConnectionHandle, maxGroup: Int = 64, raisingPriority: Bool = true,
        metrics: SQLiteMetrics = SQLiteMetrics(factory: NOOPMetricsHandler.instance)
    ) {
        self.database = database
        self.connection = connection
        self.maxGroup = max(1, maxGroup)
        self.metrics = metrics
        self.raisingPriority = raisingPriority
        self.thread = WriterThread(name: "sqlite-writer", niceness: raisingPriority ? Self.niceness : 0)
    }

    /// Lets the writer's thread finish once what is queued has run (the database is closing).
    func stop() {
        thread.stop()
    }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (any DatabaseSession) async throws -> T) async throws -> T {
        try await enqueue(Queued(body))
    }

    /// Runs `work` between two groups, with no transaction open and none starting until it
    /// returns: the writer is paused, in arrival order like any transaction, and callers that
    /// come meanwhile queue as usual. `work` must not use the writer's connection.
    func paused<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) async throws -> T {
        try await enqueue(Queued(pause: work))
    }

    private func enqueue<T: Sendable>(_ item: Queued<T>) async throws -> T {
        guard !Self.runningBody else { throw NestedSessionError() }
        let lead = state.withLock { state -> Bool in
            state.queue.append(item)
            if state.leading { return false }
            state.leading = true
            return true
        }
        if lead {
            // A task of its own (never the caller's, which may be cancelled: other callers'
            // bodies run in it) on the writer's thread.
            Task(executorPreference: thread) { await self.lead() }
        }
        return try await item.value()
    }

    /// Runs groups until the queue is empty.
    private func lead() async {
        repeat { await runGroup() } while stillLeading()
    }

    /// True when more work is queued (the caller keeps leading); otherwise gives up the lead.
    private func stillLeading() -> Bool {
        state.withLock { state in
            if state.isEmpty { state.leading = false }
            return state.leading
        }
    }

    private func runGroup() async {
        let group = state.withLock { $0.take(upTo: maxGroup) }
        guard !group.isEmpty else { return }
        let started = ContinuousClock.now
        await Self.$runningBody.withValue(true) { await execute(group) }
        let busy = ContinuousClock.now - started
        let seconds = busy / .seconds(1)
        counts.withLock { $0.busySeconds += seconds }
        metrics.writerBusySeconds.increment(by: seconds)
    }

    private func execute(_ group: [any QueuedTransaction]) async {
        if group.count == 1, let pause = group.first, pause.isPause {
            _ = await pause.run(in: database)
            pause.finish(nil)
            return
        }
        var committing: [any QueuedTransaction] = []
        var open = false
        for item in group {
            // The first body of a transaction needs no savepoint: rolling the transaction back
            // undoes it alone. (A savepoint copies every page a body first touches into its
            // sub-journal; a lone transaction — the usual case on a quiet server — skips that and
            // two statements.)
            let first = !open
            do {
                if first {
                    try statement("BEGIN IMMEDIATE")
                    open = true
                } else {
                    try statement("SAVEPOINT purse_transaction")
                }
            } catch {
                item.finish(error)
                continue
            }
            var refusal: (any Error)?
            if await item.run(in: database) {
                if !connection.hasDeferredForeignKeyViolations {
                    do {
                        if !first { try statement("RELEASE purse_transaction") }
                        committing.append(item)
                    } catch {
                        item.finish(error)
                    }
                    continue
                }
                // A deferred foreign key would fail the whole group's COMMIT: refuse this body alone.
                refusal = SQLiteStatementError(code: SQLITE_CONSTRAINT | (3 << 8), message: "FOREIGN KEY constraint failed", sql: nil)
            }
            if first {
                // Nothing else is in the transaction yet: end it, and the next body begins another.
                if connection.inTransaction { try? statement("ROLLBACK") }
                open = false
            } else if connection.inTransaction {
                try? statement("ROLLBACK TO purse_transaction")
                try? statement("RELEASE purse_transaction")
            } else {
                // SQLite rolled back the whole transaction (I/O error, disk full): the group's
                // earlier bodies are gone with it.
                let lost = TransactionAbandonedError()
                for earlier in committing { earlier.finish(lost) }
                committing.removeAll()
                open = false
            }
            item.finish(refusal)
        }
        guard open else { return }
        do {
            try statement("COMMIT")
        } catch {
            if connection.inTransaction { try? statement("ROLLBACK") }
            for item in committing { item.finish(error) }
            return
        }
        // A group whose every body was refused commits nothing: not counted.
        if !committing.isEmpty {
            counts.withLock { counts in
                counts.statistics.commits += 1
                counts.statistics.committedTransactions += committing.count
            }
            metrics.database.committed(transactions: committing.count)
        }
        for item in committing { item.finish(nil) }
    }

    /// The group's own statements (`BEGIN`, savepoints, `COMMIT`) straight on the connection:
    /// fixed text with no parameters, so nothing for SQLKit to serialise — and two of them run for
    /// every transaction after a group's first, on the writer, which every write waits for.
    private func statement(_ sql: String) throws {
        try connection.execute(sql, []) { _ in }
    }
}

/// A transaction of a group was rolled back by SQLite itself (an I/O error or a full disk in a
/// later member of the group); nothing of it was written.
struct TransactionAbandonedError: Error, CustomStringConvertible {
    var description: String { "the database rolled the transaction back; nothing was written" }
}

/// A queued transaction, type-erased so one queue holds every result type.
private protocol QueuedTransaction: AnyObject, Sendable {
    /// Runs alone, outside any transaction (``SQLiteWriter/paused(_:)``).
    var isPause: Bool { get }
    /// Runs the body; true when it returned (its value waits for the commit).
    func run(in db: any DatabaseSession) async -> Bool
    /// Answers the caller: with `error`, or else with what the body produced (its value after a
    /// commit, its error after a rollback to its savepoint).
    func finish(_ error: (any Error)?)
}

private final class Queued<T: Sendable>: QueuedTransaction, @unchecked Sendable {
    private enum Answer {
        case pending(CheckedContinuation<T, any Error>?)
        case ready(Result<T, any Error>)
    }

    /// Let go as soon as it has run (or will not run): a read of an in-memory database passes a
    /// non-escaping closure through `withoutActuallyEscaping`, which checks that nothing kept it.
    private var body: (@Sendable (any DatabaseSession) async throws -> T)?
    /// Written by `run` and read by `finish`, both on the leader (one task, in that order).
    private var outcome: Result<T, any Error>?
    private let answer = Mutex(Answer.pending(nil))
    let isPause: Bool

    init(_ body: @escaping @Sendable (any DatabaseSession) async throws -> T) {
        self.body = body
        self.isPause = false
    }

    init(pause work: @escaping @Sendable () async throws -> T) {
        self.body = { _ in try await work() }
        self.isPause = true
    }

    func run(in db: any DatabaseSession) async -> Bool {
        guard let body else { return false }
        self.body = nil
        do {
            outcome = .success(try await body(db))
            return true
        } catch {
            outcome = .failure(error)
            return false
        }
    }

    func finish(_ error: (any Error)?) {
        body = nil
        let result: Result<T, any Error> = error.map { .failure($0) } ?? outcome ?? .failure(TransactionAbandonedError())
        let waiter = answer.withLock { answer -> CheckedContinuation<T, any Error>? in
            guard case .pending(let waiter) = answer else { return nil }
            answer = .ready(result)
            return waiter
        }
        waiter?.resume(with: result)
    }

    func value() async throws -> T {
        if case .ready(let result) = answer.withLock({ $0 }) { return try result.get() }
        return try await withCheckedThrowingContinuation { continuation in
            let ready = answer.withLock { answer -> Result<T, any Error>? in
                if case .ready(let result) = answer { return result }
                answer = .pending(continuation)
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}

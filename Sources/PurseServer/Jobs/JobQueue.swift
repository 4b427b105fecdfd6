import Foundation
import PurseDatabase
import SQLKit
import Synchronization

/// A unit of background work as stored.
public struct Job: Sendable, Equatable {
    public var id: String
    public var kind: String
    public var payload: Data
    public var attempts: Int
    public var maxAttempts: Int

    public init(id: String, kind: String, payload: Data, attempts: Int, maxAttempts: Int) {
        self.id = id
        self.kind = kind
        self.payload = payload
        self.attempts = attempts
        self.maxAttempts = maxAttempts
    }

    /// Decodes the JSON payload.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: payload)
    }
}

public enum JobState: String, Sendable {
    case queued, running, done, dead
}

/// Retry timing: exponential from `base`, capped at `maximum`.
public struct JobBackoff: Sendable {
    public var base: TimeInterval
    public var maximum: TimeInterval
    public init(base: TimeInterval = 2, maximum: TimeInterval = 3600) {
        self.base = base
        self.maximum = maximum
    }
    /// Delay before the attempt after `attempts` failed ones.
    public func delay(afterAttempts attempts: Int) -> TimeInterval {
        min(maximum, base * pow(2, Double(max(0, attempts - 1))))
    }
}

/// A durable job queue in the database.
///
/// Jobs are enqueued in the same transaction as the change that causes them, so a webhook is
/// never sent for a change that rolled back. Workers claim due jobs with `FOR UPDATE SKIP LOCKED`
/// on PostgreSQL (replicas never claim the same job) and under SQLite's write lock; a claim is a
/// lease (`locked_until`) that the worker renews while the job runs, so a job of a crashed worker
/// is claimed again once its lease ends, and a long job is never taken from a live one.
public struct JobQueue: Sendable {
    public let database: Database
    public var backoff: JobBackoff
    public var lease: TimeInterval
    /// Signalled after a commit that queued work due now (see ``JobWakeup``).
    public let wakeup = JobWakeup()

    public init(database: Database, backoff: JobBackoff = JobBackoff(), lease: TimeInterval = 30) {
        self.database = database
        self.backoff = backoff
        self.lease = lease
    }

    /// Enqueues a job inside the caller's transaction.
    @discardableResult
    public func enqueue(
        kind: String, payload: some Encodable, runAt: Date, maxAttempts: Int = 8, in db: any DatabaseSession
    ) async throws -> String {
        let id = RandomID.make("job")
        let json = String(decoding: try JSONCoding.encoder.encode(payload), as: UTF8.self)
        let millis = runAt.epochMillis
        try await db.run(Enqueue.self, [.text(id), .text(kind), .text(json), .integer(maxAttempts), .integer(millis)])
        return id
    }

    /// Values: id, kind, payload, attempts allowed, due time (also its creation time).
    enum Enqueue: PreparedDatabaseStatement {
        static let statement = DatabaseStatement("""
            INSERT INTO jobs (id, kind, payload, state, attempts, max_attempts, run_at, created_at, updated_at)
            VALUES ($1, $2, $3, 'queued', 0, $4, $5, $5, $5)
            """)
        static let parameterTypes: [SQLValueType] = [.text, .text, .text, .integer, .integer]
    }

    /// Claims up to `limit` due jobs of the given kinds (all kinds when empty) for this worker.
    public func claim(kinds: [String] = [], limit: Int, now: Date) async throws -> [Job] {
        let claimClause = database.dialect.claimRowsClause
        let nowMillis = now.epochMillis
        let leaseEnd = nowMillis + Int64(lease * 1000)
        return try await database.transaction { db in
            var select = SQLQueryString("""
                SELECT id FROM jobs WHERE ((state = 'queued' AND run_at <= \(bind: nowMillis))
                OR (state = 'running' AND locked_until < \(bind: nowMillis)))
                """)
            if !kinds.isEmpty {
                select.appendInterpolation(unsafeRaw: " AND kind IN (")
                for (index, kind) in kinds.enumerated() {
                    if index > 0 { select.appendInterpolation(unsafeRaw: ", ") }
                    select.appendInterpolation(bind: kind)
                }
                select.appendInterpolation(unsafeRaw: ")")
            }
            select.appendInterpolation(unsafeRaw: " ORDER BY run_at, created_at LIMIT \(max(1, limit))\(claimClause)")
            let ids = try await db.raw(select).all().map { try $0.decode(column: "id", as: String.self) }
            var jobs: [Job] = []
            for id in ids {  // claim order is run order for ordered kinds
                guard let row = try await db.raw("""
                    UPDATE jobs SET state = 'running', attempts = attempts + 1, locked_until = \(bind: leaseEnd), updated_at = \(bind: nowMillis)
                    WHERE id = \(bind: id) RETURNING id, kind, payload, attempts, max_attempts
                    """).first() else { continue }
                jobs.append(Job(
                    id: try row.decode(column: "id", as: String.self),
                    kind: try row.decode(column: "kind", as: String.self),
                    payload: Data(try row.decode(column: "payload", as: String.self).utf8),
                    attempts: try row.decode(column: "attempts", as: Int.self),
                    maxAttempts: try row.decode(column: "max_attempts", as: Int.self)
                ))
            }
            return jobs
        }
    }

    /// Extends a running job's lease to `lease` from `now`: its worker is alive.
    public func renew(_ job: Job, now: Date) async throws {
        let until = now.epochMillis + Int64(lease * 1000)
        try await database.transaction { db in
            try await db.raw("""
                UPDATE jobs SET locked_until = \(bind: until) WHERE id = \(bind: job.id) AND state = 'running'
                """).run()
        }
    }

    /// Marks a claimed job done.
    public func complete(_ job: Job, now: Date) async throws {
        try await database.transaction { db in
            try await db.raw("""
                UPDATE jobs SET state = 'done', locked_until = NULL, last_error = NULL, updated_at = \(bind: now.epochMillis) WHERE id = \(bind: job.id)
                """).run()
        }
    }

    /// Records a failed attempt: back to the queue after the backoff, or dead after the last attempt.
    /// - Returns: The job's new state.
    @discardableResult
    public func fail(_ job: Job, error: String, now: Date, backoff: JobBackoff? = nil) async throws -> JobState {
        let state: JobState = job.attempts >= job.maxAttempts ? .dead : .queued
        let runAt = now.addingTimeInterval((backoff ?? self.backoff).delay(afterAttempts: job.attempts)).epochMillis
        let message = String(error.prefix(1000))
        try await database.transaction { db in
            try await db.raw("""
                UPDATE jobs SET state = \(bind: state.rawValue), run_at = \(bind: runAt), locked_until = NULL,
                last_error = \(bind: message), updated_at = \(bind: now.epochMillis) WHERE id = \(bind: job.id)
                """).run()
        }
        return state
    }

    /// Removes a job that has not started, inside the caller's transaction (the work it would
    /// have done was done another way). A job already running is left to finish.
    public func cancel(_ id: String, in db: any DatabaseSession) async throws {
        try await db.run(Cancel.self, [.text(id)])
    }

    enum Cancel: PreparedDatabaseStatement {
        static let statement = DatabaseStatement("DELETE FROM jobs WHERE id = $1 AND state = 'queued'")
        static let parameterTypes: [SQLValueType] = [.text]
    }

    /// The state of a job, for tests and dashboards.
    public func state(of id: String) async throws -> (state: JobState, attempts: Int, lastError: String?)? {
        try await database.read { db in
            guard let row = try await db.raw("SELECT state, attempts, last_error FROM jobs WHERE id = \(bind: id)").first() else { return nil }
            return (
                try row.decode(column: "state", as: JobState.self, of: "jobs"),
                try row.decode(column: "attempts", as: Int.self),
                try row.decode(column: "last_error", as: String?.self)
            )
        }
    }
}

/// Wakes this process's job worker early: a request that has just committed a job for now (a
/// purchase's fulfilment) signals it, instead of the job waiting for the worker's next poll.
/// Replicas still find each other's jobs by polling.
public final class JobWakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
        /// The current wait ended (timed out) before its waiter was stored.
        var over = false
    }

    private let state = Mutex(State())

    public init() {}

    /// Work was committed: the worker looks now.
    public func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns at a signal (one already given counts) or after `timeout`, whichever is first.
    /// One waiter at a time: the worker.
    func wait(upTo timeout: Duration) async {
        state.withLock { $0.over = false }
        let timer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { self.end() }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.signalled || state.over {
                    state.signalled = false
                    return true
                }
                state.waiter = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
        timer.cancel()
    }

    /// The timeout: ends the wait, whether or not its waiter is stored yet.
    private func end() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.over = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }
}

import Foundation
import Logging
import Metrics
import NIOCore
import NIOPosix
import PurseDatabase
import SQLKit
import SQLiteKit
import SQLiteNIO
import Synchronization
import VaporCSQLite

/// How a SQLite database is opened: the per-database hooks of ``SQLiteTuning``, where its
/// counters go, and when its WAL starts again.
public struct SQLiteOptions: Sendable {
    /// The per-database hooks: ``SQLiteTuning/Hook/combinedWALWrites`` and
    /// ``SQLiteTuning/Hook/writerPriority`` (the process-wide ones are installed, or not, before).
    public var tuning: SQLiteTuning
    /// Where the engine's counters go (`/metrics`); nowhere by default.
    public var metrics: any MetricsFactory
    var walRestarts = WALRestartPolicy()

    public init(tuning: SQLiteTuning = .all, metrics: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.tuning = tuning
        self.metrics = metrics
    }
}

/// SQLite in WAL mode: one writer connection and a few read-only connections.
///
/// Write transactions queue for the writer and commit in groups (``SQLiteWriter``); reads lease
/// a reader connection and run beside the writer, seeing everything committed before they began.
/// Statements run directly on the session's thread (``SQLiteConnectionHandle``). Other processes
/// (the CLI, a backup) can still read the file; a process that holds the write lock for long
/// would make the writer wait on its thread for up to the busy timeout (5 s).
///
/// An in-memory database is private to its one connection, so there every session — reads too —
/// goes through the writer.
public final class SQLiteDriver: DatabaseDriver {
    public let engine = DatabaseEngine.sqlite
    private let connection: SQLiteConnectionHandle
    private let writer: SQLiteWriter
    private let readers: SQLiteReaderPool?
    /// A second connection that only checkpoints the WAL, so the fsyncs of a checkpoint happen
    /// outside the write lock and off the request path (nil for in-memory databases).
    private let checkpointer: SQLiteConnectionHandle?
    private let checkpointLock = AsyncLock()
    /// The checkpoint counters of ``SQLiteStatistics``.
    private let checkpoints = Mutex(SQLiteStatistics())
    private let metrics: SQLiteMetrics
    private let closed = Mutex(false)
    private let logger: Logger
    private let walRestarts: WALRestartPolicy
    /// Long writer pauses are logged at most once a minute, with how many there were.
    private let longPauses = Mutex(ThrottledCount(interval: .seconds(60)))
    /// The writer's commit count when the last housekeeping pass began, and how many passes in a
    /// row found no new commit.
    private let lastPass = Mutex((commits: 0, idleInARow: 0))
    /// The WAL file, whose size tells when an idle server should empty it (nil in memory).
    private let walPath: String?

    /// Read-only connections per database file.
    static let readerCount = 4

    private init(
        connection: SQLiteConnectionHandle, readers: SQLiteReaderPool?, checkpointer: SQLiteConnectionHandle?, walPath: String?,
        options: SQLiteOptions, logger: Logger
    ) {
        self.connection = connection
        self.walPath = walPath
        self.readers = readers
        self.checkpointer = checkpointer
        self.logger = logger
        self.walRestarts = options.walRestarts
        let metrics = SQLiteMetrics(factory: options.metrics)
        self.metrics = metrics
        self.writer = SQLiteWriter(
            database: Self.session(connection, logger: logger), connection: connection,
            raisingPriority: options.tuning.contains(.writerPriority), metrics: metrics
        )
    }

    static func session(_ connection: SQLiteConnectionHandle, logger: Logger) -> SQLiteSession {
        SQLiteSession(connection: connection, logger: logger, eventLoop: MultiThreadedEventLoopGroup.singleton.any(), queryLogLevel: .trace)
    }

    /// Opens (and creates) the database file at `path`, or a private in-memory database when
    /// `path` is nil. Installs nothing process-wide: see ``SQLiteTuning/installProcessHooks()``.
    /// - Throws: The error SQLite gave for the file, or a file whose journal cannot be WAL.
    public static func open(path: String?, options: SQLiteOptions = SQLiteOptions(), logger: Logger) async throws -> SQLiteDriver {
        let walRestarts = options.walRestarts
        let combining = options.tuning.contains(.combinedWALWrites)
        if let path {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let connection = try SQLiteConnectionHandle(path: path, combiningWALWrites: combining)
        let setup = Self.session(connection, logger: logger)
        if path != nil {
            try await setup.raw("PRAGMA journal_mode = WAL").run()
            try await setup.raw("PRAGMA synchronous = NORMAL").run()
            // The server checkpoints from a connection of its own (``maintain()``, every 20 ms while writes commit);
            // the writer checkpoints itself — fsyncs and all, inside the write lock — only if the
            // WAL outgrows the forced restart by a quarter (``WALRestartPolicy``).
            try await setup.raw("PRAGMA wal_autocheckpoint = \(unsafeRaw: String(walRestarts.writerCheckpointPages))").run()
            try await setup.raw("PRAGMA journal_size_limit = \(unsafeRaw: String(walRestarts.journalSizeLimitBytes))").run()
            // Keep up to 32 MiB of pages in memory (SQLite's default is 2 MiB): every page the
            // writer misses is a read from the file inside the write lock.
            try await setup.raw("PRAGMA cache_size = -32768").run()
            // Savepoints (one per transaction in a group) journal the pages they change in a
            // sub-journal; kept in memory it is emptied at every RELEASE, on disk it would grow
            // with the group and cost a file write per page.
            try await setup.raw("PRAGMA temp_store = MEMORY").run()
        }
        try await setup.raw("PRAGMA foreign_keys = ON").run()
        try await setup.raw("PRAGMA busy_timeout = 5000").run()

        let readers = try path.map { path in
            try SQLiteReaderPool((0..<readerCount).map { _ in
                let reader = try SQLiteConnectionHandle(path: path, combiningWALWrites: combining)
                // A reader that tried to write would fail loudly instead of writing outside the
                // writer's queue (and its transactions).
                try reader.execute("PRAGMA query_only = ON", []) { _ in }
                try reader.execute("PRAGMA busy_timeout = 5000", []) { _ in }
                try reader.execute("PRAGMA cache_size = -8192", []) { _ in }
                return Self.session(reader, logger: logger)
            })
        }
        let checkpointer = try path.map { path in
            let checkpointer = try SQLiteConnectionHandle(path: path, combiningWALWrites: combining)
            // Passive checkpoints never wait on a lock; its one read below waits at most 50 ms.
            try checkpointer.execute("PRAGMA busy_timeout = 50", []) { _ in }
            // A connection finds out that the file is in WAL mode when it first reads it; until
            // then its checkpoints succeed without doing anything.
            var mode = ""
            try checkpointer.execute("SELECT count(*) FROM sqlite_schema", []) { _ in }
            try checkpointer.execute("PRAGMA journal_mode", []) { row in mode = (try? row.decode(column: "journal_mode", as: String.self)) ?? "" }
            guard mode == "wal" else {
                throw SQLiteStatementError(code: SQLITE_ERROR, message: "journal mode is \(mode), not wal", sql: "PRAGMA journal_mode")
            }
            return checkpointer
        }
        let driver = SQLiteDriver(
            connection: connection, readers: readers, checkpointer: checkpointer, walPath: path.map { $0 + "-wal" }, options: options, logger: logger
        )
        driver.logWriterPriority()
        return driver
    }

    /// Says once whether the writer's thread got its raised priority.
    private func logWriterPriority() {
        if writer.thread.priorityRaised {
            logger.debug("SQLite writer thread runs at a raised priority", metadata: ["nice": "\(SQLiteWriter.niceness)"])
        } else if writer.raisingPriority {
            logger.notice("SQLite writer thread runs at the normal priority: raising it needs CAP_SYS_NICE or RLIMIT_NICE")
        }
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any DatabaseSession) async throws -> T) async throws -> T {
        guard !SQLiteWriter.runningBody else { throw NestedSessionError() }
        guard let readers else {
            guard !closed.withLock({ $0 }) else { throw DatabaseClosedError() }
            return try await withoutActuallyEscaping(body) { body in try await writer.transaction(body) }
        }
        return try await readers.withReader(body)
    }

    /// Fails with `DatabaseClosedError` once the database is shut down; transactions queued
    /// before that still run (shutdown waits for them).
    public func transaction<T: Sendable>(_ body: @escaping @Sendable (any DatabaseSession) async throws -> T) async throws -> T {
        guard !closed.withLock({ $0 }) else { throw DatabaseClosedError() }
        return try await writer.transaction(body)
    }

    public var statistics: DatabaseStatistics { writer.statistics }

    /// What only this engine counts: the writer's busy time, checkpoints, WAL restarts.
    public var sqliteStatistics: SQLiteStatistics {
        var statistics = checkpoints.withLock { $0 }
        statistics.writerBusySeconds = writer.busySeconds
        return statistics
    }

    /// A writer pause longer than this is logged as a warning.
    static let longPause = Duration.milliseconds(100)

    /// Copies the WAL into the database file, off the request path: the fsyncs this takes
    /// (tens of milliseconds under load on a virtual disk) happen on a thread-pool thread while
    /// the writer keeps committing.
    ///
    /// The writer starts the WAL again from its beginning only when a transaction begins while
    /// every frame in it is already in the database — under a steady stream of commits that
    /// never happens by itself, and the WAL would grow until the writer's own backstop
    /// checkpoint stalled every request. So once the WAL passes ``WALRestartPolicy/thresholdPages``, a
    /// last pass runs with the writer paused (``SQLiteWriter/paused(_:)``), after catch-up passes
    /// that leave it only the frames committed during the last of them to copy and sync, and the
    /// next transaction restarts the WAL (unless a reader still holds an older snapshot; the next
    /// round tries again).
    /// That pass's time is its fsyncs, so while the disk is slow to sync the restart is put off
    /// (``WALRestartPolicy/shouldPause(walPages:firstPass:)``).
    /// No connection waits on a lock for this — `SQLITE_CHECKPOINT_RESTART` would make the
    /// writer sleep in SQLite's busy handler, on a cooperative thread, for as long as it ran.
    ///
    /// Returns `busy` when the writer committed since the previous pass began. Once the database
    /// is shut down a pass does nothing (a round already scheduled may still come).
    public func maintain() async throws -> MaintenancePace {
        guard let checkpointer else { return .idle }
        let commits = writer.statistics.commits
        let (pace, idleInARow) = lastPass.withLock { last -> (MaintenancePace, Int) in
            last.idleInARow = commits == last.commits ? last.idleInARow + 1 : 0
            last.commits = commits
            return (last.idleInARow > 0 ? .idle : .busy, last.idleInARow)
        }
        return try await checkpointLock.withLock {
            // `shutdown()` marks the database closed before it takes this lock to close the
            // checkpointer, so a pass that gets here first finishes with it open.
            guard !closed.withLock({ $0 }) else { return .idle }
            try await checkpointPass(checkpointer)
            if idleInARow >= 2 { try await emptyIdleWAL(checkpointer) }
            return pace
        }
    }

    /// Once writes have stopped (two passes in a row without a commit: 200 ms and more), a WAL
    /// file larger than ``WALRestartPolicy/idleWALBytes`` — a restart keeps the file at its
    /// high-water mark, up to hundreds of megabytes after a burst — is emptied, with the writer
    /// paused for it (nothing is waiting then) so that it never meets SQLite's busy handler. A
    /// reader still on the WAL puts it off to the next idle pass.
    private func emptyIdleWAL(_ checkpointer: SQLiteConnectionHandle) async throws {
        guard let walPath, let size = try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? Int,
              size > walRestarts.idleWALBytes else { return }
        if try await writer.paused({ try checkpointer.truncateWAL() }) {
            checkpoints.withLock { $0.walTruncations += 1 }
            metrics.walTruncations.increment()
        }
    }

    /// One checkpoint pass, and the paused last pass when the WAL is due to start again.
    ///
    /// A passive checkpoint that cannot reach the end of the WAL (under steady writes it never
    /// can) copies pages into the database file without syncing it; only the pass that reaches
    /// the end syncs — every page copied since the last restart. That was the paused pass, so the
    /// writer was held for one large sync at every restart. Before pausing, a few more unpaused
    /// passes catch up, each followed by a sync of the database file, until a pass is quick: the
    /// paused pass then copies and syncs only what was committed during the last of them.
    private func checkpointPass(_ checkpointer: SQLiteConnectionHandle) async throws {
        var (pass, took) = try await timedCheckpoint(checkpointer, syncingDatabase: false)
        record(pass)
        guard let first = pass, first.walPages > walRestarts.thresholdPages else { return }
        guard walRestarts.shouldPause(walPages: first.walPages, firstPass: took) else {
            checkpoints.withLock { $0.deferredRestarts += 1 }
            metrics.deferredRestarts.increment()
            return
        }
        var catchUps = 0
        while catchUps < walRestarts.catchUpPasses, took > walRestarts.quickPass {
            (pass, took) = try await timedCheckpoint(checkpointer, syncingDatabase: true)
            record(pass)
            catchUps += 1
        }
        // Timed from when the writer stops, not from when the pause was queued: the
        // transactions ahead of it in the queue were not held. The pass runs right there, on the
        // writer's own thread, which has nothing else to do meanwhile (a hop to the thread pool
        // and back made the pause ~1 ms longer).
        let (last, paused) = try await writer.paused {
            let started = ContinuousClock.now
            let pass = try checkpointer.checkpoint()
            return (pass, ContinuousClock.now - started)
        }
        record(last, paused: paused)
        // The pass copies a few frames; what takes long is its fsyncs, i.e. the disk.
        if paused > Self.longPause, let count = longPauses.withLock({ $0.record(at: ContinuousClock.now) }) {
            logger.warning("SQLite writes were held for a WAL restart longer than expected: the disk is slow to sync", metadata: [
                "paused_ms": "\(Int(paused / .milliseconds(1)))", "long_pauses": "\(count)",
            ])
        }
    }

    /// A passive checkpoint on a thread-pool thread (it blocks on file I/O), optionally followed
    /// by a sync of the database file, and how long both took.
    private func timedCheckpoint(
        _ checkpointer: SQLiteConnectionHandle, syncingDatabase: Bool
    ) async throws -> ((walPages: Int, checkpointedPages: Int)?, Duration) {
        let started = ContinuousClock.now
        let pass = try await NIOThreadPool.singleton.runIfActive {
            let pass = try checkpointer.checkpoint()
            if syncingDatabase, pass != nil { try checkpointer.syncDatabaseFile() }
            return pass
        }
        return (pass, ContinuousClock.now - started)
    }

    private func record(_ checkpoint: (walPages: Int, checkpointedPages: Int)?, paused: Duration? = nil) {
        checkpoints.withLock { statistics in
            if let checkpoint {
                statistics.checkpoints += 1
                statistics.walPages = checkpoint.walPages
            }
            if let paused {
                statistics.writerPauses += 1
                statistics.writerPausedSeconds += paused / .seconds(1)
            }
        }
        if let checkpoint {
            metrics.checkpoints.increment()
            metrics.walPages.set(checkpoint.walPages)
        }
        if let paused {
            metrics.writerPauses.increment()
            metrics.writerPausedSeconds.increment(by: paused / .seconds(1))
        }
    }

    /// Closes every connection once queued transactions are done. Later calls do nothing (the
    /// server's maintenance service and its owner may both shut the database down).
    public func shutdown() async {
        guard closed.withLock({ closed in defer { closed = true }; return !closed }) else { return }
        await checkpointLock.withLock { checkpointer?.close() }
        await readers?.close()
        _ = try? await writer.transaction { _ in }
        connection.close()
        writer.stop()
    }
}

/// Read-only connections, leased one per session; a session that finds them all busy waits for
/// the next one returned. Once closed, sessions fail at once.
final class SQLiteReaderPool: Sendable {
    private let readers: [SQLiteSession]
    private let state: Mutex<State>

    private struct State {
        var free: [Int]
        var waiters: [CheckedContinuation<Int?, Never>] = []
        var closed = false
        /// `close()` waiting for the last lease to come back.
        var closer: CheckedContinuation<Void, Never>?

        mutating func take() -> Lease {
            if closed { return .closed }
            if let index = free.popLast() { return .reader(index) }
            return .wait
        }
    }

    private enum Lease { case reader(Int), closed, wait }

    init(_ readers: [SQLiteSession]) {
        self.readers = readers
        self.state = Mutex(State(free: Array(readers.indices)))
    }

    func withReader<T: Sendable>(_ body: @Sendable (any DatabaseSession) async throws -> T) async throws -> T {
        guard let index = await lease() else { throw DatabaseClosedError() }
        defer { giveBack(index) }
        return try await body(readers[index])
    }

    private func lease() async -> Int? {
        switch state.withLock({ $0.take() }) {
        case .reader(let index): return index
        case .closed: return nil
        case .wait: break
        }
        return await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Lease in
                let lease = state.take()
                if case .wait = lease { state.waiters.append(continuation) }
                return lease
            }
            switch now {
            case .reader(let index): continuation.resume(returning: index)
            case .closed: continuation.resume(returning: nil)
            case .wait: break
            }
        }
    }

    private func giveBack(_ index: Int) {
        let (waiter, closer) = state.withLock { state -> (CheckedContinuation<Int?, Never>?, CheckedContinuation<Void, Never>?) in
            if !state.closed, !state.waiters.isEmpty { return (state.waiters.removeFirst(), nil) }
            state.free.append(index)
            guard state.closed, state.free.count == readers.count else { return (nil, nil) }
            defer { state.closer = nil }
            return (nil, state.closer)
        }
        waiter?.resume(returning: index)
        closer?.resume()
    }

    /// Refuses new sessions, waits for the running ones, then closes the connections.
    func close() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (waiters, done) = state.withLock { state -> ([CheckedContinuation<Int?, Never>], Bool) in
                state.closed = true
                defer { state.waiters.removeAll() }
                if state.free.count == readers.count { return (state.waiters, true) }
                state.closer = continuation
                return (state.waiters, false)
            }
            for waiter in waiters { waiter.resume(returning: nil) }
            if done { continuation.resume() }
        }
        for reader in readers { reader.connection.close() }
    }
}

/// A database session was opened inside another one on the same task.
struct NestedSessionError: Error, CustomStringConvertible {
    var description: String { "nested database session: use the db of the enclosing transaction" }
}

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
/// transaction, so every session holds ``AsyncLock`` for its whole duration. Statements run
/// directly on the session's thread (``SQLiteConnectionHandle``), so a write transaction holds the
/// lock only for the microseconds its statements take. The file is in WAL mode with a busy
/// timeout, so other processes (the CLI, a backup) can still read it; a process that holds the
/// write lock for long would make a session wait on its thread for up to that timeout (5 s).
final class SQLiteDriver: DatabaseDriver {
    let engine = DatabaseEngine.sqlite
    private let connection: SQLiteConnectionHandle
    private let database: any SQLDatabase
    private let lock = AsyncLock()
    /// A second connection that only checkpoints the WAL, so the fsyncs of a checkpoint happen
    /// outside the write lock and off the request path (nil for in-memory databases).
    private let checkpointer: SQLiteConnectionHandle?
    private let checkpointLock = AsyncLock()

    private init(connection: SQLiteConnectionHandle, checkpointer: SQLiteConnectionHandle?, logger: Logger) {
        self.connection = connection
        self.checkpointer = checkpointer
        self.database = DirectSQLiteDatabase(
            connection: connection, logger: logger,
            eventLoop: MultiThreadedEventLoopGroup.singleton.any(), queryLogLevel: .trace)
    }

    static func open(path: String?, logger: Logger) async throws -> SQLiteDriver {
        if let path {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        let connection = try SQLiteConnectionHandle(path: path)
        let checkpointer = try path.map { try SQLiteConnectionHandle(path: $0) }
        // A restarting checkpoint waits up to 50 ms for the writer's current transaction.
        try checkpointer?.execute("PRAGMA busy_timeout = 50", []) { _ in }
        let driver = SQLiteDriver(connection: connection, checkpointer: checkpointer, logger: logger)
        let db = driver.database
        if path != nil {
            try await db.raw("PRAGMA journal_mode = WAL").run()
            try await db.raw("PRAGMA synchronous = NORMAL").run()
            // The server checkpoints every 200 ms from the second connection (``maintain()``);
            // committing writers checkpoint themselves only if the WAL outgrows ~40 MB (a backstop
            // for tools that open the database without the server's housekeeping).
            try await db.raw("PRAGMA wal_autocheckpoint = 10000").run()
            try await db.raw("PRAGMA journal_size_limit = 16777216").run()
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

    /// A WAL past this many pages (8 MiB) is restarted by the next checkpoint.
    static let restartThresholdPages = 2_000

    func maintain() async throws {
        guard let checkpointer else { return }
        try await checkpointLock.withLock {
            try await NIOThreadPool.singleton.runIfActive {
                let (walPages, _) = try checkpointer.checkpoint()
                if walPages > Self.restartThresholdPages { try checkpointer.checkpoint(restart: true) }
            }
        }
    }

    func shutdown() async {
        await checkpointLock.withLock { checkpointer?.close() }
        await lock.withLock { connection.close() }
    }
}

/// A database session was opened inside another one on the same task.
struct NestedSessionError: Error, CustomStringConvertible {
    var description: String { "nested database session: use the db of the enclosing transaction" }
}

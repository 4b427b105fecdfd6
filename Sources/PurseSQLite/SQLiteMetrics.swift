import Metrics
import PurseDatabase

/// The SQLite engine's own counters for `/metrics`, through swift-metrics like every other
/// metric. The engine-neutral ones (transactions, commits) are ``DatabaseMetrics``.
struct SQLiteMetrics: Sendable {
    let database: DatabaseMetrics
    /// Time the one writer spent running transaction groups (bodies and `COMMIT`): its growth per
    /// second of wall time is the writer's utilisation; near 1, writes queue behind it.
    let writerBusySeconds: FloatingPointCounter
    let checkpoints: Counter
    let walPages: Meter
    let writerPauses: Counter
    let writerPausedSeconds: FloatingPointCounter
    let deferredRestarts: Counter
    let walTruncations: Counter

    init(factory: any MetricsFactory) {
        database = DatabaseMetrics(factory: factory)
        writerBusySeconds = FloatingPointCounter(label: "purse_db_writer_busy_seconds_total", factory: factory)
        checkpoints = Counter(label: "purse_db_checkpoints_total", factory: factory)
        walPages = Meter(label: "purse_db_wal_pages", factory: factory)
        writerPauses = Counter(label: "purse_db_writer_pauses_total", factory: factory)
        writerPausedSeconds = FloatingPointCounter(label: "purse_db_writer_paused_seconds_total", factory: factory)
        deferredRestarts = Counter(label: "purse_db_wal_restarts_deferred_total", factory: factory)
        walTruncations = Counter(label: "purse_db_wal_truncations_total", factory: factory)
    }
}

/// What only the SQLite engine counts, since the database opened (``SQLiteDriver/sqliteStatistics``).
public struct SQLiteStatistics: Sendable, Equatable {
    /// Time the one writer spent running transaction groups (bodies and `COMMIT`).
    public var writerBusySeconds = 0.0
    /// Checkpoint passes of the server's housekeeping (every 20 ms while writes commit, every
    /// 200 ms when idle, plus the paused ones below); a pass with nothing new to copy costs next
    /// to nothing.
    public var checkpoints = 0
    /// The WAL's size, in pages, at the last checkpoint.
    public var walPages = 0
    /// Times the writer was paused so that the WAL could start again from its beginning, and how
    /// long it was held in all (from when it stopped, not from when the pause was queued).
    public var writerPauses = 0
    public var writerPausedSeconds = 0.0
    /// Restarts put off because the disk was slow to sync at the time.
    public var deferredRestarts = 0
    /// Times an idle server emptied its WAL file.
    public var walTruncations = 0

    public init() {}
}

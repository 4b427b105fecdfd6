/// When the WAL is started again from its beginning (``SQLiteDriver/maintain()``).
struct WALRestartPolicy: Sendable {
    /// A WAL past this many pages (~262 MB of 4 KiB pages) is restarted. Every restart holds the
    /// writer for a few milliseconds (5–10 under load: the last pass copies and syncs what was
    /// committed during the one before) and every connection's request with it, and under load
    /// the WAL grows by up to ~100,000 pages a second (13,000 write transactions a second): at 2,000 pages
    /// restarts came ~15 times a second, at 16,000 five to seven times, and their stalls set the
    /// p99 of writes; at 64,000, about once a second, p99 fell by 1–2 ms. The price is disk space
    /// while writes continue — the WAL file stays near this size; an idle server empties it
    /// (``idleWALBytes``) — and a longer WAL to read back after a crash (~1 s).
    var thresholdPages = 64_000
    /// A first checkpoint pass slower than this means the disk is slow to sync, and the restart
    /// waits for a quicker moment; nil restarts whatever the disk.
    var slowPass: Duration? = .milliseconds(100)
    /// Past this many pages (~524 MB) the WAL is restarted however slow the disk: the writer's
    /// own checkpoint (``writerCheckpointPages``) would otherwise run inside the write lock.
    var forcedPages = 128_000
    /// Once writes stop, a WAL file larger than this (4 MiB) is emptied.
    var idleWALBytes = 4 << 20
    /// Unpaused passes (each with a sync of the database file) run before the paused one, at
    /// most this many and only while a pass takes longer than ``quickPass``.
    var catchUpPasses = 3
    var quickPass: Duration = .milliseconds(1)

    /// `wal_autocheckpoint` of the writer: its own checkpoint, fsyncs and all, inside the write
    /// lock — a backstop past the forced restart, for when the server's checkpoints stop.
    var writerCheckpointPages: Int { forcedPages + forcedPages / 4 }

    /// `journal_size_limit`: a WAL that grew past the forced restart (the server's checkpoints
    /// stopped, or a slow disk put restarts off) is cut back to this at its next restart; one
    /// that stays below it keeps its blocks from one cycle to the next.
    var journalSizeLimitBytes: Int { forcedPages * 4_096 }

    /// Whether to hold writes for the last pass of a restart. That pass's time is mostly its two
    /// fsyncs: when the disk is slow to sync (0.1–2 s while another process writes heavily,
    /// and the first pass shows it), every write would wait that long, so the restart is
    /// put off while the WAL grows — until it nears the writer's own backstop.
    func shouldPause(walPages: Int, firstPass: Duration) -> Bool {
        guard walPages > thresholdPages else { return false }
        guard let slowPass else { return true }
        return firstPass <= slowPass || walPages > forcedPages
    }
}

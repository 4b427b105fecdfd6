import PurseSQLite
import Testing

/// The engine's hooks were validated against one SQLite: the one sqlite-nio 1.13.2 bundles.
@Suite("SQLite version")
struct SQLiteVersionTests {
    static let validated = "3.54.1"

    /// A new SQLite (a sqlite-nio update) must be validated before it is used: this test names
    /// what to check, then its expected version is moved forward.
    @Test func theBundledSQLiteIsTheOneTheHooksWereValidatedWith() {
        let bundled = SQLiteTuning.sqliteVersion
        #expect(bundled == Self.validated, """
            sqlite-nio now bundles SQLite \(bundled), not \(Self.validated). Before moving this test forward, re-validate \
            against the new sqlite3.c: PageCacheParking (PENDING_BYTE and balance_nonroot still park split pages under \
            the lock-byte page number; pcache1's truncate walk), CombinedWALWrites (WAL frame and commit-frame layout, \
            xWrite call pattern, SQLITE_FCNTL_JOURNAL_POINTER), SubJournalChunkPool (MEMJOURNAL_DFLT_FILECHUNKSIZE is \
            still 1 KiB, SQLITE_CONFIG_MALLOC semantics), then run the PurseSQLite suites with and without \
            PURSE_SQLITE_TUNING=none and the benchmark side by side (benchmarks/ab.sh).
            """)
    }
}

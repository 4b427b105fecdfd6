import Foundation
import Logging
import PurseDatabase
@testable import PurseSQLite
import SQLKit
import Synchronization
import Testing

/// The SQLite connection that runs statements on the caller's thread with cached prepared
/// statements: values round-trip exactly, failures leave it usable, the cache never changes results.
@Suite("SQLite connection")
struct SQLiteConnectionTests {
    struct Sample: Codable, Equatable, Sendable {
        var id: Int
        var name: String
        var amount: Int64
        var ratio: Double
        var flag: Bool
        var payload: Data
        var note: String?
    }

    @Test func valuesRoundTripExactly() async throws {
        try await withSQLiteFile { database in
            let samples = [
                Sample(id: 1, name: "Adaeze Ọkafọ́r 🇳🇬", amount: .max, ratio: 0.1, flag: true, payload: Data([0, 255, 1, 0]), note: nil),
                Sample(id: 2, name: "", amount: .min, ratio: -2.5e-300, flag: false, payload: Data(), note: "with\u{0}nul"),
            ]
            let fetched = try await database.transaction { db -> [Sample] in
                try await db.raw("CREATE TABLE samples (id INTEGER PRIMARY KEY, name TEXT NOT NULL, amount INTEGER NOT NULL, ratio REAL NOT NULL, flag INTEGER NOT NULL, payload BLOB NOT NULL, note TEXT)").run()
                for sample in samples {
                    try await db.insert(into: "samples").model(sample).run()
                }
                return try await db.select().columns("*").from("samples").orderBy("id").all(decoding: Sample.self)
            }
            #expect(fetched == samples)
        }
    }

    /// Plain columns read through the row's fast paths (text, integer, their optionals, NULL)
    /// and everything else through SQLiteKit's decoder.
    @Test func columnsDecodeAsTheirSwiftTypes() async throws {
        try await withSQLiteFile { database in
            let row = try await database.read { db in
                try await db.raw("SELECT '42' AS t, \(bind: Int64.max) AS i, NULL AS n, \(bind: true) AS b, \(bind: 1.5) AS r").first()
            }
            let columns = try #require(row)
            #expect(try columns.decode(column: "t", as: String.self) == "42")
            #expect(try columns.decode(column: "t", as: String?.self) == "42")
            #expect(try columns.decode(column: "i", as: Int.self) == Int.max)
            #expect(try columns.decode(column: "i", as: Int64.self) == .max)
            #expect(try columns.decode(column: "i", as: Int?.self) == Int.max)
            #expect(try columns.decode(column: "b", as: Bool.self) == true)
            #expect(try columns.decode(column: "b", as: Int.self) == 1)
            #expect(try columns.decode(column: "r", as: Double.self) == 1.5)
            #expect(try columns.decode(column: "n", as: String?.self) == nil)
            #expect(try columns.decode(column: "n", as: Int?.self) == nil)
            #expect(try columns.decode(column: "n", as: Int64?.self) == nil)
            #expect(throws: DecodingError.self) { try columns.decode(column: "n", as: String.self) }
            #expect(throws: DecodingError.self) { try columns.decode(column: "missing", as: String.self) }
        }
    }

    @Test func aFailedStatementLeavesTheConnectionUsable() async throws {
        try await withSQLiteFile { database in
            try await database.transaction { db in
                try await db.raw("CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE CHECK (length(name) > 0))").run()
            }
            let insert: @Sendable (String) async throws -> Void = { name in
                try await database.transaction { db in
                    try await db.raw("INSERT INTO things (name) VALUES (\(bind: name))").run()
                }
            }
            try await insert("one")
            let duplicate = await #expect(throws: SQLiteStatementError.self) { try await insert("one") }
            #expect(duplicate?.message == "UNIQUE constraint failed: things.name")
            let empty = await #expect(throws: SQLiteStatementError.self) { try await insert("") }
            #expect(empty?.message.hasPrefix("CHECK constraint failed") == true)
            // The same cached statement, reset after each failure, still works — and the
            // failed transactions were rolled back.
            try await insert("two")
            let names = try await database.read { db in
                try await db.raw("SELECT name FROM things ORDER BY id").all().map { try $0.decode(column: "name", as: String.self) }
            }
            #expect(names == ["one", "two"])
            let syntax = await #expect(throws: SQLiteStatementError.self) {
                try await database.read { db in try await db.raw("SELEC nonsense").run() }
            }
            #expect(syntax?.message == #"near "SELEC": syntax error"#)
        }
    }

    @Test func moreDistinctStatementsThanTheCacheHolds() async throws {
        try await withSQLiteFile { database in
            let sums = try await database.read { db -> [Int] in
                var sums: [Int] = []
                for round in 0..<2 {
                    for value in 0..<300 {
                        // Distinct SQL text per value, so the cache fills and is emptied.
                        let row = try await db.raw("SELECT \(unsafeRaw: String(value)) + \(bind: round) AS total").first()
                        sums.append(try row?.decode(column: "total", as: Int.self) ?? -1)
                    }
                }
                return sums
            }
            #expect(sums == Array(0..<300) + Array(1..<301))
        }
    }

    /// The server's housekeeping checkpoints the WAL from its own connection while the main one
    /// keeps working, and nothing committed is lost across a reopen.
    @Test func checkpointsRunBesideWritesAndKeepEverything() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-sqlite-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("test.sqlite").path
        let database = try await openSQLite(path)
        try await database.transaction { db in try await db.raw("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)").run() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for _ in 0..<50 { try await database.maintain() }
            }
            group.addTask {
                for batch in 0..<50 {
                    try await database.transaction { db in
                        for item in 0..<20 {
                            try await db.raw("INSERT INTO notes (body) VALUES (\(bind: "note \(batch)-\(item) " + String(repeating: "x", count: 200)))").run()
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await database.maintain()
        await database.shutdown()

        let reopened = try await openSQLite(path)
        let count = try await reopened.read { db in try await db.raw("SELECT COUNT(*) AS n FROM notes").first()?.decode(column: "n", as: Int.self) }
        #expect(count == 1_000)
        await reopened.shutdown()

        let memory = try await openSQLite(nil)
        try await memory.maintain()
        await memory.shutdown()
    }

    /// A checkpoint copies the WAL into the database file: afterwards the file alone, without
    /// its WAL, holds every committed row. (The checkpointing connection once had never read the
    /// file, so SQLite did not know it was in WAL mode and each checkpoint quietly did nothing;
    /// the writer then checkpointed by itself, fsyncs and all, while every request waited.)
    @Test func aCheckpointPutsEverythingCommittedIntoTheDatabaseFile() async throws {
        try await withSQLiteFile { database, path in
            try await database.transaction { db in try await db.raw("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)").run() }
            for batch in 0..<10 {
                try await database.transaction { db in
                    for item in 0..<10 { try await db.raw("INSERT INTO notes (body) VALUES (\(bind: "note \(batch)-\(item)"))").run() }
                }
            }
            #expect(database.sqliteStatistics.checkpoints == 0)
            try await database.maintain()
            #expect(database.sqliteStatistics.checkpoints == 1)
            #expect(database.sqliteStatistics.walPages > 0)
            let copy = path + "-copy.sqlite"
            try FileManager.default.copyItem(atPath: path, toPath: copy)

            let alone = try await openSQLite(copy)
            let count = try await alone.read { db in try await db.raw("SELECT COUNT(*) AS n FROM notes").first()?.decode(column: "n", as: Int.self) }
            #expect(count == 100)
            await alone.shutdown()
        }
    }

    /// Creates the `pages` table of the WAL tests.
    func createPages(in database: Database) async throws {
        try await database.transaction { db in try await db.raw("CREATE TABLE pages (id INTEGER PRIMARY KEY, body BLOB NOT NULL)").run() }
    }

    /// One transaction inserting `count` rows of about a page (4 KiB) each.
    func insertPages(_ count: Int, into database: Database) async throws {
        let page = Data(repeating: 7, count: 3_000)
        try await database.transaction { db in
            for _ in 0..<count { try await db.raw("INSERT INTO pages (body) VALUES (\(bind: page))").run() }
        }
    }

    /// 3,000 pages written, then one round of housekeeping: past the small policy's threshold.
    func fillPastTheThreshold(_ database: Database) async throws {
        try await createPages(in: database)
        for _ in 0..<30 { try await insertPages(100, into: database) }
        try await database.maintain()
    }

    /// The next transaction starts the WAL from its beginning, and nothing was lost.
    func expectTheWALStartsAgain(_ database: Database) async throws {
        try await insertPages(1, into: database)
        try await database.maintain()
        #expect(database.sqliteStatistics.walPages < 50, "the WAL did not start again: \(database.sqliteStatistics.walPages) pages")
        #expect(try await countPages(in: database) == 3_001)
    }

    func countPages(in database: Database) async throws -> Int? {
        try await database.read { db in try await db.raw("SELECT COUNT(*) AS n FROM pages").first()?.decode(column: "n", as: Int.self) }
    }

    /// Under a steady stream of commits the WAL is started again from its beginning once it
    /// passes its threshold (here 2,000 pages, 8 MiB), so its file stays near that size — plus what was committed
    /// during one round of housekeeping (here at most eight transactions of 100 pages). Whether a
    /// round needs its paused pass here depends on timing (when every writer happens to be in
    /// the housekeeping at once, the WAL restarts by itself), so only the bound is checked.
    /// Without the restart it grows to 40 MB (here), where the writer's own checkpoint takes over.
    @Test func steadyWritesKeepTheWALBounded() async throws {
        try await withSQLiteFile(walRestarts: .small()) { database, path in
            try await createPages(in: database)
            // Eight writers, so transactions queue and commit in groups with the checkpoint's
            // pauses between them; each runs the housekeeping after each of its transactions.
            let largest = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        var largest = 0
                        for _ in 0..<15 {
                            try await insertPages(100, into: database)
                            try await database.maintain()
                            let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
                            largest = max(largest, size)
                        }
                        return largest
                    }
                }
                return try await group.reduce(0, max)
            }
            #expect(try await countPages(in: database) == 12_000)
            #expect(largest > 0)
            #expect(largest < 16_000_000, "WAL grew to \(largest) bytes")
        }
    }

    /// A WAL past 2,000 pages costs one pause of the writer: the paused pass copies what is left,
    /// and the next transaction starts the WAL from its beginning. `/metrics` shows the counters.
    @Test func aLargeWALStartsAgainAfterOnePause() async throws {
        try await withSQLiteFile(walRestarts: .small()) { database in
            try await fillPastTheThreshold(database)
            let statistics = database.sqliteStatistics
            #expect(statistics.writerPauses == 1)
            #expect(statistics.writerPausedSeconds > 0)
            // The first pass, at least one catch-up pass (the first took longer than a quick
            // pass: it copied 3,000 pages), the paused one.
            let policy = WALRestartPolicy.small()
            #expect((3...(2 + policy.catchUpPasses)).contains(statistics.checkpoints), "\(statistics.checkpoints) passes")
            #expect(statistics.walPages >= 3_000)
            try await expectTheWALStartsAgain(database)
            #expect(database.sqliteStatistics.writerPauses == 1)
        }
    }

    /// Once writes stop — the second pass in a row without a commit — a WAL file past the idle
    /// limit is emptied (nothing lost, and writing goes on after); a reader still on the WAL puts
    /// it off (without waiting: ``truncatingTheWALDoesNotWait()``), and the next idle pass does it.
    @Test func anIdleServerEmptiesItsWAL() async throws {
        var policy = WALRestartPolicy.small()
        policy.idleWALBytes = 64 << 10
        try await withSQLiteFile(walRestarts: policy) { database, path in
            let wal = path + "-wal"
            func walBytes() throws -> Int { try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int ?? -1 }
            try await createPages(in: database)
            try await insertPages(50, into: database)
            // A reader whose snapshot takes the WAL's frames (another connection, as a backup
            // would be): the WAL cannot start again under it.
            let reader = try sqliteConnection(path: path)
            try reader.execute("BEGIN", []) { _ in }
            try reader.execute("SELECT COUNT(*) AS n FROM pages", []) { _ in }
            #expect(try await database.maintain() == .busy)
            #expect(try walBytes() > 64 << 10)
            #expect(try await database.maintain() == .idle)
            #expect(database.sqliteStatistics.walTruncations == 0, "one idle pass is not yet a stop")
            #expect(try walBytes() > 64 << 10)

            #expect(try await database.maintain() == .idle)
            #expect(database.sqliteStatistics.walTruncations == 0)
            #expect(try walBytes() > 64 << 10)
            try reader.execute("COMMIT", []) { _ in }
            reader.close()

            #expect(try await database.maintain() == .idle)
            #expect(database.sqliteStatistics.walTruncations == 1)
            #expect(try walBytes() == 0)
            #expect(try await countPages(in: database) == 50)
            // Small enough now: later idle passes leave it alone.
            #expect(try await database.maintain() == .idle)
            #expect(database.sqliteStatistics.walTruncations == 1)

            try await insertPages(5, into: database)
            #expect(try await database.maintain() == .busy)
            #expect(try await countPages(in: database) == 55)
            #expect(try walBytes() > 0)
        }
    }

    /// The truncating checkpoint never waits: another connection's write lock makes it give up
    /// at once, and the connection's own busy timeout is as it was afterwards.
    @Test func truncatingTheWALDoesNotWait() throws {
        try withTemporaryDirectory("purse-truncate") { directory in
            let path = directory.appendingPathComponent("db.sqlite").path
            let writer = try sqliteConnection(path: path)
            try writer.execute("PRAGMA journal_mode = WAL", []) { _ in }
            try writer.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY)", []) { _ in }
            let checkpointer = try sqliteConnection(path: path)
            // Waiting would take the whole 10 s.
            try checkpointer.execute("PRAGMA busy_timeout = 10000", []) { _ in }
            try checkpointer.execute("SELECT COUNT(*) FROM notes", []) { _ in }
            try writer.execute("BEGIN IMMEDIATE", []) { _ in }
            try writer.execute("INSERT INTO notes (id) VALUES (1)", []) { _ in }
            let started = ContinuousClock.now
            #expect(try checkpointer.truncateWAL() == false)
            #expect(ContinuousClock.now - started < .seconds(5))
            var timeout = 0
            try checkpointer.execute("PRAGMA busy_timeout", []) { row in timeout = (try? row.decode(column: "timeout", as: Int.self)) ?? -1 }
            #expect(timeout == 10000)
            try writer.execute("COMMIT", []) { _ in }
            #expect(try checkpointer.truncateWAL() == true)
            let size = try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int
            #expect(size == 0)
            checkpointer.close()
            writer.close()
        }
    }

    /// Without catch-up passes the paused pass comes straight after the first (and syncs every page
    /// copied since the last restart); the WAL starts again all the same.
    @Test func withoutCatchUpPassesTheRestartPausesAfterTheFirstPass() async throws {
        var policy = WALRestartPolicy.small()
        policy.catchUpPasses = 0
        try await withSQLiteFile(walRestarts: policy) { database in
            try await fillPastTheThreshold(database)
            #expect(database.sqliteStatistics.writerPauses == 1)
            #expect(database.sqliteStatistics.checkpoints == 2)
            try await expectTheWALStartsAgain(database)
        }
    }

    /// The database file can be synced through SQLite's own file handle (the catch-up passes do);
    /// a closed connection refuses.
    @Test func theDatabaseFileSyncsThroughSQLite() throws {
        try withTemporaryDirectory("purse-sync") { directory in
            let connection = try sqliteConnection(path: directory.appendingPathComponent("db.sqlite").path)
            try connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY)", []) { _ in }
            try connection.execute("INSERT INTO notes (id) VALUES (1)", []) { _ in }
            try connection.syncDatabaseFile()
            connection.close()
            #expect(throws: SQLiteStatementError.self) { try connection.syncDatabaseFile() }
        }
    }

    /// When the disk is slow to sync, the paused pass would hold every write as long as the first
    /// pass's fsyncs took, so the restart waits — until the WAL nears the writer's own backstop.
    @Test func aRestartWaitsWhileTheDiskIsSlowToSync() async throws {
        // Every first pass counts as slow here.
        try await withSQLiteFile(walRestarts: WALRestartPolicy.small(slowPass: .zero)) { database in
            try await fillPastTheThreshold(database)
            let statistics = database.sqliteStatistics
            #expect(statistics.walPages >= 3_000)
            #expect(statistics.writerPauses == 0)
            #expect(statistics.deferredRestarts == 1)
        }
        // Past `forcedPages` it restarts all the same.
        try await withSQLiteFile(walRestarts: WALRestartPolicy.small(slowPass: .zero, forcedPages: 2_500)) { database in
            try await fillPastTheThreshold(database)
            #expect(database.sqliteStatistics.writerPauses == 1)
            #expect(database.sqliteStatistics.deferredRestarts == 0)
            try await expectTheWALStartsAgain(database)
        }
    }

    /// Housekeeping comes every 20 ms while writes commit and every 200 ms otherwise: a pass says
    /// whether the writer committed since the pass before, and the maintenance service waits by it.
    @Test func housekeepingKeepsPaceWithTheWrites() async throws {
        try await withSQLiteFile { database in
            try await database.transaction { db in try await db.raw("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)").run() }
            #expect(try await database.maintain() == .busy)
            #expect(try await database.maintain() == .idle)
            #expect(try await database.maintain() == .idle)
            try await database.transaction { db in try await db.raw("INSERT INTO notes (body) VALUES ('one')").run() }
            #expect(try await database.maintain() == .busy)
            #expect(try await database.maintain() == .idle)
            // A read commits nothing; a transaction that rolls back neither.
            _ = try await database.read { db in try await db.raw("SELECT COUNT(*) AS n FROM notes").first() }
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                try await database.transaction { db in
                    try await db.raw("INSERT INTO notes (body) VALUES ('two')").run()
                    throw Refused()
                }
            }
            #expect(try await database.maintain() == .idle)
            #expect(database.sqliteStatistics.checkpoints == 6)
            // A round that comes after the database closed (the server stops it at any moment)
            // does nothing instead of failing on the closed connection.
            try await database.transaction { db in try await db.raw("INSERT INTO notes (body) VALUES ('three')").run() }
            await database.shutdown()
            #expect(try await database.maintain() == .idle)
            #expect(database.sqliteStatistics.checkpoints == 6)
        }
        let memory = try await openSQLite(nil)
        try await memory.transaction { db in try await db.raw("CREATE TABLE notes (id INTEGER PRIMARY KEY)").run() }
        #expect(try await memory.maintain() == .idle, "an in-memory database has no WAL to copy")
        await memory.shutdown()
    }

    @Test func theRestartPolicy() {
        let policy = WALRestartPolicy.small(slowPass: .milliseconds(100))
        #expect(!policy.shouldPause(walPages: 1_500, firstPass: .milliseconds(5)))
        #expect(policy.shouldPause(walPages: 2_500, firstPass: .milliseconds(30)))
        #expect(policy.shouldPause(walPages: 2_500, firstPass: .milliseconds(100)))
        #expect(!policy.shouldPause(walPages: 2_500, firstPass: .milliseconds(101)))
        #expect(!policy.shouldPause(walPages: 8_000, firstPass: .seconds(2)))
        #expect(policy.shouldPause(walPages: 8_001, firstPass: .seconds(2)))
        #expect(WALRestartPolicy.small().shouldPause(walPages: 2_500, firstPass: .seconds(2)))
        #expect(!WALRestartPolicy.small().shouldPause(walPages: 2_000, firstPass: .zero))
        // The server's: restarts past ~262 MB of WAL, forced past ~524 MB, the writer's own
        // checkpoint a quarter beyond that, the WAL file cut back to ~524 MB at a restart, and
        // emptied past 4 MiB once writes stop.
        let server = WALRestartPolicy()
        #expect(server.thresholdPages == 64_000 && server.forcedPages == 128_000)
        #expect(server.writerCheckpointPages == 160_000)
        #expect(server.journalSizeLimitBytes == 524_288_000)
        #expect(server.idleWALBytes == 4_194_304)
        #expect(!server.shouldPause(walPages: 64_000, firstPass: .zero))
        #expect(server.shouldPause(walPages: 64_001, firstPass: .milliseconds(100)))
    }

    /// The writer connection's backstop checkpoint and WAL size limit follow the policy.
    @Test func theWritersPragmasFollowThePolicy() async throws {
        for policy in [WALRestartPolicy(), .small()] {
            try await withSQLiteFile(walRestarts: policy) { database in
                let (autocheckpoint, limit) = try await database.transaction { db in
                    (try await db.raw("PRAGMA wal_autocheckpoint").first()?.decode(column: "wal_autocheckpoint", as: Int.self),
                     try await db.raw("PRAGMA journal_size_limit").first()?.decode(column: "journal_size_limit", as: Int.self))
                }
                #expect(autocheckpoint == policy.writerCheckpointPages)
                #expect(limit == policy.journalSizeLimitBytes)
            }
        }
    }
}

extension WALRestartPolicy {
    /// The mechanism at a size tests fill quickly: restarts past 2,000 pages, forced past 8,000.
    static func small(slowPass: Duration? = nil, forcedPages: Int = 8_000) -> WALRestartPolicy {
        WALRestartPolicy(thresholdPages: 2_000, slowPass: slowPass, forcedPages: forcedPages)
    }
}

@Suite("SQL statements")
struct SQLStatementTests {
    /// Parsed once: SQLite's `?n` spelling, the text between parameters, how many values it takes.
    @Test func parametersAreNumberedAsWritten() {
        let statement = DatabaseStatement("UPDATE t SET a = $2 + $10 WHERE id = $1 AND b = $2 AND c = '$x' AND d = $0")
        #expect(statement.sqliteText == "UPDATE t SET a = ?2 + ?10 WHERE id = ?1 AND b = ?2 AND c = '$x' AND d = $0")
        #expect(statement.parameters == [2, 10, 1, 2])
        #expect(statement.segments == ["UPDATE t SET a = ", " + ", " WHERE id = ", " AND b = ", " AND c = '$x' AND d = $0"])
        #expect(statement.parameterCount == 10)
        #expect(DatabaseStatement("SELECT 1").parameterCount == 0)
        #expect(DatabaseStatement("SELECT 1").sqliteText == "SELECT 1")
    }
}

@Suite("SQLite writer thread")
struct WriterThreadTests {
    /// Tasks that prefer the thread run on it, one job at a time; it settles its
    /// priority as it starts; after `stop()` a task that still prefers it runs on the shared pool.
    @Test func jobsRunOnTheThreadAndAfterItStops() async throws {
        let thread = WriterThread(name: "test-writer", niceness: 0)
        final class Record: Sendable {
            let seen = Mutex<[Int]>([])
            let threads = Mutex<Set<UInt>>([])
        }
        let record = Record()
        await withTaskGroup(of: Void.self) { group in
            for number in 0..<50 {
                group.addTask(executorPreference: thread) {
                    record.threads.withLock { _ = $0.insert(UInt(pthread_self())) }
                    record.seen.withLock { $0.append(number) }
                }
            }
        }
        #expect(Set(record.seen.withLock { $0 }) == Set(0..<50))
        #expect(record.threads.withLock { $0.count } == 1, "every job ran on the one thread")
        #expect(!thread.priorityRaised, "niceness 0 asks for nothing")
        thread.stop()
        try await Task.sleep(for: .milliseconds(20))
        let late = await Task(executorPreference: thread) { 42 }.value
        #expect(late == 42)
    }

    /// The server's writer asks for nice -10; where the process may raise it (CI runs as root) the
    /// thread's jobs run at that nice value, and where it may not, at the normal one — as
    /// `priorityRaised` says.
    @Test func theWritersThreadRunsAtThePriorityItReports() async throws {
        let thread = WriterThread(name: "test-writer", niceness: SQLiteWriter.niceness)
        let nice = await Task(executorPreference: thread) { getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }.value
        #expect(nice == (thread.priorityRaised ? SQLiteWriter.niceness : 0))
        thread.stop()
    }
}

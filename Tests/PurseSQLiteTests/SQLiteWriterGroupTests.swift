import Foundation
import Logging
import PurseDatabase
@testable import PurseSQLite
import SQLKit
import Synchronization
import PurseTestSupport
import Testing

/// One group of the writer, assembled on purpose: the writer is held by a pause while the bodies
/// queue, so they run as one group in the order they ran in — which the bodies themselves count.
@Suite("SQLite writer groups")
struct SQLiteWriterGroupTests {
    struct Refused: Error {}

    /// Where the next body runs in the group.
    final class RunOrder: Sendable {
        private let next = Atomic(0)
        func take() -> Int { next.add(1, ordering: .relaxed).oldValue }
    }

    /// A writer on a fresh WAL database in a temporary directory, removed after `body`.
    func withWriter(_ body: (SQLiteWriter, SQLiteConnectionHandle) async throws -> Void) async throws {
        try await withTemporaryDirectory("purse-writer") { directory in
            let connection = try sqliteConnection(path: directory.appendingPathComponent("db.sqlite").path)
            try connection.execute("PRAGMA journal_mode = WAL", []) { _ in }
            try connection.execute("PRAGMA temp_store = MEMORY", []) { _ in }
            let writer = SQLiteWriter(database: SQLiteDriver.session(connection, logger: Logger(label: "test")), connection: connection)
            defer { writer.stop() }
            try await body(writer, connection)
        }
    }

    /// Runs `count` transactions as one group: the writer is held by a pause while they queue.
    /// `body` gets its position in the group (the order the bodies run in). Returns what each
    /// transaction returned, or nil where it threw ``Refused``, in position order.
    func runAsOneGroup(
        _ writer: SQLiteWriter, count: Int, _ body: @escaping @Sendable (any SQLDatabase, Int) async throws -> Void
    ) async throws -> [Int?] {
        let (released, release) = AsyncStream<Void>.makeStream()
        let pause = Task { try await writer.paused { for await _ in released { return } } }
        while writer.queued > 0 { try await Task.sleep(for: .milliseconds(1)) }  // the pause is running
        let order = RunOrder()
        let transactions = (0..<count).map { _ in
            Task {
                try await writer.transaction { db in
                    let at = order.take()
                    try await body(db, at)
                    return at
                }
            }
        }
        while writer.queued < count { try await Task.sleep(for: .milliseconds(1)) }
        release.yield()
        try await pause.value
        var outcomes = [Int?](repeating: nil, count: count)
        for transaction in transactions {
            do {
                let at = try await transaction.value
                outcomes[at] = at
            } catch is Refused {}
        }
        return outcomes
    }

    /// The group's first body has no savepoint: when it fails, the transaction is rolled back and
    /// the next body begins another, so the group still commits once, with exactly the bodies that
    /// returned — and a later failure still rolls back to its own savepoint.
    @Test(arguments: [[false, true, false, true, true], [false, false, true], [true, false, true, false], [false]])
    func bodiesCommitOrRollBackAloneWhereverTheyRun(succeeds: [Bool]) async throws {
        try await withWriter { writer, connection in
            try await writer.transaction { db in try await db.raw("CREATE TABLE rows (position INTEGER PRIMARY KEY, note TEXT NOT NULL)").run() }
            let before = writer.statistics
            let outcomes = try await runAsOneGroup(writer, count: succeeds.count) { db, at in
                // Several pages' worth, so the savepoints have pages to keep.
                for copy in 0..<20 {
                    try await db.raw("INSERT INTO rows (position, note) VALUES (\(bind: at * 100 + copy), \(bind: String(repeating: "x", count: 500)))").run()
                }
                if !succeeds[at] { throw Refused() }
            }
            let expected = succeeds.indices.filter { succeeds[$0] }
            #expect(outcomes.compactMap { $0 } == expected)
            var stored: [Int] = []
            try connection.execute("SELECT DISTINCT position / 100 AS at FROM rows ORDER BY at", []) { row in
                stored.append(try row.decode(column: "at", as: Int.self))
            }
            #expect(stored == expected)
            let after = writer.statistics
            #expect(after.commits - before.commits == (expected.isEmpty ? 0 : 1))
            #expect(after.committedTransactions - before.committedTransactions == expected.count)
        }
    }

    /// Savepoints that change many existing pages journal them in the in-memory sub-journal, whose
    /// chunks ``SubJournalChunkPool`` hands out again: a refused body's pages come back from those
    /// chunks exactly, and every body's changes are as it left them.
    @Test(.enabled(if: TestEngines.sqliteTuning.contains(.subJournalChunkPool), "PURSE_SQLITE_TUNING leaves it out"))
    func subJournalChunksAreReusedAndRestorePagesExactly() async throws {
        TestEngines.sqliteTuning.installProcessHooks()
        #expect(SubJournalChunkPool.isInstalled)
        try await withWriter { writer, connection in
            // ~60 pages of rows, each body rewrites every row: every page goes through each savepoint.
            try await writer.transaction { db in
                try await db.raw("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)").run()
                for id in 0..<480 { try await db.raw("INSERT INTO notes (id, body) VALUES (\(bind: id), \(bind: String(repeating: "-", count: 480)))").run() }
            }
            let reusedBefore = SubJournalChunkPool.reused
            let succeeds = [true, false, true, false, true, true]
            let outcomes = try await runAsOneGroup(writer, count: succeeds.count) { db, at in
                let mark = Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(at)))
                try await db.raw("UPDATE notes SET body = \(bind: String(repeating: mark, count: 480)) WHERE id % 2 = 0").run()
                try await db.raw("UPDATE notes SET body = \(bind: String(repeating: mark, count: 470)) WHERE id % 2 = 1").run()
                if !succeeds[at] { throw Refused() }
            }
            #expect(outcomes.compactMap { $0 } == succeeds.indices.filter { succeeds[$0] })

            // The last body that returned wrote last; refused ones left nothing.
            let last = Character(UnicodeScalar(UInt8(ascii: "a") + UInt8(succeeds.lastIndex(of: true)!)))
            var rows = 0
            try connection.execute("SELECT id, body FROM notes ORDER BY id", []) { row in
                let id = try row.decode(column: "id", as: Int.self)
                #expect(try row.decode(column: "body", as: String.self) == String(repeating: last, count: id % 2 == 0 ? 480 : 470), "row \(id)")
                rows += 1
            }
            #expect(rows == 480)
            var integrity: [String] = []
            try connection.execute("PRAGMA integrity_check", []) { row in integrity.append(try row.decode(column: "integrity_check", as: String.self)) }
            #expect(integrity == ["ok"])
            #expect(SubJournalChunkPool.reused > reusedBefore, "the savepoints' chunks came from the pool")
        }
    }
}

import Foundation
@testable import PurseSQLite
import SQLiteNIO
import Testing

/// The VFS that writes each commit to the WAL in one call: commits are one write, every other
/// connection sees each commit as soon as it returns, and what is in the files is always a valid
/// database — after large, spilled and rolled-back transactions too.
@Suite("Combined WAL writes")
struct CombinedWALWritesTests {
    @Test func eachCommitIsOneWrite() throws {
        try withTemporaryDirectory("purse-wal") { directory in
            let writer = try Self.open(directory, combining: true)
            try writer.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, tag TEXT NOT NULL, body BLOB NOT NULL)", []) { _ in }
            try writer.execute("CREATE INDEX rows_tag ON rows (tag)", []) { _ in }
            let before = try #require(writer.walWriteCounts)
            for commit in 0..<50 {
                try writer.execute("BEGIN IMMEDIATE", []) { _ in }
                // Rows on several pages of the table and of the index (random tags): a commit of many frames.
                for row in 0..<20 {
                    try writer.execute("INSERT INTO rows (tag, body) VALUES (?, randomblob(600))", [.text("\(UUID().uuidString)-\(commit)-\(row)")]) { _ in }
                }
                try writer.execute("COMMIT", []) { _ in }
            }
            let after = try #require(writer.walWriteCounts)
            #expect(after.made - before.made == 50)
            #expect(after.requested - before.requested >= 50 * 2 * 5)
        }
    }

    /// A plain connection (the default VFS) reading after every commit sees exactly what was
    /// committed: the commit's frames were in the file before the commit was published.
    @Test func everyCommitIsVisibleToOtherConnectionsAtOnce() throws {
        try withTemporaryDirectory("purse-wal") { directory in
            let writer = try Self.open(directory, combining: true)
            try writer.execute("CREATE TABLE ledger (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL, memo TEXT NOT NULL)", []) { _ in }
            let reader = try Self.open(directory, combining: false)
            var (count, total) = (0, 0)
            for commit in 1...200 {
                try writer.execute("BEGIN IMMEDIATE", []) { _ in }
                for row in 0..<(commit % 7 + 1) {
                    try writer.execute("INSERT INTO ledger (amount, memo) VALUES (?, ?)", [.integer(commit * 10 + row), .text(String(repeating: "m", count: 300))]) { _ in }
                    count += 1
                    total += commit * 10 + row
                }
                try writer.execute("COMMIT", []) { _ in }
                var seen: (Int, Int)?
                try reader.execute("SELECT COUNT(*) AS n, COALESCE(SUM(amount), 0) AS total FROM ledger", []) { row in
                    seen = (try row.decode(column: "n", as: Int.self), try row.decode(column: "total", as: Int.self))
                }
                #expect(seen?.0 == count && seen?.1 == total, "after commit \(commit)")
            }
        }
    }

    /// Transactions larger than the buffer (written as it fills), larger than one write of the
    /// default VFS (written in pieces), spilling their cache mid-transaction (frames written before
    /// the commit, some rewritten), and one rolled back after spilling: a copy of the files taken
    /// with the connection still open — so the WAL is all there is, recovered from the file alone
    /// — holds exactly the committed rows and passes SQLite's integrity check.
    @Test func theFilesAlwaysHoldAValidDatabase() throws {
        try withTemporaryDirectory("purse-wal") { directory in
            let writer = try Self.open(directory, combining: true)
            try writer.execute("PRAGMA wal_autocheckpoint = 0", []) { _ in }
            try writer.execute("PRAGMA cache_size = 16", []) { _ in }
            try writer.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, size INTEGER NOT NULL, body BLOB NOT NULL)", []) { _ in }
            let sizes = [100, 5_000, 200_000, 3_000_000]
            var expected = (count: 0, bytes: 0)
            for (index, size) in sizes.enumerated() {
                try writer.execute("BEGIN IMMEDIATE", []) { _ in }
                for _ in 0..<4 {
                    try writer.execute("INSERT INTO blobs (size, body) VALUES (?, randomblob(?))", [.integer(size), .integer(size)]) { _ in }
                }
                // Rewrites pages the spilled cache already wrote in this transaction.
                try writer.execute("UPDATE blobs SET size = size WHERE id % 2 = ?", [.integer(index % 2)]) { _ in }
                try writer.execute("COMMIT", []) { _ in }
                expected = (expected.count + 4, expected.bytes + 4 * size)
            }
            try writer.execute("BEGIN IMMEDIATE", []) { _ in }
            try writer.execute("INSERT INTO blobs (size, body) VALUES (1, randomblob(2000000))", []) { _ in }
            try writer.execute("ROLLBACK", []) { _ in }
            try writer.execute("INSERT INTO blobs (size, body) VALUES (7, randomblob(7))", []) { _ in }
            expected = (expected.count + 1, expected.bytes + 7)

            let copy = directory.appendingPathComponent("copy")
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            for suffix in ["", "-wal"] {
                try FileManager.default.copyItem(at: directory.appendingPathComponent("db.sqlite\(suffix)"), to: copy.appendingPathComponent("db.sqlite\(suffix)"))
            }
            let recovered = try Self.open(copy, combining: false)
            var check = ""
            try recovered.execute("PRAGMA integrity_check", []) { row in check = try row.decode(column: "integrity_check", as: String.self) }
            #expect(check == "ok")
            var seen = (count: 0, bytes: 0, sizes: 0)
            try recovered.execute("SELECT COUNT(*) AS n, SUM(length(body)) AS bytes, SUM(size) AS sizes FROM blobs", []) { row in
                seen = (try row.decode(column: "n", as: Int.self), try row.decode(column: "bytes", as: Int.self), try row.decode(column: "sizes", as: Int.self))
            }
            #expect(seen.count == expected.count)
            #expect(seen.bytes == expected.bytes)
            #expect(seen.sizes == expected.bytes)
            let counts = try #require(writer.walWriteCounts)
            #expect(counts.made < counts.requested)
        }
    }

    /// Connections opened without it have no counts: their WAL is the default VFS's.
    @Test func onlyItsOwnFilesHaveCounts() throws {
        try withTemporaryDirectory("purse-wal") { directory in
            let plain = try Self.open(directory, combining: false)
            try plain.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)", []) { _ in }
            #expect(plain.walWriteCounts == nil)
            let memory = try sqliteConnection(path: nil)
            #expect(memory.walWriteCounts == nil)
        }
    }

    static func open(_ directory: URL, combining: Bool) throws -> SQLiteConnectionHandle {
        let connection = try sqliteConnection(path: directory.appendingPathComponent("db.sqlite").path, combiningWALWrites: combining)
        try connection.execute("PRAGMA journal_mode = WAL", []) { _ in }
        try connection.execute("PRAGMA synchronous = NORMAL", []) { _ in }
        return connection
    }

}

import Foundation
@testable import PurseSQLite
import PurseTestSupport
import SQLiteNIO
import Testing

/// The page cache that parks split pages under page number 0: it is every connection's cache, the
/// b-tree does park pages through it, and databases of every page size stay intact — across
/// splits, rollbacks of transactions that split, and reads from other connections.
@Suite("Page cache parking", .enabled(if: TestEngines.sqliteTuning.contains(.pageCacheParking), "PURSE_SQLITE_TUNING leaves it out"))
struct PageCacheParkingTests {
    @Test(arguments: [512, 4096, 65536])
    func splitsKeepTheDatabaseIntact(pageSize: Int) throws {
        try withTemporaryDirectory("purse-pcache") { directory in
            let path = directory.appendingPathComponent("db.sqlite").path
            let writer = try sqliteConnection(path: path)
            #expect(PageCacheParking.isInstalled)
            try writer.execute("PRAGMA page_size = \(pageSize)", []) { _ in }
            try writer.execute("PRAGMA journal_mode = WAL", []) { _ in }
            try writer.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, tag TEXT NOT NULL, body BLOB NOT NULL)", []) { _ in }
            try writer.execute("CREATE INDEX rows_tag ON rows (tag)", []) { _ in }
            let parkedBefore = PageCacheParking.parkings

            // Random tags split index pages all over the tree; bodies of several sizes split the table.
            // (Rows per commit grow with the page size, so that large pages split as often.)
            let rows = 25 * max(1, pageSize / 2048)
            var expected = (count: 0, bytes: 0)
            for commit in 0..<40 {
                try writer.execute("BEGIN IMMEDIATE", []) { _ in }
                for row in 0..<rows {
                    let size = (commit * rows + row) % 7 * 150 + 10
                    try writer.execute("INSERT INTO rows (tag, body) VALUES (?, randomblob(?))", [.text(UUID().uuidString), .integer(size)]) { _ in }
                    expected = (expected.count + 1, expected.bytes + size)
                }
                if commit % 5 == 4 {
                    // A transaction that splits pages and is rolled back leaves the committed rows alone.
                    try writer.execute("SAVEPOINT extra", []) { _ in }
                    for _ in 0..<30 {
                        try writer.execute("INSERT INTO rows (tag, body) VALUES (?, randomblob(300))", [.text(UUID().uuidString)]) { _ in }
                    }
                    try writer.execute("ROLLBACK TO extra", []) { _ in }
                    try writer.execute("RELEASE extra", []) { _ in }
                }
                try writer.execute("COMMIT", []) { _ in }
                if commit % 10 == 9 {
                    try writer.execute("DELETE FROM rows WHERE id % 3 = 0 RETURNING length(body) AS size", []) { row in
                        expected = (expected.count - 1, expected.bytes - (try row.decode(column: "size", as: Int.self)))
                    }
                }
            }
            #expect(PageCacheParking.parkings > parkedBefore)

            let reader = try sqliteConnection(path: path)
            for connection in [writer, reader] {
                var check = ""
                try connection.execute("PRAGMA integrity_check", []) { row in check = try row.decode(column: "integrity_check", as: String.self) }
                #expect(check == "ok")
                var seen = (count: 0, bytes: 0)
                try connection.execute("SELECT COUNT(*) AS n, COALESCE(SUM(length(body)), 0) AS bytes FROM rows INDEXED BY rows_tag WHERE tag > ''", []) { row in
                    seen = (try row.decode(column: "n", as: Int.self), try row.decode(column: "bytes", as: Int.self))
                }
                #expect(seen == expected)
            }
        }
    }

}

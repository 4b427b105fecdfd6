import Foundation
import Logging
import PurseDatabase
@testable import PurseSQLite
import SQLKit
import Testing

/// SQLite's write transactions commit in groups and its reads run on read-only connections beside
/// the writer. Neither may change what a caller sees: each transaction commits or rolls back on
/// its own, a caller hears back only after its commit, reads see every commit that preceded them.
@Suite("SQLite group commit and readers")
struct SQLiteWriterTests {
    struct Refused: Error, Equatable { var number: Int }

    func count(_ table: String, in database: Database) async throws -> Int {
        try await database.read { db in
            try await db.raw("SELECT COUNT(*) AS n FROM \(unsafeRaw: table)").first()?.decode(column: "n", as: Int.self) ?? -1
        }
    }

    enum Outcome: Equatable { case committed, refused, constraint }

    /// 300 concurrent transactions, so they queue and run in groups: those whose body throws (after
    /// writing) or whose statement breaks a constraint leave nothing; the rest are all there, and
    /// every caller can read its own row the moment it hears back.
    @Test func eachTransactionOfAGroupCommitsOrRollsBackAlone() async throws {
        try await withSQLiteFile { database in
            try await database.transaction { db in
                try await db.raw("CREATE TABLE items (number INTEGER PRIMARY KEY, label TEXT NOT NULL CHECK (label <> 'bad'))").run()
                try await db.raw("CREATE TABLE audit (number INTEGER NOT NULL)").run()
            }
            let outcomes = try await withThrowingTaskGroup(of: (Int, Outcome).self) { group in
                for number in 0..<300 {
                    group.addTask {
                        do {
                            try await database.transaction { db in
                                try await db.raw("INSERT INTO audit (number) VALUES (\(bind: number))").run()
                                let label = number % 5 == 0 ? "bad" : "item \(number)"
                                try await db.raw("INSERT INTO items (number, label) VALUES (\(bind: number), \(bind: label))").run()
                                if number % 3 == 0 { throw Refused(number: number) }
                            }
                        } catch let refused as Refused {
                            #expect(refused.number == number)
                            return (number, .refused)
                        } catch {
                            return (number, .constraint)
                        }
                        let visible = try await database.read { db in
                            try await db.raw("SELECT number FROM items WHERE number = \(bind: number)").first() != nil
                        }
                        #expect(visible, "transaction \(number) returned before its commit was visible")
                        return (number, .committed)
                    }
                }
                return try await group.reduce(into: [Int: Outcome]()) { $0[$1.0] = $1.1 }
            }
            for number in 0..<300 {
                let expected: Outcome = number % 5 == 0 ? .constraint : number % 3 == 0 ? .refused : .committed
                #expect(outcomes[number] == expected, "transaction \(number)")
            }
            let committed = (0..<300).filter { $0 % 5 != 0 && $0 % 3 != 0 }.count
            #expect(try await count("items", in: database) == committed)
            #expect(try await count("audit", in: database) == committed)
        }
    }

    /// A deferred foreign key is checked only at `COMMIT`; in a group that would fail everyone's
    /// commit, so the offending transaction is refused alone when its body ends.
    @Test func aDeferredForeignKeyViolationFailsOnlyItsOwnTransaction() async throws {
        try await withSQLiteFile { database in
            try await database.transaction { db in
                try await db.raw("CREATE TABLE parents (id INTEGER PRIMARY KEY)").run()
                try await db.raw("""
                    CREATE TABLE children (id INTEGER PRIMARY KEY,
                    parent_id INTEGER NOT NULL REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)
                    """).run()
                try await db.raw("INSERT INTO parents (id) VALUES (1)").run()
            }
            let failures = try await withThrowingTaskGroup(of: Bool.self) { group in
                for number in 0..<100 {
                    group.addTask {
                        do {
                            try await database.transaction { db in
                                let parent = number % 10 == 0 ? 999 : 1
                                try await db.raw("INSERT INTO children (id, parent_id) VALUES (\(bind: number), \(bind: parent))").run()
                            }
                            return false
                        } catch {
                            return true
                        }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(failures == 10)
            #expect(try await count("children", in: database) == 90)
        }
    }

    @Test func readsCannotWrite() async throws {
        try await withSQLiteFile { database in
            try await database.transaction { db in try await db.raw("CREATE TABLE notes (body TEXT NOT NULL)").run() }
            let error = await #expect(throws: SQLiteStatementError.self) {
                try await database.read { db in try await db.raw("INSERT INTO notes (body) VALUES ('sneaky')").run() }
            }
            #expect(error?.message == "attempt to write a readonly database")
            #expect(try await count("notes", in: database) == 0)
        }
    }

    /// A session opened inside a transaction's body would wait for the writer that is running it
    /// (or, for a read, miss the body's uncommitted writes): it is refused, and the transaction
    /// that tried it rolls back.
    @Test func sessionsInsideATransactionAreRefused() async throws {
        try await withSQLiteFile { database in
            try await database.transaction { db in try await db.raw("CREATE TABLE notes (body TEXT NOT NULL)").run() }
            await #expect(throws: NestedSessionError.self) {
                try await database.transaction { db in
                    try await db.raw("INSERT INTO notes (body) VALUES ('outer')").run()
                    _ = try await database.read { inner in try await inner.raw("SELECT 1 AS one").first() }
                }
            }
            await #expect(throws: NestedSessionError.self) {
                try await database.transaction { db in
                    try await db.raw("INSERT INTO notes (body) VALUES ('outer')").run()
                    try await database.transaction { inner in try await inner.raw("INSERT INTO notes (body) VALUES ('inner')").run() }
                }
            }
            #expect(try await count("notes", in: database) == 0)
        }
    }

    /// An in-memory database has one connection, so its reads queue with the writes.
    @Test func inMemoryDatabasesReadThroughTheWriter() async throws {
        let database = try await openSQLite(nil)
        try await database.transaction { db in
            try await db.raw("CREATE TABLE notes (body TEXT NOT NULL)").run()
            try await db.raw("INSERT INTO notes (body) VALUES ('kept')").run()
        }
        let bodies = try await withThrowingTaskGroup(of: [String].self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await database.read { db in
                        try await db.raw("SELECT body FROM notes").all().map { try $0.decode(column: "body", as: String.self) }
                    }
                }
            }
            return try await group.reduce(into: [[String]]()) { $0.append($1) }
        }
        #expect(bodies == Array(repeating: ["kept"], count: 20))
        await database.shutdown()
    }
}

import Foundation
import Logging
import PurseDatabase
import PurseFormats
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// The database seam every store stands on, held to one behaviour on each engine: SQLite always,
/// PostgreSQL when `PURSE_TEST_POSTGRES_URL` is set.
@Suite("Database seam")
struct DatabaseSeamTests {
    static let logger = Logger(label: "purse.test.database")

    func withDatabase(_ engine: DatabaseEngine, _ body: (Database) async throws -> Void) async throws {
        let place = try await TestDatabase.make(engine)
        let database = try await Database.open(url: place.url, logger: Self.logger)
        do {
            try await body(database)
        } catch {
            await database.shutdown()
            await place.dispose()
            throw error
        }
        await database.shutdown()
        await place.dispose()
    }

    static let notes = Migration("seam_0001_notes", [
        "CREATE TABLE seam_notes (id BIGINT PRIMARY KEY, body TEXT NOT NULL, amount BIGINT NOT NULL CHECK (amount >= 0))",
    ])

    // MARK: Typed values

    enum NoteTag {}
    typealias NoteID = Tagged<NoteTag, Int64>
    enum Mood: String { case calm, tense }

    @Test("a typed id binds as its raw value, and a stored raw value reads back typed or as UnreadableColumn", arguments: TestEngines.all)
    func typedValues(_ engine: DatabaseEngine) async throws {
        try await withDatabase(engine) { database in
            try await Migrator(database: database, logger: Self.logger).run([Self.notes])
            let id: NoteID = 7
            try await database.transaction { db in
                try await db.raw("INSERT INTO seam_notes (id, body, amount) VALUES (\(bind: id), \(bind: Mood.calm.rawValue), 1)").run()
                try await db.raw("INSERT INTO seam_notes (id, body, amount) VALUES (8, 'glad', 1)").run()
            }
            try await database.read { db in
                let row = try #require(try await db.raw("SELECT id, body FROM seam_notes WHERE id = \(bind: id)").first())
                #expect(try row.decode(column: "id", as: NoteID.self, of: "seam_notes") == id)
                #expect(try row.decode(column: "body", as: Mood.self, of: "seam_notes") == .calm)
                let other = try #require(try await db.raw("SELECT body, NULL AS absent FROM seam_notes WHERE id = 8").first())
                #expect(throws: UnreadableColumn.self) { try other.decode(column: "body", as: Mood.self, of: "seam_notes") }
                #expect(try other.decode(column: "absent", as: Mood?.self, of: "seam_notes") == nil)
            }
        }
    }

    // MARK: Statements

    @Test("numbered parameters: repeated, in any order, spelled for SQLite")
    func parameters() throws {
        let statement = DatabaseStatement("SELECT $2 AS b, $1 AS a, $2 AS again")
        #expect(statement.parameters == [2, 1, 2])
        #expect(statement.parameterCount == 2)
        #expect(statement.sqliteText == "SELECT ?2 AS b, ?1 AS a, ?2 AS again")
        #expect(statement.segments.count == statement.parameters.count + 1)
        #expect(DatabaseStatement("SELECT $10, $1").parameters == [10, 1], "more than one digit")
        #expect(DatabaseStatement("SELECT '$' || 'x'").parameterCount == 0, "a dollar sign not before a digit is text")
        #expect(DatabaseStatement("SELECT $1, $1").cacheKey != DatabaseStatement("SELECT $1, $1").cacheKey,
                "each statement has its own cache key")
    }

    @Test("a statement runs with its values, and refuses the wrong number of them", arguments: TestEngines.all)
    func runsStatements(_ engine: DatabaseEngine) async throws {
        try await withDatabase(engine) { database in
            try await Migrator(database: database, logger: Self.logger).run([Self.notes])
            let insert = DatabaseStatement("INSERT INTO seam_notes (id, body, amount) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
            let inserted = try await database.transaction { db in
                try await db.insertedRows(insert, [.integer(1), .text("first"), .integer(Int64.max)])
            }
            #expect(inserted == 1)
            let again = try await database.transaction { db in
                try await db.insertedRows(insert, [.integer(1), .text("other"), .integer(5)])
            }
            #expect(again == 0, "ON CONFLICT DO NOTHING inserts nothing, and says so")

            let select = DatabaseStatement("SELECT body, amount FROM seam_notes WHERE id = $1 AND amount >= $2 AND id = $1")
            let rows = try await database.read { db in try await db.query(select, [.integer(1), .integer(0)]) }
            #expect(rows.count == 1)
            #expect(try rows.first?.decode(column: "body", as: String.self) == "first")
            #expect(try rows.first?.decode(column: "amount", as: Int64.self) == Int64.max, "64-bit integers round-trip")

            await #expect(throws: SQLStatementValuesError.self) {
                _ = try await database.read { db in try await db.query(select, [.integer(1)]) }
            }
        }
    }

    // MARK: Declared queries

    @Test("a declared query's rows come back typed, by position, NULL as nil; a column of another type is refused", arguments: TestEngines.all)
    func declaredRows(_ engine: DatabaseEngine) async throws {
        try await withDatabase(engine) { database in
            try await Migrator(database: database, logger: Self.logger).run([Self.notes])
            let rows = try await database.transaction { db in
                try await db.run(DatabaseStatement("INSERT INTO seam_notes (id, body, amount) VALUES (1, 'first', 9223372036854775807), (2, 'second', 0)"), [])
                return try await db.rows(NoteQuery.self, [.integer(0)])
            }
            #expect(rows.map(\.id) == [1, 2])
            #expect(rows.map(\.body) == ["first", "second"])
            #expect(rows.first?.amount == Int64.max, "64-bit integers round-trip")
            #expect(rows.allSatisfy { $0.absent == nil }, "NULL reads as nil")
            let none = try await database.read { db in try await db.rows(NoteQuery.self, [.integer(3)]) }
            #expect(none.isEmpty)

            await #expect(throws: DatabaseColumnError.self, "text declared as an integer") {
                _ = try await database.read { db in try await db.rows(MisdeclaredQuery.self, []) }
            }
            await #expect(throws: DatabaseColumnError.self, "fewer columns declared than returned") {
                _ = try await database.read { db in try await db.rows(ShortQuery.self, []) }
            }
            await #expect(throws: SQLValueTypeError.self, "a value of another type than the parameter's") {
                _ = try await database.read { db in try await db.rows(NoteQuery.self, [.text("1")]) }
            }
        }
    }

    // MARK: Transactions

    @Test("a transaction's last statement commits with it, and its failure rolls the whole transaction back", arguments: TestEngines.all)
    func lastStatement(_ engine: DatabaseEngine) async throws {
        try await withDatabase(engine) { database in
            try await Migrator(database: database, logger: Self.logger).run([Self.notes])
            try await database.transaction { db in
                try await db.run(InsertNote.self, [.integer(1), .text("first"), .integer(1)])
                try await db.runLast(InsertNote.self, [.integer(2), .text("last"), .integer(2)])
            }
            await #expect(throws: (any Error).self, "CHECK (amount >= 0) holds for the last statement too") {
                try await database.transaction { db in
                    try await db.run(InsertNote.self, [.integer(3), .text("before"), .integer(1)])
                    try await db.runLast(InsertNote.self, [.integer(4), .text("negative"), .integer(-1)])
                }
            }
            await #expect(throws: (any Error).self, "a duplicate key in the last statement") {
                try await database.transaction { db in
                    try await db.run(InsertNote.self, [.integer(5), .text("before"), .integer(1)])
                    try await db.runLast(InsertNote.self, [.integer(1), .text("again"), .integer(1)])
                }
            }
            // Outside a transaction it runs at once.
            try await database.read { db in try await db.runLast(SelectNote.self, [.integer(1)]) }
            let ids = try await database.read { db in try await db.rows(NoteQuery.self, [.integer(0)]).map(\.id) }
            #expect(ids == [1, 2], "the failed transactions left nothing, their first statements included")

            guard engine == .postgres else { return }
            await #expect(throws: (any Error).self, "PostgreSQL: nothing runs after the last statement") {
                try await database.transaction { db in
                    try await db.runLast(InsertNote.self, [.integer(6), .text("last"), .integer(1)])
                    try await db.run(InsertNote.self, [.integer(7), .text("after"), .integer(1)])
                }
            }
            await #expect(throws: (any Error).self, "PostgreSQL: a body that swallowed a failed statement does not commit") {
                try await database.transaction { db in
                    try await db.run(InsertNote.self, [.integer(8), .text("before"), .integer(1)])
                    _ = try? await db.run(InsertNote.self, [.integer(9), .text("negative"), .integer(-1)])
                }
            }
            let after = try await database.read { db in try await db.rows(NoteQuery.self, [.integer(0)]).map(\.id) }
            #expect(after == [1, 2])
        }
    }


    @Test("a transaction that throws leaves nothing behind; a constraint failure is a thrown error", arguments: TestEngines.all)
    func rollsBack(_ engine: DatabaseEngine) async throws {
        struct Abandon: Error {}
        try await withDatabase(engine) { database in
            try await Migrator(database: database, logger: Self.logger).run([Self.notes])
            let insert = DatabaseStatement("INSERT INTO seam_notes (id, body, amount) VALUES ($1, $2, $3)")
            await #expect(throws: Abandon.self) {
                try await database.transaction { db in
                    try await db.run(insert, [.integer(1), .text("kept?"), .integer(1)])
                    throw Abandon()
                }
            }
            await #expect(throws: (any Error).self, "CHECK (amount >= 0) holds") {
                try await database.transaction { db in
                    try await db.run(insert, [.integer(2), .text("fine"), .integer(1)])
                    try await db.run(insert, [.integer(3), .text("negative"), .integer(-1)])
                }
            }
            let count = try await database.read { db in
                try await db.query(DatabaseStatement("SELECT COUNT(*) AS n FROM seam_notes"), []).first?.decode(column: "n", as: Int.self)
            }
            #expect(count == 0, "neither transaction left a row")
        }
    }

    @Test("concurrent transactions that read and write one row lose no update", arguments: TestEngines.all)
    func serialisedCounter(_ engine: DatabaseEngine) async throws {
        try await withDatabase(engine) { database in
            try await Migrator(database: database, logger: Self.logger).run([Self.notes])
            try await database.transaction { db in
                try await db.run(DatabaseStatement("INSERT INTO seam_notes (id, body, amount) VALUES (1, 'counter', 0)"), [])
            }
            let lock = database.dialect.engine == .postgres ? " FOR UPDATE" : ""
            let read = DatabaseStatement("SELECT amount FROM seam_notes WHERE id = 1" + lock)
            let write = DatabaseStatement("UPDATE seam_notes SET amount = $1 WHERE id = 1")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<40 {
                    group.addTask {
                        try await database.transaction { db in
                            let current = try await db.query(read, []).first!.decode(column: "amount", as: Int64.self)
                            try await db.run(write, [.integer(current + 1)])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let final = try await database.read { db in
                try await db.query(DatabaseStatement("SELECT amount FROM seam_notes WHERE id = 1"), []).first?.decode(column: "amount", as: Int64.self)
            }
            #expect(final == 40)
        }
    }

    // MARK: Migrations

    @Test("migrations run once each, in order, with the engine's own statements", arguments: TestEngines.all)
    func migrations(_ engine: DatabaseEngine) async throws {
        try await withDatabase(engine) { database in
            let spelled = Migration("seam_0002_spelled", sqlite: ["CREATE TABLE seam_engine (name TEXT NOT NULL)", "INSERT INTO seam_engine VALUES ('sqlite')"],
                                    postgres: ["CREATE TABLE seam_engine (name TEXT NOT NULL)", "INSERT INTO seam_engine VALUES ('postgres')"])
            let migrator = Migrator(database: database, logger: Self.logger)
            try await migrator.run([Self.notes, spelled])
            try await migrator.run([Self.notes, spelled])
            let names = try await database.read { db in
                try await db.query(DatabaseStatement("SELECT name FROM seam_engine"), []).map { try $0.decode(column: "name", as: String.self) }
            }
            #expect(names == [engine.rawValue], "the second run applied nothing again")
            let applied = try await database.read { db in
                try await db.query(DatabaseStatement("SELECT id FROM purse_migrations ORDER BY id"), []).map { try $0.decode(column: "id", as: String.self) }
            }
            #expect(applied == ["seam_0001_notes", "seam_0002_spelled"])
        }
    }

    @Test("a migration that fails applies none of its statements, and the next run applies it whole", arguments: TestEngines.all)
    func failedMigration(_ engine: DatabaseEngine) async throws {
        try await withDatabase(engine) { database in
            let migrator = Migrator(database: database, logger: Self.logger)
            let broken = Migration("seam_0003_partial", ["CREATE TABLE seam_half (id BIGINT)", "CREATE TABLE seam_half (id BIGINT)"])
            await #expect(throws: (any Error).self) { try await migrator.run([broken]) }
            let fixed = Migration("seam_0003_partial", ["CREATE TABLE seam_half (id BIGINT)"])
            try await migrator.run([fixed])
            let rows = try await database.read { db in try await db.query(DatabaseStatement("SELECT COUNT(*) AS n FROM seam_half"), []) }
            #expect(try rows.first?.decode(column: "n", as: Int.self) == 0)
        }
    }

    @Test("duplicate migration ids are refused before anything runs")
    func duplicateIDs() async throws {
        try await withDatabase(.sqlite) { database in
            await #expect(throws: DatabaseConfigurationError.self) {
                try await Migrator(database: database, logger: Self.logger).run([Self.notes, Self.notes])
            }
            let tables = try await database.read { db in
                try await db.query(DatabaseStatement("SELECT name FROM sqlite_master WHERE name = 'seam_notes'"), [])
            }
            #expect(tables.isEmpty)
        }
    }
}

/// `id, body, amount` and a NULL of every note from `$1` on, in id order.
private enum NoteQuery: PreparedDatabaseQuery {
    static let statement = DatabaseStatement("SELECT id, body, amount, NULL AS absent FROM seam_notes WHERE id >= $1 ORDER BY id")
    static let parameterTypes: [SQLValueType] = [.integer]
    static let columnTypes: [SQLValueType] = [.integer, .text, .integer, .text]
    static func row(_ columns: DatabaseColumns) throws -> (id: Int64, body: String, amount: Int64, absent: String?) {
        (try columns.integer(0), try columns.text(1), try columns.integer(2), try columns.optionalText(3))
    }
}

/// Declares the text `body` an integer.
private enum MisdeclaredQuery: PreparedDatabaseQuery {
    static let statement = DatabaseStatement("SELECT 'text' AS body")
    static let parameterTypes: [SQLValueType] = []
    static let columnTypes: [SQLValueType] = [.integer]
    static func row(_ columns: DatabaseColumns) throws -> Int64 { try columns.integer(0) }
}

/// Declares one of the two columns it returns.
private enum ShortQuery: PreparedDatabaseQuery {
    static let statement = DatabaseStatement("SELECT 'a' AS one, 'b' AS two")
    static let parameterTypes: [SQLValueType] = []
    static let columnTypes: [SQLValueType] = [.text]
    static func row(_ columns: DatabaseColumns) throws -> String { try columns.text(0) }
}

private enum InsertNote: PreparedDatabaseStatement {
    static let statement = DatabaseStatement("INSERT INTO seam_notes (id, body, amount) VALUES ($1, $2, $3)")
    static let parameterTypes: [SQLValueType] = [.integer, .text, .integer]
}

private enum SelectNote: PreparedDatabaseStatement {
    static let statement = DatabaseStatement("SELECT body FROM seam_notes WHERE id = $1")
    static let parameterTypes: [SQLValueType] = [.integer]
}

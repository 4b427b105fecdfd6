import Foundation
import Logging
import PurseDatabase
@testable import PurseServer
import PurseTestSupport
import SQLKit
import Testing

@Suite("Ledger statements and housekeeping pace")
struct LedgerStatementsTests {
    /// The ledger's statements for every size it caches and past it.
    @Test func ledgerStatementsTakeTheirValues() {
        #expect(LedgerStatements.moveBalances(accounts: 3).parameterCount == 6)
        #expect(LedgerStatements.moveBalances(accounts: 20).parameterCount == 40)
        #expect(LedgerStatements.insertEntries(count: 4).parameterCount == 11)
        #expect(LedgerStatements.insertEntries(count: 17).parameterCount == 37)
        #expect(LedgerStatements.insertEntries(count: 2).sqliteText.hasSuffix("VALUES (?1, 0, ?4, ?5, ?2, ?3), (?1, 1, ?6, ?7, ?2, ?3)"))
    }

    /// The posting kept prepared on PostgreSQL declares a type for each of its parameters, and a
    /// value of another type is refused before anything runs.
    @Test func preparedPostingDeclaresEveryParameter() throws {
        #expect(LedgerStatements.PostSpread.parameterTypes.count == LedgerStatements.PostSpread.statement.parameterCount)
        let values: [SQLValue] = [.text("ltx"), .text("kind"), .null, .null, .integer(1), .text("a,b"), .text("-1,1"), .text("a,b"), .text("-1,1")]
        try LedgerStatements.PostSpread.check(values)
        var wrong = values
        wrong[4] = .text("1")
        #expect(throws: SQLValueTypeError.self) { try LedgerStatements.PostSpread.check(wrong) }
        #expect(throws: SQLStatementValuesError.self) { try LedgerStatements.PostSpread.check(Array(values.dropLast())) }
    }

    /// The maintenance service comes back after 20 ms while writes commit and 200 ms otherwise.
    @Test func housekeepingWaitsByWhatThePassFound() async throws {
        let server = try await TestServer.make()
        let database = server.environment.database
        let maintenance = DatabaseMaintenance(database: database, logger: Logger(label: "test"))
        _ = try await maintenance.nextPass()
        #expect(try await maintenance.nextPass() == .milliseconds(200))
        try await database.transaction { db in try await db.raw("CREATE TABLE notes (id INTEGER PRIMARY KEY)").run() }
        #expect(try await maintenance.nextPass() == .milliseconds(20))
        #expect(try await maintenance.nextPass() == .milliseconds(200))
        await server.shutdown()
    }
}

import Foundation
import Logging
import PurseDatabase
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// `0005_core_ledger_entries_by_transaction` on a database written by the schema before it: every
/// entry kept, numbered within its transaction in the order of its old id, the key enforced, and
/// the ledger usable afterwards — on both engines.
@Suite("Ledger entries migration")
struct LedgerMigrationTests {
    @Test(arguments: TestEngines.all)
    func entriesBecomeNumberedLinesOfTheirTransactions(engine: DatabaseEngine) async throws {
        let store = try await TestDatabase.make(engine)
        let database = try await Database.open(url: store.url, logger: Logger(label: "test"))
        do {
            let before = Array(CoreMigrations.all.prefix { $0.id != "0005_core_ledger_entries_by_transaction" })
            #expect(before.map(\.id) == ["0001_core_users", "0002_core_ledger", "0003_core_idempotency", "0004_core_jobs"])
            try await Migrator(database: database, logger: Logger(label: "test")).run(before)
            try await database.transaction { db async throws in
                // Balances as the entries below leave them.
                for (account, balance) in [("lac_a", -5), ("lac_b", 5)] {
                    try await db.raw("INSERT INTO ledger_accounts (id, owner_id, kind, currency, balance, allow_negative, created_at) VALUES (\(bind: account), NULL, \(bind: account), 'NGN', \(bind: balance), TRUE, 1)").run()
                }
                for transaction in ["ltx_1", "ltx_2"] {
                    try await db.raw("INSERT INTO ledger_transactions (id, kind, created_at) VALUES (\(bind: transaction), 'test', 1)").run()
                }
                // Inserted out of id order: lines follow the ids, not the insertion.
                for (id, transaction, account, amount) in [
                    ("len_3", "ltx_1", "lac_b", 7), ("len_1", "ltx_1", "lac_a", -10), ("len_2", "ltx_1", "lac_b", 3), ("len_9", "ltx_2", "lac_a", 5), ("len_8", "ltx_2", "lac_b", -5),
                ] {
                    try await db.raw("""
                        INSERT INTO ledger_entries (id, transaction_id, account_id, amount, currency, created_at)
                        VALUES (\(bind: id), \(bind: transaction), \(bind: account), \(bind: amount), 'NGN', 1)
                        """).run()
                }
            }

            try await Migrator(database: database, logger: Logger(label: "test")).run(CoreMigrations.all)

            try await database.read { db async throws in
                let rows = try await db.raw("SELECT transaction_id, line, account_id, amount FROM ledger_entries ORDER BY transaction_id, line").all()
                let entries = try rows.map { row in
                    "\(try row.decode(column: "transaction_id", as: String.self)) \(try row.decode(column: "line", as: Int.self)) "
                        + "\(try row.decode(column: "account_id", as: String.self)) \(try row.decode(column: "amount", as: Int64.self))"
                }
                #expect(entries == ["ltx_1 0 lac_a -10", "ltx_1 1 lac_b 3", "ltx_1 2 lac_b 7", "ltx_2 0 lac_b -5", "ltx_2 1 lac_a 5"])
                #expect(try await Ledger().audit(in: db).isEmpty)
            }
            // The key holds: a line can be written once.
            let duplicate = await #expect(throws: (any Error).self) {
                try await database.transaction { db async throws in
                    try await db.raw("INSERT INTO ledger_entries (transaction_id, line, account_id, amount, currency, created_at) VALUES ('ltx_2', 1, 'lac_a', 1, 'NGN', 1)").run()
                }
            }
            #expect(duplicate.map(TestErrors.isUniqueViolation) == true, "\(String(reflecting: duplicate))")
            // And the ledger posts through the new table.
            let posting = try await database.transaction { db async throws in
                try await Ledger().posting(kind: "after", entries: [LedgerEntry(LedgerAccountID("lac_a"), -2), LedgerEntry(LedgerAccountID("lac_b"), 2)], now: Date(), in: db)
            }
            try await database.read { db async throws in
                let lines = try await db.raw("SELECT line FROM ledger_entries WHERE transaction_id = \(bind: posting.id.rawValue) ORDER BY line").all()
                #expect(try lines.map { try $0.decode(column: "line", as: Int.self) } == [0, 1])
                #expect(try await Ledger().audit(in: db).isEmpty)
            }
        } catch {
            await database.shutdown()
            await store.dispose()
            throw error
        }
        await database.shutdown()
        await store.dispose()
    }
}

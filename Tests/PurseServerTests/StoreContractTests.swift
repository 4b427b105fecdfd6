import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import PurseDatabase
import PurseHTTP
@testable import PurseServer
import PurseTestSupport
import SQLKit
import Synchronization
import Testing

/// The store contract: accounts, ledger, idempotency, jobs — on SQLite always, and on PostgreSQL
/// when `PURSE_TEST_POSTGRES_URL` is set.
@Suite("Store contract")
struct StoreContractTests {
    func withEnvironment(_ engine: TestEngine, _ body: (ServerEnvironment, TestClock) async throws -> Void) async throws {
        let server = try await TestServer.make(engine: engine.engine) { $0.sqliteTuning = engine.sqliteTuning }
        do {
            try await body(server.environment, server.clock)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    func makeUser(_ env: ServerEnvironment, _ label: String = UUID().uuidString) async throws -> User {
        try await env.accounts.create(email: "\(label.lowercased())@example.com", phone: nil, name: nil, passwordHash: "x", now: env.now())
    }

    /// A funding account (may go negative), the user's wallet funded from it with `amount`, and a
    /// revenue account to spend into.
    func fundedWallet(_ env: ServerEnvironment, user: User, amount: Int64) async throws -> (funding: LedgerAccount, wallet: LedgerAccount, revenue: LedgerAccount) {
        try await env.database.transaction { db async throws in
            let funding = try await env.ledger.account(owner: nil, kind: "funding", currency: "NGN", allowNegative: true, now: env.now(), in: db)
            let wallet = try await env.ledger.account(owner: user.id, kind: "wallet", currency: "NGN", now: env.now(), in: db)
            let revenue = try await env.ledger.account(owner: nil, kind: "revenue", currency: "NGN", now: env.now(), in: db)
            try await env.ledger.post(kind: "funding", entries: [LedgerEntry(funding.id, -amount), LedgerEntry(wallet.id, amount)], now: env.now(), in: db)
            return (funding, wallet, revenue)
        }
    }

    /// `payers` users with funded wallets, a house settlement account that may not go negative,
    /// and a house account named `negativeHouse` that may.
    func payersAndHouse(
        _ env: ServerEnvironment, payers: Int, funding: Int64, negativeHouse: String
    ) async throws -> (wallets: [LedgerAccountID], settlement: LedgerAccountID, negative: LedgerAccountID) {
        var wallets: [LedgerAccountID] = []
        for index in 0..<payers {
            let user = try await makeUser(env, "payer-\(index)-\(UUID().uuidString.prefix(6))")
            wallets.append(try await fundedWallet(env, user: user, amount: funding).wallet.id)
        }
        let house = try await env.database.transaction { db async throws in
            try await env.ledger.accounts([
                LedgerAccountSpec(owner: nil, kind: "settlement", currency: "NGN"),
                LedgerAccountSpec(owner: nil, kind: negativeHouse, currency: "NGN", allowNegative: true),
            ], now: env.now(), in: db).map(\.id)
        }
        return (wallets, house[0], house[1])
    }

    /// No session waits for a lock without bound: SQLite's busy timeout; PostgreSQL's lock,
    /// statement and idle-in-transaction timeouts (a hung session fails instead of hanging the server).
    @Test(arguments: TestEngines.contract)
    func sessionsWaitForLocksWithABound(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let settings = try await env.database.transaction { db async throws -> [String: String] in
                switch engine.engine {
                case .sqlite:
                    let timeout = try await db.raw("PRAGMA busy_timeout").first()?.decode(column: "timeout", as: Int.self)
                    return ["busy_timeout": timeout.map(String.init) ?? "?"]
                case .postgres:
                    var settings: [String: String] = [:]
                    for name in ["statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"] {
                        settings[name] = try await db.raw("SHOW \(unsafeRaw: name)").first()?.decode(column: name, as: String.self)
                    }
                    return settings
                }
            }
            switch engine.engine {
            case .sqlite: #expect(settings == ["busy_timeout": "5000"])
            case .postgres: #expect(settings == ["statement_timeout": "30s", "lock_timeout": "10s", "idle_in_transaction_session_timeout": "1min"])
            }
        }
    }

    // MARK: Accounts

    @Test(arguments: TestEngines.contract)
    func accountsAreUniqueByEmailAndPhone(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await env.accounts.create(email: "ada@example.com", phone: "+2348012345678", name: "Ada", passwordHash: "h", now: env.now())
            await #expect(throws: AccountStoreError.duplicate(field: "email")) {
                try await env.accounts.create(email: "ada@example.com", phone: nil, name: nil, passwordHash: "h", now: env.now())
            }
            await #expect(throws: AccountStoreError.duplicate(field: "phone")) {
                try await env.accounts.create(email: nil, phone: "+2348012345678", name: nil, passwordHash: "h", now: env.now())
            }
            #expect(try await env.accounts.find(id: user.id)?.name == "Ada")
            let found = try #require(try await env.accounts.credentials(for: .phone("+2348012345678")))
            #expect(found.0.id == user.id && found.passwordHash == "h")
            #expect(try await env.accounts.credentials(for: .email("nobody@example.com")) == nil)
        }
    }

    @Test(arguments: TestEngines.contract)
    func concurrentRegistrationsOfOneEmailCreateOneUser(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let results = await withTaskGroup(of: Bool.self, returning: [Bool].self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        (try? await env.accounts.create(email: "race@example.com", phone: nil, name: nil, passwordHash: "h", now: env.now())) != nil
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { $0 }.count == 1)
        }
    }

    // MARK: Ledger

    @Test(arguments: TestEngines.contract)
    func balancedTransactionMovesMoneyAndAuditsClean(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            try await env.database.transaction { db async throws in
                let funding = try await env.ledger.account(owner: nil, kind: "funding", currency: "NGN", allowNegative: true, now: env.now(), in: db)
                let wallet = try await env.ledger.account(owner: user.id, kind: "wallet", currency: "NGN", now: env.now(), in: db)
                try await env.ledger.post(kind: "funding", entries: [LedgerEntry(funding.id, -5000), LedgerEntry(wallet.id, 5000)], now: env.now(), in: db)
                #expect(try await env.ledger.balance(of: wallet.id, in: db) == 5000)
                #expect(try await env.ledger.balance(of: funding.id, in: db) == -5000)
                #expect(try await env.ledger.derivedBalance(of: wallet.id, in: db) == 5000)
                #expect(try await env.ledger.audit(in: db).isEmpty)
            }
        }
    }

    @Test(arguments: TestEngines.contract)
    func accountsAreFetchedTogetherAndPostingsReportBalances(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            let other = try await makeUser(env)
            let specs = [
                LedgerAccountSpec(owner: user.id, kind: "wallet", currency: "NGN"),
                LedgerAccountSpec(owner: nil, kind: "funding", currency: "NGN", allowNegative: true),
                LedgerAccountSpec(owner: user.id, kind: "wallet", currency: "USD"),
                LedgerAccountSpec(owner: other.id, kind: "wallet", currency: "NGN"),
                LedgerAccountSpec(owner: nil, kind: "funding", currency: "USD", allowNegative: true),
            ]
            try await env.database.transaction { db async throws in
                // Created on first use, then found again — same ids, in the order asked.
                let created = try await env.ledger.accounts(specs, now: env.now(), in: db)
                #expect(created.map(\.ownerID) == specs.map(\.owner))
                #expect(created.map(\.kind) == specs.map(\.kind))
                #expect(created.map(\.currency) == specs.map(\.currency))
                #expect(created.map(\.allowNegative) == [false, true, false, false, true])
                #expect(Set(created.map(\.id)).count == specs.count)
                let again = try await env.ledger.accounts(specs.reversed(), now: env.now(), in: db)
                #expect(again.map(\.id) == created.map(\.id).reversed())
                #expect(try await env.ledger.accounts([], now: env.now(), in: db).isEmpty)

                let (wallet, funding, otherWallet) = (created[0], created[1], created[3])
                let posting = try await env.ledger.posting(
                    kind: "funding", entries: [LedgerEntry(funding.id, -7000), LedgerEntry(wallet.id, 5000), LedgerEntry(otherWallet.id, 2000)],
                    now: env.now(), in: db
                )
                #expect(posting.balances == engine.reported(users: [wallet.id: 5000, otherWallet.id: 2000], house: [funding.id: -7000]))
                let second = try await env.ledger.posting(
                    kind: "transfer", entries: [LedgerEntry(wallet.id, -1500), LedgerEntry(otherWallet.id, 1500)], now: env.now(), in: db
                )
                #expect(second.balances == [wallet.id: 3500, otherWallet.id: 3500])
                #expect(try await env.ledger.balance(of: wallet.id, in: db) == 3500)
                #expect(try await env.ledger.derivedBalance(of: otherWallet.id, in: db) == 3500)
                #expect(try await env.ledger.audit(in: db).isEmpty)
            }
        }
    }

    /// `accountIDs` remembers the ids it found in the database — never those of accounts created
    /// in a transaction that may still roll back — and forgets one that turns out missing.
    /// PostgreSQL: a statement whose first preparation on a connection failed (there, inside a
    /// transaction already aborted) does not fail on that connection ever after — postgres-nio
    /// keeps a failed preparation, so the session closes its connection and the pool opens another.
    @Test(arguments: TestEngines.contract)
    func aFailedPreparationDoesNotStick(engine: TestEngine) async throws {
        guard engine.engine == .postgres else { return }
        try await withEnvironment(engine) { env, _ async throws in
            for _ in 0..<3 {
                await #expect(throws: (any Error).self) {
                    try await env.database.transaction { db async throws in
                        _ = try? await db.raw("SELECT 1 / 0 AS never").run()
                        _ = try await db.query(PreparedProbe.self, [.integer(1)])
                    }
                }
            }
            for value in Int64(0)..<20 {
                let next = try await env.database.read { db in
                    try await db.query(PreparedProbe.self, [.integer(value)]).first?.decode(column: "next", as: Int64.self)
                }
                #expect(next == value + 1)
            }
        }
    }

    /// PostgreSQL: BEGIN goes out ahead of a transaction's first statement without a wait of its
    /// own, and that statement still runs inside the transaction: its transaction id is the one
    /// the last statement sees, whether the first is plain, prepared, or raw SQL.
    @Test(arguments: TestEngines.contract)
    func aTransactionsFirstStatementRunsInsideIt(engine: TestEngine) async throws {
        guard engine.engine == .postgres else { return }
        try await withEnvironment(engine) { env, _ async throws in
            let current = DatabaseStatement("SELECT pg_current_xact_id()::text AS id")
            for first in 0..<3 {
                let (firstID, lastID) = try await env.database.transaction { db async throws in
                    let firstID: String? = switch first {
                    case 0: try await db.query(current, []).first?.decode(column: "id", as: String.self)
                    case 1: try await db.raw("SELECT pg_current_xact_id()::text AS id").first()?.decode(column: "id", as: String.self)
                    default: try await db.query(PreparedTransactionID.self, []).first?.decode(column: "id", as: String.self)
                    }
                    _ = try await db.query(PreparedProbe.self, [.integer(2)])
                    return (firstID, try await db.query(current, []).first?.decode(column: "id", as: String.self))
                }
                #expect(lastID != nil)
                #expect(firstID == lastID)
            }
            // A transaction whose first statement fails throws, and the pool's next transaction
            // runs as usual.
            await #expect(throws: (any Error).self) {
                try await env.database.transaction { db async throws in _ = try await db.raw("SELECT 1 / 0 AS never").run() }
            }
            let value = try await env.database.transaction { db async throws in
                try await db.query(PreparedProbe.self, [.integer(41)]).first?.decode(column: "next", as: Int64.self)
            }
            #expect(value == 42)
        }
    }

    /// PostgreSQL: postings that credit a house account at the same time write to distinct slot
    /// rows, so none waits for another's commit. Eight transactions each credit the settlement
    /// account and stay open until all eight have posted (a bounded wait); one queued behind
    /// another's slot row would hold the others back until the bound.
    @Test(arguments: TestEngines.contract)
    func concurrentCreditsTakeDistinctSlots(engine: TestEngine) async throws {
        guard engine.engine == .postgres else { return }
        try await withEnvironment(engine) { env, _ async throws in
            let (wallets, settlement, _) = try await payersAndHouse(env, payers: 8, funding: 1_000, negativeHouse: "promotions")
            final class Posted: Sendable { let count = Atomic<Int>(0) }
            let posted = Posted()
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for wallet in wallets {
                    group.addTask {
                        try await env.database.transaction { db async throws in
                            try await env.ledger.post(kind: "sale", entries: [LedgerEntry(wallet, -10), LedgerEntry(settlement, 10)], now: env.now(), in: db)
                            posted.count.add(1, ordering: .relaxed)
                            while posted.count.load(ordering: .relaxed) < wallets.count, ContinuousClock.now - start < .seconds(5) {
                                try await Task.sleep(for: .milliseconds(5))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(ContinuousClock.now - start < .seconds(5))
            let slots = try await env.database.read { db in
                try await db.raw("SELECT COUNT(*) AS n FROM ledger_balance_slots WHERE account_id = \(bind: settlement.rawValue)").first()?.decode(column: "n", as: Int.self)
            }
            #expect(slots == wallets.count)
            #expect(try await env.database.read { db in try await env.ledger.balance(of: settlement, in: db) } == 80)
            #expect(try await env.database.read { db in try await env.ledger.audit(in: db) }.isEmpty)
        }
    }

    @Test(arguments: TestEngines.contract)
    func accountIDsAreRememberedOnceFoundAndForgottenWhenMissing(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            let specs = [
                LedgerAccountSpec(owner: user.id, kind: "wallet", currency: "NGN"),
                LedgerAccountSpec(owner: nil, kind: "funding", currency: "NGN", allowNegative: true),
            ]
            @Sendable func post(_ ids: [LedgerAccountID], in db: any DatabaseSession) async throws -> LedgerPosting {
                try await env.ledger.posting(kind: "funding", entries: [LedgerEntry(ids[1], -100), LedgerEntry(ids[0], 100)], now: env.now(), in: db)
            }
            // Created in a transaction that rolls back: gone, and not remembered.
            struct Refused: Error { var ids: [LedgerAccountID] }
            var rolledBack: [LedgerAccountID] = []
            do {
                try await env.database.transaction { db async throws in
                    throw Refused(ids: try await env.ledger.accountIDs(specs, now: env.now(), in: db))
                }
            } catch let refused as Refused {
                rolledBack = refused.ids
            }
            #expect(rolledBack.count == 2)
            #expect(env.ledger.rememberedAccounts == 0)
            // Created again (the wallet under a new id), still not remembered; found by the next
            // transaction and remembered from then on.
            let created = try await env.database.transaction { db async throws in try await env.ledger.accountIDs(specs, now: env.now(), in: db) }
            #expect(created[0] != rolledBack[0])
            #expect(env.ledger.rememberedAccounts == 0)
            let found = try await env.database.transaction { db async throws in
                let ids = try await env.ledger.accountIDs(specs, now: env.now(), in: db)
                #expect(try await post(ids, in: db).balances == engine.reported(users: [ids[0]: 100], house: [ids[1]: -100]))
                return ids
            }
            #expect(found == created)
            #expect(env.ledger.rememberedAccounts == 2)
            #expect(try await env.database.transaction { db async throws in try await env.ledger.accountIDs(specs, now: env.now(), in: db) } == created)

            // A remembered account that is missing (as after a group commit that failed): the
            // posting that names it is refused, the id forgotten, and the next one creates it.
            let other = try await makeUser(env)
            let otherSpecs = [LedgerAccountSpec(owner: other.id, kind: "wallet", currency: "NGN"), specs[1]]
            let lost = try await env.database.transaction { db async throws in try await env.ledger.accountIDs(otherSpecs, now: env.now(), in: db) }
            _ = try await env.database.transaction { db async throws in try await env.ledger.accountIDs(otherSpecs, now: env.now(), in: db) }
            #expect(env.ledger.rememberedAccounts == 3)
            try await env.database.transaction { db async throws in
                try await db.raw("DELETE FROM ledger_accounts WHERE id = \(bind: lost[0].rawValue)").run()
            }
            await #expect(throws: LedgerError.unknownAccount(lost[0])) {
                try await env.database.transaction { db async throws in
                    _ = try await post(try await env.ledger.accountIDs(otherSpecs, now: env.now(), in: db), in: db)
                }
            }
            #expect(env.ledger.rememberedAccounts == 2)
            let renewed = try await env.database.transaction { db async throws in
                let ids = try await env.ledger.accountIDs(otherSpecs, now: env.now(), in: db)
                _ = try await post(ids, in: db)
                return ids
            }
            #expect(renewed[0] != lost[0] && renewed[1] == lost[1])
            #expect(try await env.database.read { db in try await env.ledger.audit(in: db) }.isEmpty)
        }
        // Bounded: full, it starts again empty; with no room it remembers nothing.
        let directory = LedgerAccountDirectory(capacity: 2)
        let specs = (0..<3).map { LedgerAccountSpec(owner: nil, kind: "k\($0)", currency: "NGN") }
        for (index, spec) in specs.enumerated() { directory.remember(LedgerAccountID("a\(index)"), for: spec) }
        #expect(directory.count == 1)
        #expect(directory.ids(of: [specs[2]]) == [LedgerAccountID("a2")])
        #expect(directory.ids(of: specs) == nil)
        let none = LedgerAccountDirectory(capacity: 0)
        none.remember(LedgerAccountID("a"), for: specs[0])
        #expect(none.count == 0)
    }

    @Test(arguments: TestEngines.contract)
    func unbalancedTransactionIsRefusedAndWritesNothing(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            let (funding, wallet) = try await env.database.transaction { db async throws in
                (try await env.ledger.account(owner: nil, kind: "funding", currency: "NGN", allowNegative: true, now: env.now(), in: db),
                 try await env.ledger.account(owner: user.id, kind: "wallet", currency: "NGN", now: env.now(), in: db))
            }
            await #expect(throws: LedgerError.unbalanced(sum: 1)) {
                try await env.database.transaction { db async throws in
                    try await env.ledger.post(kind: "bad", entries: [LedgerEntry(funding.id, -499), LedgerEntry(wallet.id, 500)], now: env.now(), in: db)
                }
            }
            await #expect(throws: LedgerError.malformed("a transaction needs at least two entries")) {
                try await env.database.transaction { db async throws in
                    try await env.ledger.post(kind: "bad", entries: [LedgerEntry(wallet.id, 500)], now: env.now(), in: db)
                }
            }
            try await env.database.read { db async throws in
                #expect(try await env.ledger.balance(of: wallet.id, in: db) == 0)
                #expect(try await db.raw("SELECT COUNT(*) AS n FROM ledger_transactions").first()?.decode(column: "n", as: Int.self) == 0)
            }
        }
    }

    @Test(arguments: TestEngines.contract)
    func overdraftIsRefusedAndTheWholeTransactionRollsBack(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            let (funding, wallet, revenue) = try await fundedWallet(env, user: user, amount: 100)
            await #expect(throws: LedgerError.insufficientFunds(account: wallet.id)) {
                try await env.database.transaction { db async throws in
                    try await env.ledger.post(kind: "spend", entries: [LedgerEntry(wallet.id, -101), LedgerEntry(revenue.id, 101)], now: env.now(), in: db)
                }
            }
            await #expect(throws: LedgerError.unknownAccount(LedgerAccountID("lac_missing"))) {
                try await env.database.transaction { db async throws in
                    try await env.ledger.post(kind: "spend", entries: [LedgerEntry(LedgerAccountID("lac_missing"), -1), LedgerEntry(revenue.id, 1)], now: env.now(), in: db)
                }
            }
            try await env.database.read { db async throws in
                #expect(try await env.ledger.balance(of: wallet.id, in: db) == 100)
                #expect(try await env.ledger.balance(of: revenue.id, in: db) == 0)
                #expect(try await env.ledger.balance(of: funding.id, in: db) == -100)
                #expect(try await env.ledger.audit(in: db).isEmpty)
            }
        }
    }

    /// A posting may name an account more than once; the balance rule applies to each account's
    /// net change, and every entry is recorded as given.
    @Test(arguments: TestEngines.contract)
    func balanceRuleAppliesToEachAccountsNetChange(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            let (_, wallet, revenue) = try await fundedWallet(env, user: user, amount: 100)
            let posting = try await env.database.transaction { db async throws in
                try await env.ledger.posting(
                    kind: "spend with refund", entries: [LedgerEntry(wallet.id, -150), LedgerEntry(wallet.id, 100), LedgerEntry(revenue.id, 50)],
                    now: env.now(), in: db
                )
            }
            #expect(posting.balances == engine.reported(users: [wallet.id: 50], house: [revenue.id: 50]))
            await #expect(throws: LedgerError.insufficientFunds(account: wallet.id)) {
                try await env.database.transaction { db async throws in
                    try await env.ledger.post(
                        kind: "spend", entries: [LedgerEntry(wallet.id, -30), LedgerEntry(wallet.id, -21), LedgerEntry(revenue.id, 51)], now: env.now(), in: db
                    )
                }
            }
            try await env.database.read { db async throws in
                #expect(try await env.ledger.balance(of: wallet.id, in: db) == 50)
                // The entries are the posting's lines, numbered in the order given.
                let lines = try await db.raw("SELECT line, account_id, amount FROM ledger_entries WHERE transaction_id = \(bind: posting.id.rawValue) ORDER BY line").all()
                #expect(try lines.map { try [
                    String($0.decode(column: "line", as: Int.self)), $0.decode(column: "account_id", as: String.self), String($0.decode(column: "amount", as: Int64.self)),
                ] } == [["0", wallet.id.rawValue, "-150"], ["1", wallet.id.rawValue, "100"], ["2", revenue.id.rawValue, "50"]])
                #expect(try await env.ledger.audit(in: db).isEmpty)
            }
        }
    }

    @Test(arguments: TestEngines.contract)
    func currenciesDoNotMix(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            await #expect(throws: LedgerError.self) {
                try await env.database.transaction { db async throws in
                    let ngn = try await env.ledger.account(owner: nil, kind: "funding", currency: "NGN", allowNegative: true, now: env.now(), in: db)
                    let usd = try await env.ledger.account(owner: user.id, kind: "wallet", currency: "USD", now: env.now(), in: db)
                    try await env.ledger.post(kind: "x", entries: [LedgerEntry(ngn.id, -1), LedgerEntry(usd.id, 1)], now: env.now(), in: db)
                }
            }
        }
    }

    @Test(arguments: TestEngines.contract)
    func concurrentDebitsNeverOverdraw(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            let (_, wallet, revenue) = try await fundedWallet(env, user: user, amount: 500)
            let outcomes = await withTaskGroup(of: Bool.self, returning: [Bool].self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        do {
                            _ = try await env.database.transaction { db async throws in
                                try await env.ledger.post(kind: "spend", entries: [LedgerEntry(wallet.id, -10), LedgerEntry(revenue.id, 10)], now: env.now(), in: db)
                            }
                            return true
                        } catch {
                            return false
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 50)
            try await env.database.read { db async throws in
                #expect(try await env.ledger.balance(of: wallet.id, in: db) == 0)
                #expect(try await env.ledger.audit(in: db).isEmpty)
            }
        }
    }

    /// Many users pay into one house account (a settlement account every purchase credits) while
    /// a house account that may go negative pays each of them cashback, all at once: every posting
    /// lands, the house balances are exact, no wallet goes below zero, and the books audit clean.
    @Test(arguments: TestEngines.contract)
    func concurrentPostingsToOneHouseAccountAreExact(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let (wallets, settlement, promotions) = try await payersAndHouse(env, payers: 100, funding: 1_000, negativeHouse: "promotions")
            let failures = await withTaskGroup(of: Int.self, returning: Int.self) { group in
                for wallet in wallets {
                    group.addTask {
                        do {
                            _ = try await env.database.transaction { db async throws in
                                try await env.ledger.post(kind: "purchase", entries: [
                                    LedgerEntry(wallet, -700), LedgerEntry(settlement, 700),
                                    LedgerEntry(promotions, -7), LedgerEntry(wallet, 7),
                                ], now: env.now(), in: db)
                            }
                            return 0
                        } catch {
                            return 1
                        }
                    }
                }
                return await group.reduce(0, +)
            }
            #expect(failures == 0)
            try await env.database.read { db async throws in
                #expect(try await env.ledger.balance(of: settlement, in: db) == 70_000)
                #expect(try await env.ledger.balance(of: promotions, in: db) == -700)
                for wallet in wallets { #expect(try await env.ledger.balance(of: wallet, in: db) == 307) }
                #expect(try await env.ledger.audit(in: db).isEmpty)
            }
        }
    }

    /// A house account that may not go negative, credited by 60 payers while 80 payouts of the
    /// same size try to debit it, all at once: no payout overdraws it, every refused one writes
    /// nothing, and the books balance. Then one payout takes exactly what is left (every credit,
    /// wherever it was kept) and a further one is refused.
    @Test(arguments: TestEngines.contract)
    func debitsOfAHouseAccountNeverOverdrawItUnderConcurrentCredits(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let (wallets, settlement, bank) = try await payersAndHouse(env, payers: 60, funding: 100, negativeHouse: "bank")
            enum Outcome: Sendable { case credited, paidOut, refused }
            let outcomes = try await withThrowingTaskGroup(of: Outcome.self, returning: [Outcome].self) { group in
                for index in 0..<140 {
                    group.addTask {
                        if index % 7 < 3 {
                            let wallet = wallets[index / 7 * 3 + index % 7]
                            _ = try await env.database.transaction { db async throws in
                                try await env.ledger.post(kind: "sale", entries: [LedgerEntry(wallet, -100), LedgerEntry(settlement, 100)], now: env.now(), in: db)
                            }
                            return .credited
                        }
                        do {
                            _ = try await env.database.transaction { db async throws in
                                try await env.ledger.post(kind: "payout", entries: [LedgerEntry(settlement, -100), LedgerEntry(bank, 100)], now: env.now(), in: db)
                            }
                            return .paidOut
                        } catch LedgerError.insufficientFunds(account: settlement) {
                            return .refused
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // Counted before the expectations, which compare plain integers.
            let credited = outcomes.count { $0 == .credited }
            let paidOut = Int64(outcomes.count { $0 == .paidOut })
            let refused = Int64(outcomes.count { $0 == .refused })
            #expect(credited == 60)
            #expect(paidOut + refused == 80)
            let left = try await env.database.read { db async throws in
                let left = try await env.ledger.balance(of: settlement, in: db)
                #expect(left == 6_000 - 100 * paidOut)
                #expect(try await env.ledger.balance(of: bank, in: db) == 100 * paidOut)
                #expect(try await env.ledger.audit(in: db).isEmpty)
                return left
            }
            if left > 0 {
                _ = try await env.database.transaction { db async throws in
                    try await env.ledger.post(kind: "payout", entries: [LedgerEntry(settlement, -left), LedgerEntry(bank, left)], now: env.now(), in: db)
                }
            }
            await #expect(throws: LedgerError.insufficientFunds(account: settlement)) {
                try await env.database.transaction { db async throws in
                    try await env.ledger.post(kind: "payout", entries: [LedgerEntry(settlement, -1), LedgerEntry(bank, 1)], now: env.now(), in: db)
                }
            }
            try await env.database.read { db async throws in
                #expect(try await env.ledger.balance(of: settlement, in: db) == 0)
                #expect(try await env.ledger.balance(of: bank, in: db) == 6_000)
                #expect(try await env.ledger.audit(in: db).isEmpty)
            }
        }
    }

    // MARK: Idempotency

    @Test(arguments: TestEngines.contract)
    func oneKeyUnderConcurrencyHasOneEffect(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            let (funding, wallet) = try await env.database.transaction { db async throws in
                (try await env.ledger.account(owner: nil, kind: "funding", currency: "NGN", allowNegative: true, now: env.now(), in: db),
                 try await env.ledger.account(owner: user.id, kind: "wallet", currency: "NGN", now: env.now(), in: db))
            }
            let hash = IdempotencyStore.requestHash(scope: "POST /fund", body: Data(#"{"amount":100}"#.utf8))
            let responses = try await withThrowingTaskGroup(of: StoredResponse.self, returning: [StoredResponse].self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        try await env.idempotency.perform(database: env.database, user: user.id, key: "key-1", scope: "POST /fund", requestHash: hash, now: env.now()) { db in
                            let id = try await env.ledger.post(kind: "funding", entries: [LedgerEntry(funding.id, -100), LedgerEntry(wallet.id, 100)], now: env.now(), in: db)
                            return StoredResponse(status: 201, body: Data(#"{"transaction":"\#(id)"}"#.utf8))
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(responses.count == 200)
            #expect(Set(responses.map(\.body)).count == 1)
            #expect(responses.filter { !$0.replayed }.count == 1)
            try await env.database.read { db async throws in
                #expect(try await env.ledger.balance(of: wallet.id, in: db) == 100)
                #expect(try await db.raw("SELECT COUNT(*) AS n FROM ledger_transactions").first()?.decode(column: "n", as: Int.self) == 1)
            }
        }
    }

    @Test("two phases: begin answers a finished retry, commit runs the effect once with a typed value, amend replaces the answer",
          arguments: TestEngines.contract)
    func twoPhaseIdempotency(engine: TestEngine) async throws {
        func request(_ key: String?) -> Request {
            var head = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1", path: "/pay")
            if let key { head.headerFields[.idempotencyKey] = key }
            return Request(head: head, body: .init(buffer: ByteBuffer()))
        }
        let body = ByteBuffer(string: #"{"amount":5}"#)
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            guard case .fresh(let call) = try await env.begin(request("k1"), body: body, user: user.id) else {
                Issue.record("a new key is fresh"); return
            }
            let first = try await env.commit(call) { _ in IdempotentEffect(42, status: .created, body: Data(#"{"n":1}"#.utf8)) }
            guard case .fresh(let value, let response) = first else { Issue.record("the first commit runs the effect"); return }
            #expect(value == 42 && response.status == .created && response.headers[.idempotentReplayed] == nil)
            let again = try await env.commit(call) { _ -> IdempotentEffect<Int> in
                Issue.record("the effect ran twice")
                return IdempotentEffect(0, status: .created, body: Data())
            }
            guard case .replayed(let replayed) = again else { Issue.record("a second commit replays"); return }
            #expect(replayed.status == .created && replayed.headers[.idempotentReplayed] == "true")
            // The settling transaction writes the final answer; a retry gets it.
            try await env.database.transaction { db in try await env.amend(call, status: .ok, body: Data(#"{"n":2}"#.utf8), in: db) }
            guard case .replay(let amended) = try await env.begin(request("k1"), body: body, user: user.id) else {
                Issue.record("a finished key replays"); return
            }
            #expect(amended.status == .ok && amended.headers[.idempotentReplayed] == "true")
            await #expect(throws: APIError.self, "the key with another body is 422") {
                _ = try await env.begin(request("k1"), body: ByteBuffer(string: "{}"), user: user.id)
            }
            await #expect(throws: APIError.self, "a required key is 400 when missing") {
                _ = try await env.begin(request(nil), body: body, user: user.id)
            }
            // Where the key is optional and none is sent, the effect runs once, unrecorded.
            guard case .fresh(let keyless) = try await env.begin(request(nil), body: body, user: user.id, keyRequired: false), keyless.key == nil else {
                Issue.record("no key is fresh"); return
            }
            guard case .fresh(let seven, _) = try await env.commit(keyless, effect: { _ in IdempotentEffect(7, status: .ok, body: Data("{}".utf8)) }) else {
                Issue.record("a keyless commit runs"); return
            }
            #expect(seven == 7)
        }
    }

    @Test(arguments: TestEngines.contract)
    func reusedKeyWithAnotherRequestIsRefused(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            let other = try await makeUser(env)
            let first = try await env.idempotency.perform(database: env.database, user: user.id, key: "k", scope: "POST /a", requestHash: "h1", now: env.now()) { _ in
                StoredResponse(status: 200, body: Data("{}".utf8))
            }
            #expect(!first.replayed)
            await #expect(throws: IdempotencyError.keyReused) {
                try await env.idempotency.perform(database: env.database, user: user.id, key: "k", scope: "POST /a", requestHash: "h2", now: env.now()) { _ in
                    StoredResponse(status: 200, body: Data())
                }
            }
            await #expect(throws: IdempotencyError.keyReused) {
                try await env.idempotency.perform(database: env.database, user: user.id, key: "k", scope: "POST /b", requestHash: "h1", now: env.now()) { _ in
                    StoredResponse(status: 200, body: Data())
                }
            }
            // Keys are per user: another user's identical key is a new request.
            let theirs = try await env.idempotency.perform(database: env.database, user: other.id, key: "k", scope: "POST /a", requestHash: "h1", now: env.now()) { _ in
                StoredResponse(status: 200, body: Data("{}".utf8))
            }
            #expect(!theirs.replayed)
        }
    }

    @Test(arguments: TestEngines.contract)
    func failedEffectReleasesTheKey(engine: TestEngine) async throws {
        struct Refused: Error {}
        try await withEnvironment(engine) { env, _ async throws in
            let user = try await makeUser(env)
            await #expect(throws: Refused.self) {
                try await env.idempotency.perform(database: env.database, user: user.id, key: "k", scope: "POST /a", requestHash: "h", now: env.now()) { _ in
                    throw Refused()
                }
            }
            let retry = try await env.idempotency.perform(database: env.database, user: user.id, key: "k", scope: "POST /a", requestHash: "h", now: env.now()) { _ in
                StoredResponse(status: 200, body: Data("{}".utf8))
            }
            #expect(!retry.replayed)
        }
    }

    // MARK: Jobs

    @Test(arguments: TestEngines.contract)
    func jobsRunRetryWithBackoffAndDie(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, clock async throws in
            let id = try await env.database.transaction { db async throws in
                try await env.jobs.enqueue(kind: "webhook", payload: ["url": "http://x"], runAt: clock.now, maxAttempts: 2, in: db)
            }
            #expect(try await env.jobs.claim(kinds: ["other"], limit: 10, now: clock.now).isEmpty)
            let claimed = try await env.jobs.claim(limit: 10, now: clock.now)
            #expect(claimed.map(\.id) == [id])
            #expect(try claimed[0].decode([String: String].self) == ["url": "http://x"])
            #expect(try await env.jobs.claim(limit: 10, now: clock.now).isEmpty, "a running job is not claimed twice")

            #expect(try await env.jobs.fail(claimed[0], error: "HTTP 500", now: clock.now) == .queued)
            #expect(try await env.jobs.claim(limit: 10, now: clock.now).isEmpty, "not before the backoff")
            clock.advance(by: env.jobs.backoff.delay(afterAttempts: 1) + 0.001)
            let second = try await env.jobs.claim(limit: 10, now: clock.now)
            #expect(second.first?.attempts == 2)
            #expect(try await env.jobs.fail(second[0], error: "HTTP 500", now: clock.now) == .dead)
            clock.advance(by: 10_000)
            #expect(try await env.jobs.claim(limit: 10, now: clock.now).isEmpty)
            let state = try #require(try await env.jobs.state(of: id))
            #expect(state.state == .dead && state.attempts == 2 && state.lastError == "HTTP 500")
        }
    }

    @Test(arguments: TestEngines.contract)
    func jobsOfRolledBackChangesNeverExist(engine: TestEngine) async throws {
        struct Abort: Error {}
        try await withEnvironment(engine) { env, clock async throws in
            _ = try? await env.database.transaction { db -> String in
                _ = try await env.jobs.enqueue(kind: "webhook", payload: ["a": "b"], runAt: clock.now, in: db)
                throw Abort()
            }
            #expect(try await env.jobs.claim(limit: 10, now: clock.now).isEmpty)
        }
    }

    @Test(arguments: TestEngines.contract)
    func concurrentClaimersNeverShareAJobAndExpiredLeasesReturn(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, clock async throws in
            for index in 0..<40 {
                try await env.database.transaction { db async throws in
                    _ = try await env.jobs.enqueue(kind: "push", payload: ["n": index], runAt: clock.now, in: db)
                }
            }
            let batches = try await withThrowingTaskGroup(of: [Job].self, returning: [[Job]].self) { group in
                for _ in 0..<8 { group.addTask { try await env.jobs.claim(limit: 5, now: clock.now) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let ids = batches.flatMap { $0.map(\.id) }
            #expect(ids.count == 40)
            #expect(Set(ids).count == 40)
            clock.advance(by: env.jobs.lease + 1)
            #expect(try await env.jobs.claim(limit: 100, now: clock.now).count == 40, "a crashed worker's jobs come back")
        }
    }

    /// A worker renews the lease of a job while it runs: a job that outlives its lease is not taken
    /// by another claimer, and once it is done it stays done.
    @Test(arguments: TestEngines.contract)
    func runningJobsKeepTheirLease(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            // A lease of 3 s renewed every second: a renewal would have to stall 2 s for another
            // claimer to win, which a machine running every suite at once can still afford.
            let queue = JobQueue(database: env.database, lease: 3)
            let id = try await env.database.transaction { db in try await queue.enqueue(kind: "slow", payload: ["x": 1], runAt: Date(), in: db) }
            let worker = JobWorker(queue: queue, handlers: [
                JobHandler(kind: "slow") { _ in try await Task.sleep(for: .seconds(8)) },
            ], logger: env.logger)
            let running = Task { await worker.runOnce() }
            try await Task.sleep(for: .seconds(6.5))
            #expect(try await queue.claim(limit: 10, now: Date()).isEmpty, "twice its lease later the job is still its worker's")
            #expect(await running.value == 1)
            let state = try #require(try await queue.state(of: id))
            #expect(state.state == .done && state.attempts == 1)
            #expect(try await queue.claim(limit: 10, now: Date().addingTimeInterval(60)).isEmpty)
        }
    }

    /// A rate limit holds across replicas: on PostgreSQL two limiters on one database (two
    /// replicas) draw exactly `burst` tokens between them under 100 concurrent requests, and the
    /// bucket refills with time; on SQLite (one server) the one process's limiter does the same.
    @Test(arguments: TestEngines.contract)
    func rateLimitsHoldAcrossReplicas(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let shared = !env.database.dialect.writesAreSerial
            let replicas = (0..<(shared ? 2 : 1)).map { _ in SharedRateLimiter(name: "test.api", perSecond: 1, burst: 10, database: env.database) }
            let now = Date()
            let answers = try await withThrowingTaskGroup(of: Int?.self, returning: [Int?].self) { group in
                for index in 0..<100 { group.addTask { try await replicas[index % replicas.count].take("pk_one", now: now) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.filter { $0 == nil }.count == 10)
            #expect(answers.compactMap { $0 }.allSatisfy { $0 >= 1 })
            #expect(try await replicas[0].take("pk_other", now: now) == nil, "each key has its own bucket")
            let other = SharedRateLimiter(name: "test.login", perSecond: 1, burst: 1, database: env.database)
            #expect(try await other.take("pk_one", now: now) == nil, "each limiter has its own buckets")
            if shared {
                #expect(try await replicas[1].take("pk_one", now: now.addingTimeInterval(1.001)) == nil, "a second later one token is back")
                #expect(try await replicas[0].take("pk_one", now: now.addingTimeInterval(1.002)) == 1)
            }
        }
    }

    /// A limiter that draws in batches never admits more than the bucket holds: 100 concurrent
    /// requests on two replicas get at most `burst` between them, and one replica asking one at
    /// a time gets exactly `burst` (its draws grow 1, 2, 4 … and the last takes what is left).
    @Test(arguments: TestEngines.contract)
    func batchedRateLimitsNeverAdmitMore(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            // SQLite has one server: its "replicas" are one limiter, whose buckets are its memory.
            let one = SharedRateLimiter(name: "test.batched", perSecond: 1, burst: 10, batch: 4, database: env.database)
            let replicas = env.database.dialect.writesAreSerial
                ? [one, one] : [one, SharedRateLimiter(name: "test.batched", perSecond: 1, burst: 10, batch: 4, database: env.database)]
            let now = Date()
            let answers = try await withThrowingTaskGroup(of: Int?.self, returning: [Int?].self) { group in
                for index in 0..<100 { group.addTask { try await replicas[index % 2].take("pk_many", now: now) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let admitted = answers.filter { $0 == nil }.count
            #expect(admitted >= 1 && admitted <= 10, "\(admitted) admitted")
            #expect(answers.compactMap { $0 }.allSatisfy { $0 >= 1 })
            var sequential = 0
            for _ in 0..<30 where try await replicas[0].take("pk_one", now: now) == nil { sequential += 1 }
            #expect(sequential == 10)
            #expect(try await replicas[1].take("pk_one", now: now) != nil, "the other replica finds the bucket empty")
        }
    }

    @Test(arguments: TestEngines.contract)
    func workerRunsHandlersAndRecordsFailures(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, clock async throws in
            let okID = try await env.database.transaction { db in try await env.jobs.enqueue(kind: "ok", payload: ["x": 1], runAt: clock.now, in: db) }
            let badID = try await env.database.transaction { db in try await env.jobs.enqueue(kind: "bad", payload: ["x": 1], runAt: clock.now, in: db) }
            struct Boom: Error {}
            let worker = JobWorker(queue: env.jobs, handlers: [
                JobHandler(kind: "ok") { _ in },
                JobHandler(kind: "bad") { _ in throw Boom() },
            ], now: clock.closure, logger: env.logger)
            #expect(await worker.runOnce() == 2)
            #expect(try await env.jobs.state(of: okID)?.state == .done)
            #expect(try await env.jobs.state(of: badID)?.state == .queued)
        }
    }

    /// A ``DatabaseStatement`` reads the same on both engines: parameters by number, reused and out of
    /// order, text, integers and NULL, rows from `RETURNING`; a wrong number of values is refused
    /// before anything runs.
    @Test(arguments: TestEngines.contract)
    func numberedStatementsRunTheSameOnBothEngines(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let rows = try await env.database.transaction { db async throws -> [any SQLRow] in
                try await db.run(DatabaseStatement("CREATE TABLE statement_notes (id TEXT PRIMARY KEY, body TEXT, copy TEXT, size BIGINT NOT NULL)"), [])
                let insert = DatabaseStatement(
                    "INSERT INTO statement_notes (id, body, copy, size) VALUES ($2, $1, $1, $3) RETURNING id, body, copy, size"
                )
                let first = try await db.query(insert, [.text("hello $1"), .text("a"), .integer(Int64.max)])
                try await db.run(insert, [.text(nil), .text("b"), .integer(-7)])
                await #expect(throws: SQLStatementValuesError.self) { try await db.run(insert, [.text("c")]) }
                // Empty text stays text; short (inline) and long non-ASCII text keep every byte; a
                // second statement of the same text runs as the first.
                let again = DatabaseStatement(insert.text)
                try await db.run(again, [.text(""), .text("c"), .integer(1)])
                try await db.run(insert, [.text("Ọ̀nà ₦"), .text("d"), .integer(2)])
                try await db.run(again, [.text(String(repeating: "₦ 🪙 ", count: 40)), .text("e"), .integer(3)])
                let texts = try await db.query(DatabaseStatement("SELECT id, body FROM statement_notes WHERE size BETWEEN $1 AND $2 ORDER BY id"), [.integer(1), .integer(3)])
                #expect(try texts.map { try $0.decode(column: "id", as: String.self) } == ["c", "d", "e"])
                #expect(try texts.map { try $0.decode(column: "body", as: String?.self) } == ["", "Ọ̀nà ₦", String(repeating: "₦ 🪙 ", count: 40)])
                return first + (try await db.query(DatabaseStatement("SELECT id, body, size FROM statement_notes WHERE size < $1 ORDER BY id"), [.integer(0)]))
            }
            #expect(rows.count == 2)
            #expect(try rows[0].decode(column: "id", as: String.self) == "a")
            #expect(try rows[0].decode(column: "body", as: String.self) == "hello $1")
            #expect(try rows[0].decode(column: "copy", as: String.self) == "hello $1")
            #expect(try rows[0].decode(column: "size", as: Int64.self) == Int64.max)
            #expect(try rows[1].decode(column: "id", as: String.self) == "b")
            #expect(try rows[1].decodeNil(column: "body"))
            #expect(try rows[1].decode(column: "size", as: Int64.self) == -7)
        }
    }

    /// `insertedRows` counts what an `INSERT … ON CONFLICT DO NOTHING` inserted, on both engines:
    /// a new row, a conflicting one, two at once with one conflict, after an `UPDATE` that changed rows.
    @Test(arguments: TestEngines.contract)
    func insertedRowsCountsWhatWasInserted(engine: TestEngine) async throws {
        try await withEnvironment(engine) { env, _ async throws in
            let counts = try await env.database.transaction { db async throws -> [Int] in
                try await db.run(DatabaseStatement("CREATE TABLE spent_marks (id TEXT PRIMARY KEY, at BIGINT NOT NULL)"), [])
                let one = DatabaseStatement("INSERT INTO spent_marks (id, at) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                let two = DatabaseStatement("INSERT INTO spent_marks (id, at) VALUES ($1, $3), ($2, $3) ON CONFLICT DO NOTHING")
                var counts = [
                    try await db.insertedRows(one, [.text("a"), .integer(1)]),
                    try await db.insertedRows(one, [.text("a"), .integer(2)]),
                    try await db.insertedRows(two, [.text("a"), .text("b"), .integer(3)]),
                ]
                try await db.run(DatabaseStatement("UPDATE spent_marks SET at = at + 1"), [])
                counts.append(try await db.insertedRows(one, [.text("b"), .integer(4)]))
                counts.append(try await db.insertedRows(two, [.text("c"), .text("d"), .integer(5)]))
                return counts
            }
            #expect(counts == [1, 0, 1, 0, 2])
        }
    }
}

extension DatabaseEngine: CustomTestStringConvertible {
    public var testDescription: String { rawValue }
}

extension TestEngine {
    /// What ``LedgerPosting/balances`` holds after a posting: the users' accounts' new balances,
    /// and the house accounts' where their balance stays in their row.
    func reported(users: [LedgerAccountID: Int64], house: [LedgerAccountID: Int64]) -> [LedgerAccountID: Int64] {
        spreadsHouseBalances ? users : users.merging(house) { user, _ in user }
    }
}

/// A statement no store runs, so its first preparation happens where a test puts it.
private enum PreparedProbe: PreparedDatabaseStatement {
    static let statement = DatabaseStatement("SELECT $1::bigint + 1 AS next")
    static let parameterTypes: [SQLValueType] = [.integer]
}

/// PostgreSQL's id of the running transaction (one per statement outside a transaction).
private enum PreparedTransactionID: PreparedDatabaseStatement {
    static let statement = DatabaseStatement("SELECT pg_current_xact_id()::text AS id")
    static let parameterTypes: [SQLValueType] = []
}

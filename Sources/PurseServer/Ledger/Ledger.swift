import Foundation
import PurseDatabase
import SQLKit

/// A ledger account's id.
public struct LedgerAccountID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// A ledger transaction's id.
public struct LedgerTransactionID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
}

/// One line of a ledger transaction: a signed amount in minor units on one account.
/// Positive credits the account (its balance grows), negative debits it.
public struct LedgerEntry: Sendable, Equatable {
    public var account: LedgerAccountID
    public var amount: Int64
    public init(_ account: LedgerAccountID, _ amount: Int64) {
        self.account = account
        self.amount = amount
    }
}

/// Names an account for ``Ledger/accounts(_:now:in:)``: whose, what for, in which currency.
public struct LedgerAccountSpec: Sendable, Equatable {
    public var owner: UserID?
    public var kind: String
    public var currency: String
    /// Used only when the account is created.
    public var allowNegative: Bool

    public init(owner: UserID?, kind: String, currency: String, allowNegative: Bool = false) {
        self.owner = owner
        self.kind = kind
        self.currency = currency
        self.allowNegative = allowNegative
    }
}

/// A posted transaction and the balances it left on the accounts it touched.
public struct LedgerPosting: Sendable, Equatable {
    public var id: LedgerTransactionID
    /// The new balance of every account whose row the posting moved: every user's account, and
    /// house accounts where writes are serial. A house account whose change went to a slot is
    /// left out (its balance is the sum of rows other transactions move at the same time); read
    /// it with ``Ledger/balance(of:in:)``.
    public var balances: [LedgerAccountID: Int64]
}

public struct LedgerAccount: Sendable, Equatable {
    public var id: LedgerAccountID
    public var ownerID: UserID?
    public var kind: String
    public var currency: String
    public var balance: Int64
    public var allowNegative: Bool
}

public enum LedgerError: Error, Equatable, CustomStringConvertible {
    /// The entries of a transaction do not sum to zero.
    case unbalanced(sum: Int64)
    /// A transaction needs at least two entries, each non-zero.
    case malformed(String)
    /// An entry names an account of another currency.
    case currencyMismatch(account: LedgerAccountID)
    case unknownAccount(LedgerAccountID)
    /// The debit would take an account that may not go negative below zero.
    case insufficientFunds(account: LedgerAccountID)

    public var description: String {
        switch self {
        case .unbalanced(let sum): "ledger transaction does not balance (entries sum to \(sum))"
        case .malformed(let why): "malformed ledger transaction: \(why)"
        case .currencyMismatch(let account): "account \(account) holds another currency"
        case .unknownAccount(let account): "unknown ledger account \(account)"
        case .insufficientFunds(let account): "insufficient funds in \(account)"
        }
    }
}

/// A double-entry ledger over the database.
///
/// Every balance change is a transaction whose entries sum to zero, refused otherwise before
/// anything is written. Each account keeps its balance in the database, moved in the same
/// database transaction as the entries, guarded by `WHERE allow_negative OR balance + amount >= 0`
/// and by the schema's `CHECK`, so concurrent debits can never overdraw an account.
///
/// A user's account keeps its balance in its row. A house account (no owner: settlement,
/// funding, fees), which nearly every payment touches, keeps it in its row where writes are
/// serial (SQLite); where writers run side by side (PostgreSQL) its credits — and every change
/// of a house account allowed to go negative — go to one of ``LedgerStatements/balanceSlots``
/// slot rows picked by the database backend, so concurrent payments do not queue on one row.
/// A debit of a house account that may not go negative first drains the slots into the row
/// (taking the row's lock, then each slot's) and is guarded there. The balance is the row's
/// plus its slots'; every row that makes it up carries the same `CHECK`.
///
/// All methods take the caller's `db` session so a posting joins whatever else the caller's
/// transaction writes (an order row, an idempotency record, a job).
public struct Ledger: Sendable {
    /// Ids of accounts found in the database, shared by copies of this ledger.
    private let directory: LedgerAccountDirectory

    /// - Parameter rememberedAccounts: How many account ids ``accountIDs(_:now:in:)`` keeps in memory.
    public init(rememberedAccounts: Int = 100_000) {
        directory = LedgerAccountDirectory(capacity: rememberedAccounts)
    }

    /// Returns the account of `owner` for `kind` and `currency`, creating it on first use.
    public func account(
        owner: UserID?, kind: String, currency: String, allowNegative: Bool = false, now: Date, in db: any DatabaseSession
    ) async throws -> LedgerAccount {
        if let found = try await find(owner: owner, kind: kind, currency: currency, in: db) { return found }
        let id = owner == nil ? LedgerAccountID("sys_\(kind)_\(currency.lowercased())") : LedgerAccountID(RandomID.make("lac"))
        try await db.raw("""
            INSERT INTO ledger_accounts (id, owner_id, kind, currency, balance, allow_negative, created_at)
            VALUES (\(bind: id.rawValue), \(bind: owner?.rawValue), \(bind: kind), \(bind: currency), 0, \(bind: allowNegative), \(bind: now.epochMillis))
            ON CONFLICT DO NOTHING
            """).run()
        guard let account = try await find(owner: owner, kind: kind, currency: currency, in: db) else {
            throw LedgerError.unknownAccount(id)
        }
        return account
    }

    /// The accounts named by `specs`, in the same order, creating the missing ones — one query
    /// when they all exist (a request that touches four accounts should not pay four round trips).
    public func accounts(_ specs: [LedgerAccountSpec], now: Date, in db: any DatabaseSession) async throws -> [LedgerAccount] {
        try await resolve(specs, now: now, in: db).map(\.account)
    }

    /// The ids of the accounts named by `specs`, in the same order, creating the missing ones —
    /// for a posting, which needs ids, not balances (it returns the balances it leaves).
    ///
    /// An account's id never changes and accounts are never deleted, so ids read from the
    /// database are remembered and a request that posts to accounts used before reads nothing
    /// here (in SQLite every statement of a posting runs on the one writer). Ids of accounts
    /// created in the caller's transaction are not remembered until a later transaction finds
    /// them: the transaction may still roll back. Should a remembered account turn out missing
    /// (a group commit that failed after it was found), the posting that names it fails with
    /// ``LedgerError/unknownAccount(_:)`` and the id is forgotten.
    public func accountIDs(_ specs: [LedgerAccountSpec], now: Date, in db: any DatabaseSession) async throws -> [LedgerAccountID] {
        if let known = directory.ids(of: specs) { return known }
        let resolved = try await resolve(specs, now: now, in: db)
        for (spec, (account, found)) in zip(specs, resolved) where found { directory.remember(account.id, for: spec) }
        return resolved.map(\.account.id)
    }

    /// How many account ids ``accountIDs(_:now:in:)`` remembers now.
    var rememberedAccounts: Int { directory.count }

    /// The accounts named by `specs`, in the same order: those that exist read in one query
    /// (`found`), the others created.
    private func resolve(_ specs: [LedgerAccountSpec], now: Date, in db: any DatabaseSession) async throws -> [(account: LedgerAccount, found: Bool)] {
        guard !specs.isEmpty else { return [] }
        let conditions = specs.map { Self.matching(owner: $0.owner, kind: $0.kind, currency: $0.currency) }
        let rows = try await db.raw(SQLQueryString(LedgerStatements.selectAccounts) + " WHERE " + conditions.joined(separator: " OR ")).all()
        let existing = try rows.map(Self.account(from:))
        var result: [(account: LedgerAccount, found: Bool)] = []
        for spec in specs {
            if let account = existing.first(where: { $0.ownerID == spec.owner && $0.kind == spec.kind && $0.currency == spec.currency }) {
                result.append((account, true))
            } else {
                result.append((try await account(owner: spec.owner, kind: spec.kind, currency: spec.currency, allowNegative: spec.allowNegative, now: now, in: db), false))
            }
        }
        return result
    }

    public func find(owner: UserID?, kind: String, currency: String, in db: any DatabaseSession) async throws -> LedgerAccount? {
        try await db.raw(SQLQueryString(LedgerStatements.selectAccounts) + " WHERE " + Self.matching(owner: owner, kind: kind, currency: currency))
            .first().map(Self.account(from:))
    }

    /// The `WHERE` condition for one account (a system account has no owner: `IS NULL`, not `= NULL`).
    static func matching(owner: UserID?, kind: String, currency: String) -> SQLQueryString {
        if let owner {
            return "(owner_id = \(bind: owner.rawValue) AND kind = \(bind: kind) AND currency = \(bind: currency))"
        }
        return "(owner_id IS NULL AND kind = \(bind: kind) AND currency = \(bind: currency))"
    }

    public func account(_ id: LedgerAccountID, in db: any DatabaseSession) async throws -> LedgerAccount? {
        try await db.raw(SQLQueryString(LedgerStatements.selectAccounts) + " WHERE a.id = \(bind: id.rawValue)").first().map(Self.account(from:))
    }

    /// Posts a balanced transaction.
    /// - Parameters:
    ///   - kind: What happened, e.g. `"nexus.topup"`, `"funding"` (the service names it).
    ///   - entries: At least two non-zero entries summing to zero, all in one currency.
    ///   - reference: An optional id of the business object that caused the posting.
    /// - Returns: The new transaction's id.
    /// - Throws: ``LedgerError``: malformed or unbalanced entries before anything is written;
    ///   an unknown account, a currency mismatch or insufficient funds once the statements ran —
    ///   the caller's database transaction must then roll back (throwing out of it does that).
    @discardableResult
    public func post(
        kind: String, memo: String? = nil, reference: String? = nil, entries: [LedgerEntry], now: Date, in db: any DatabaseSession
    ) async throws -> LedgerTransactionID {
        try await posting(kind: kind, memo: memo, reference: reference, entries: entries, now: now, in: db).id
    }

    /// ``post(kind:memo:reference:entries:now:in:)``, also returning the new balances it left
    /// (read from the same statements that moved them; see ``LedgerPosting/balances``).
    public func posting(
        kind: String, memo: String? = nil, reference: String? = nil, entries: [LedgerEntry], now: Date, in db: any DatabaseSession
    ) async throws -> LedgerPosting {
        guard entries.count >= 2 else { throw LedgerError.malformed("a transaction needs at least two entries") }
        guard entries.allSatisfy({ $0.amount != 0 }) else { throw LedgerError.malformed("entries must be non-zero") }
        // The balance rule applies to each account's net change (a transaction's intermediate
        // states are never visible): one guarded change per account moves its balance.
        // Sized up front: on SQLite this runs on the one writer for every payment.
        var sum: Int64 = 0
        var net: [LedgerAccountID: Int64] = [:]
        net.reserveCapacity(entries.count)
        for entry in entries {
            let (total, totalOverflow) = sum.addingReportingOverflow(entry.amount)
            let (account, accountOverflow) = net[entry.account, default: 0].addingReportingOverflow(entry.amount)
            guard !totalOverflow, !accountOverflow else { throw LedgerError.malformed("amounts overflow") }
            sum = total
            net[entry.account] = account
        }
        guard sum == 0 else { throw LedgerError.unbalanced(sum: sum) }
        let changes = net.sorted { lhs, rhs in
            if (lhs.value < 0) != (rhs.value < 0) { return lhs.value < 0 }
            return lhs.key.rawValue < rhs.key.rawValue
        }
        let transactionID = LedgerTransactionID(RandomID.make("ltx"))
        let millis = now.epochMillis
        let moved = if SQLDialectDifferences(db).writesAreSerial {
            try await postInRows(transactionID, kind: kind, memo: memo, reference: reference, changes: changes, entries: entries, millis: millis, in: db)
        } else {
            try await postSpread(transactionID, kind: kind, memo: memo, reference: reference, changes: changes, entries: entries, millis: millis, in: db)
        }
        return LedgerPosting(id: transactionID, balances: moved)
    }

    /// A posting where writes are serial: the balance of every account moves in its row (no
    /// other writer can be waiting for it), then the transaction and its entries are inserted.
    private func postInRows(
        _ transactionID: LedgerTransactionID, kind: String, memo: String?, reference: String?,
        changes: [(key: LedgerAccountID, value: Int64)], entries: [LedgerEntry], millis: Int64, in db: any DatabaseSession
    ) async throws -> [LedgerAccountID: Int64] {
        var moves: [SQLValue] = []
        moves.reserveCapacity(2 * changes.count)
        for (account, change) in changes {
            moves.append(.text(account.rawValue))
            moves.append(.integer(change))
        }
        let updated = try await db.query(LedgerStatements.moveBalances(accounts: changes.count), moves).map(LedgerStatements.Moved.init(row:))
        let (currency, balances) = try await check(updated, changes: changes, in: db)
        try await db.run(LedgerStatements.insertTransaction, [
            .text(transactionID.rawValue), .text(kind), .text(memo), .text(reference), .integer(millis),
        ])
        // Every entry as given (not netted), in one statement, numbered from 0 in that order.
        var values: [SQLValue] = [.text(transactionID.rawValue), .text(currency), .integer(millis)]
        values.reserveCapacity(3 + 2 * entries.count)
        for entry in entries {
            values.append(.text(entry.account.rawValue))
            values.append(.integer(entry.amount))
        }
        try await db.run(LedgerStatements.insertEntries(count: entries.count), values)
        return balances
    }

    /// A posting where writers run side by side: one statement locks the rows it moves in id
    /// order, spreads house accounts' changes over slots, and inserts the transaction and its
    /// entries — one round trip while the posting's locks are held. A refused posting has
    /// written rows by then; the error it throws rolls them back with the caller's transaction.
    private func postSpread(
        _ transactionID: LedgerTransactionID, kind: String, memo: String?, reference: String?,
        changes: [(key: LedgerAccountID, value: Int64)], entries: [LedgerEntry], millis: Int64, in db: any DatabaseSession
    ) async throws -> [LedgerAccountID: Int64] {
        // The lists go as comma-separated text, so one statement text serves every posting.
        guard !changes.contains(where: { $0.key.rawValue.utf8.contains(UInt8(ascii: ",")) }) else {
            throw LedgerError.malformed("an account id holds a comma")
        }
        let values: [SQLValue] = [
            .text(transactionID.rawValue), .text(kind), .text(memo), .text(reference), .integer(millis),
            .text(changes.map(\.key.rawValue).joined(separator: ",")), .text(changes.map { String($0.value) }.joined(separator: ",")),
            .text(entries.map(\.account.rawValue).joined(separator: ",")), .text(entries.map { String($0.amount) }.joined(separator: ",")),
        ]
        let rows = try await db.rows(LedgerStatements.PostSpread.self, values)
        return try await check(rows, changes: changes, in: db).balances
    }

    /// Checks the rows a posting moved (`id, currency, balance`; the balance is NULL for a change
    /// that went to a slot): every account is there, in one currency.
    /// - Returns: The currency and the balances of the accounts moved in their rows.
    private func check(
        _ rows: [LedgerStatements.Moved], changes: [(key: LedgerAccountID, value: Int64)], in db: any DatabaseSession
    ) async throws -> (currency: String, balances: [LedgerAccountID: Int64]) {
        var currencies: [LedgerAccountID: String] = [:]
        var balances: [LedgerAccountID: Int64] = [:]
        currencies.reserveCapacity(changes.count)
        balances.reserveCapacity(changes.count)
        for row in rows {
            currencies[row.id] = row.currency
            if let balance = row.balance { balances[row.id] = balance }
        }
        for (account, _) in changes where currencies[account] == nil {
            if try await self.account(account, in: db) == nil {
                directory.forget(account)
                throw LedgerError.unknownAccount(account)
            }
            throw LedgerError.insufficientFunds(account: account)
        }
        let currency = currencies[changes[0].key] ?? ""
        if let mixed = changes.first(where: { currencies[$0.key] != currency }) {
            throw LedgerError.currencyMismatch(account: mixed.key)
        }
        return (currency, balances)
    }

    /// The balance of an account: its row's, plus its slots' for a house account.
    public func balance(of account: LedgerAccountID, in db: any DatabaseSession) async throws -> Int64 {
        guard let row = try await db.query(LedgerStatements.balance, [.text(account.rawValue)]).first else {
            throw LedgerError.unknownAccount(account)
        }
        return try row.decode(column: "balance", as: Int64.self)
    }

    /// The balance recomputed from the account's entries.
    public func derivedBalance(of account: LedgerAccountID, in db: any DatabaseSession) async throws -> Int64 {
        let row = try await db.raw("SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) AS total FROM ledger_entries WHERE account_id = \(bind: account.rawValue)").first()
        return try row?.decode(column: "total", as: Int64.self) ?? 0
    }

    /// Audits the whole ledger: every transaction sums to zero and every account's balance (its
    /// row's and its slots') equals the sum of its entries. Returns what is wrong (empty when the books are sound).
    public func audit(in db: any DatabaseSession) async throws -> [String] {
        var problems: [String] = []
        let unbalanced = try await db.raw("""
            SELECT transaction_id, CAST(SUM(amount) AS BIGINT) AS total FROM ledger_entries GROUP BY transaction_id HAVING SUM(amount) <> 0
            """).all()
        for row in unbalanced {
            problems.append("transaction \(try row.decode(column: "transaction_id", as: String.self)) sums to \(try row.decode(column: "total", as: Int64.self))")
        }
        let drifted = try await db.raw("""
            SELECT id, balance, total FROM (
                SELECT a.id AS id, \(unsafeRaw: LedgerStatements.wholeBalance) AS balance,
                    (SELECT CAST(COALESCE(SUM(e.amount), 0) AS BIGINT) FROM ledger_entries e WHERE e.account_id = a.id) AS total
                FROM ledger_accounts a
            ) books WHERE balance <> total
            """).all()
        for row in drifted {
            problems.append("account \(try row.decode(column: "id", as: String.self)) holds \(try row.decode(column: "balance", as: Int64.self)) but entries sum to \(try row.decode(column: "total", as: Int64.self))")
        }
        return problems
    }

    static func account(from row: any SQLRow) throws -> LedgerAccount {
        LedgerAccount(
            id: LedgerAccountID(try row.decode(column: "id", as: String.self)),
            ownerID: try row.decode(column: "owner_id", as: String?.self).map { UserID($0) },
            kind: try row.decode(column: "kind", as: String.self),
            currency: try row.decode(column: "currency", as: String.self),
            balance: try row.decode(column: "balance", as: Int64.self),
            allowNegative: try row.decode(column: "allow_negative", as: Bool.self)
        )
    }
}

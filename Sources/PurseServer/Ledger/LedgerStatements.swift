import PurseDatabase
import SQLKit

/// The ledger's statements. A posting's are written once per number of accounts or entries (up
/// to ``cached``; longer postings build theirs when they come).
enum LedgerStatements {
    static let cached = 16

    /// How many slot rows a house account's balance may be spread over where writers run side
    /// by side: each posting writes to a slot no other running posting holds (``slotLockSpace``),
    /// so up to this many transactions post to a house account without waiting for each other.
    static let balanceSlots = 64

    /// The balance of the account `a`: its row's plus its slots'.
    static let wholeBalance = """
        CAST(a.balance + COALESCE((SELECT SUM(s.balance) FROM ledger_balance_slots s WHERE s.account_id = a.id), 0) AS BIGINT)
        """

    /// The columns of ``Ledger/account(from:)`` from `ledger_accounts a`; a `WHERE` follows.
    static let selectAccounts = "SELECT a.id, a.owner_id, a.kind, a.currency, a.allow_negative, \(wholeBalance) AS balance FROM ledger_accounts a"

    /// Values: the account id. Returns `balance`.
    static let balance = DatabaseStatement("SELECT \(wholeBalance) AS balance FROM ledger_accounts a WHERE a.id = $1")

    static let insertTransaction = DatabaseStatement(
        "INSERT INTO ledger_transactions (id, kind, memo, reference, created_at) VALUES ($1, $2, $3, $4, $5)"
    )

    /// A row of a balance move: an account the posting moved, and its balance in its row (nil
    /// where the change went to a slot).
    struct Moved: Sendable {
        var id: LedgerAccountID
        var currency: String
        var balance: Int64?
    }

    /// Moves the balances of `accounts` accounts by their net change, refusing (no row back for
    /// that account) a change that would take a balance below zero where that is not allowed.
    /// Values: account id and change, for each account (`$1, $2`, `$3, $4`, …). Returns `id,
    /// currency, balance` of every account it moved.
    static func moveBalances(accounts: Int) -> DatabaseStatement {
        accounts <= cached ? movingBalances[accounts] : makeMoveBalances(accounts)
    }

    /// Values: transaction id, currency, time, then account and amount of each entry (its line
    /// is its position).
    static func insertEntries(count: Int) -> DatabaseStatement {
        count <= cached ? insertingEntries[count] : makeInsertEntries(count)
    }

    private static let movingBalances = (0...cached).map(makeMoveBalances)
    private static let insertingEntries = (0...cached).map(makeInsertEntries)

    private static func makeMoveBalances(_ accounts: Int) -> DatabaseStatement {
        let pairs = (0..<accounts).map { (id: "$\(2 * $0 + 1)", change: "$\(2 * $0 + 2)") }
        let delta = "CASE id " + pairs.map { "WHEN \($0.id) THEN \($0.change)" }.joined(separator: " ") + " END"
        return DatabaseStatement(
            "UPDATE ledger_accounts SET balance = balance + \(delta) WHERE id IN (\(pairs.map(\.id).joined(separator: ", ")))"
                + " AND (allow_negative OR balance + \(delta) >= 0) RETURNING id, currency, balance"
        )
    }

    private static func makeInsertEntries(_ count: Int) -> DatabaseStatement {
        let rows = (0..<count).map { "($1, \($0), $\(2 * $0 + 4), $\(2 * $0 + 5), $2, $3)" }
        return DatabaseStatement(
            "INSERT INTO ledger_entries (transaction_id, line, account_id, amount, currency, created_at) VALUES " + rows.joined(separator: ", ")
        )
    }

    /// The advisory-lock key space of drains: a posting that drains a house account (one that
    /// may not go negative) holds its key exclusively, one that credits it holds it shared. A
    /// drain so waits for the credits in flight and runs alone on that account's row and slots:
    /// a credit's slot and foreign-key locks never meet a drain's, in either order.
    static let drainLockSpace = 7_305_308

    /// The advisory-lock key space of slots: a posting that credits house accounts holds the key
    /// of the slot it writes to until it commits, and the next posting looks for a slot no one
    /// holds (from `pid % balanceSlots` on), so concurrent postings never queue on one slot row
    /// while fewer than ``balanceSlots`` run at once; past that they share `pid % balanceSlots`.
    static let slotLockSpace = 7_305_309

    /// A whole posting as one statement, for PostgreSQL, kept prepared on each connection (its
    /// plan costs more than its run). Values: transaction id, kind, memo, reference, time; then
    /// the ids of the accounts that move and their net changes, and the account ids and amounts
    /// of the entries (a line is its position), each list as comma-separated text.
    ///
    /// It takes the drain locks (``drainLockSpace``) in account id order; it locks, in id
    /// order, the rows of the accounts whose balance moves in their row — users' accounts, and
    /// house accounts that may not go negative when debited, whose slots it first drains into
    /// the row — and moves them under the balance guard; it adds every other
    /// house account's change to the backend's slot; it inserts the transaction and its entries.
    /// Returns `id, currency, balance` for each account it moved (the balance NULL for a slot);
    /// an account refused by the guard, or unknown, is missing from the rows.
    ///
    /// The slot is taken once per statement (`free_slot` is evaluated only when some change goes
    /// to a slot, and once).
    enum PostSpread: PreparedDatabaseQuery {
        static let parameterTypes: [SQLValueType] = [.text, .text, .text, .text, .integer, .text, .text, .text, .text]
        static let columnTypes: [SQLValueType] = [.text, .text, .integer]
        static func row(_ columns: DatabaseColumns) throws -> Moved {
            Moved(id: LedgerAccountID(try columns.text(0)), currency: try columns.text(1), balance: try columns.optionalInteger(2))
        }
        static let statement = DatabaseStatement("""
            WITH changes (id, change) AS (
                SELECT u.id, u.change FROM unnest(string_to_array($6, ','), string_to_array($7, ',')::bigint[]) AS u (id, change)
            ),
            accounts AS (
                SELECT x.*, CASE
                    WHEN x.drains THEN pg_advisory_xact_lock(\(drainLockSpace), hashtext(x.id))
                    WHEN x.owner_id IS NULL AND NOT x.allow_negative THEN pg_advisory_xact_lock_shared(\(drainLockSpace), hashtext(x.id))
                END AS serialised
                FROM (
                    SELECT a.id, a.owner_id, a.currency, a.allow_negative, c.change,
                        a.owner_id IS NULL AND (a.allow_negative OR c.change > 0) AS to_slot,
                        a.owner_id IS NULL AND NOT a.allow_negative AND c.change < 0 AS drains
                    FROM changes c JOIN ledger_accounts a ON a.id = c.id ORDER BY a.id
                ) x
            ),
            locked AS (
                SELECT a.id FROM ledger_accounts a WHERE a.id IN (SELECT id FROM accounts WHERE NOT to_slot)
                ORDER BY a.id FOR NO KEY UPDATE
            ),
            drained AS (
                DELETE FROM ledger_balance_slots s USING locked l, accounts x
                WHERE s.account_id = l.id AND x.id = l.id AND x.drains
                RETURNING s.account_id, s.balance
            ),
            moved AS (
                UPDATE ledger_accounts a SET balance = a.balance + x.change + x.drained
                FROM (
                    SELECT c.id, c.change, CAST(COALESCE((SELECT SUM(d.balance) FROM drained d WHERE d.account_id = c.id), 0) AS BIGINT) AS drained
                    FROM accounts c JOIN locked l ON l.id = c.id
                ) x
                WHERE a.id = x.id AND (a.allow_negative OR a.balance + x.change + x.drained >= 0)
                RETURNING a.id, a.currency, a.balance
            ),
            free_slot (slot) AS (
                SELECT COALESCE((
                    SELECT p.slot FROM generate_series(0, \(balanceSlots - 1)) AS g (i), LATERAL (SELECT (pg_backend_pid() + g.i) % \(balanceSlots)) AS p (slot)
                    WHERE pg_try_advisory_xact_lock(\(slotLockSpace), p.slot) LIMIT 1
                ), pg_backend_pid() % \(balanceSlots))
            ),
            slotted AS (
                INSERT INTO ledger_balance_slots AS s (account_id, slot, allow_negative, balance)
                SELECT id, (SELECT slot FROM free_slot), allow_negative, change FROM accounts WHERE to_slot
                ON CONFLICT (account_id, slot) DO UPDATE SET balance = s.balance + EXCLUDED.balance
                RETURNING s.account_id
            ),
            posted AS (
                INSERT INTO ledger_transactions (id, kind, memo, reference, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id
            ),
            lines AS (
                INSERT INTO ledger_entries (transaction_id, line, account_id, amount, currency, created_at)
                SELECT p.id, e.line - 1, e.id, e.amount, x.currency, $5
                FROM posted p
                CROSS JOIN unnest(string_to_array($8, ','), string_to_array($9, ',')::bigint[]) WITH ORDINALITY AS e (id, amount, line)
                JOIN accounts x ON x.id = e.id
            )
            SELECT id, currency, balance FROM moved
            UNION ALL SELECT x.id, x.currency, NULL FROM slotted s JOIN accounts x ON x.id = s.account_id
            """)
    }
}

extension LedgerStatements.Moved {
    /// A row of ``LedgerStatements/moveBalances(accounts:)``, the posting where writes are serial.
    init(row: any SQLRow) throws {
        self.init(
            id: LedgerAccountID(try row.decode(column: "id", as: String.self)),
            currency: try row.decode(column: "currency", as: String.self),
            balance: try row.decode(column: "balance", as: Int64?.self)
        )
    }
}

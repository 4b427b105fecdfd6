import PurseDatabase
/// The schema every service stands on. Invariants live here, not only in Swift:
/// non-negative balances unless an account may go negative, non-zero entries,
/// one idempotency record per (user, key), known job states.
public enum CoreMigrations {
    public static let all: [Migration] = [
        Migration("0001_core_users", [
            """
            CREATE TABLE users (
                id TEXT PRIMARY KEY,
                email TEXT UNIQUE,
                phone TEXT UNIQUE,
                name TEXT,
                password_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                CHECK (email IS NOT NULL OR phone IS NOT NULL)
            )
            """,
        ]),
        Migration("0002_core_ledger", [
            """
            CREATE TABLE ledger_accounts (
                id TEXT PRIMARY KEY,
                owner_id TEXT REFERENCES users(id),
                kind TEXT NOT NULL,
                currency TEXT NOT NULL,
                balance BIGINT NOT NULL DEFAULT 0,
                allow_negative BOOLEAN NOT NULL DEFAULT FALSE,
                created_at BIGINT NOT NULL,
                CHECK (allow_negative OR balance >= 0),
                UNIQUE (owner_id, kind, currency)
            )
            """,
            """
            CREATE TABLE ledger_transactions (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                memo TEXT,
                reference TEXT,
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE ledger_entries (
                id TEXT PRIMARY KEY,
                transaction_id TEXT NOT NULL REFERENCES ledger_transactions(id),
                account_id TEXT NOT NULL REFERENCES ledger_accounts(id),
                amount BIGINT NOT NULL CHECK (amount <> 0),
                currency TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX ledger_entries_account ON ledger_entries (account_id, created_at)",
            "CREATE INDEX ledger_entries_transaction ON ledger_entries (transaction_id)",
        ]),
        Migration("0003_core_idempotency", [
            """
            CREATE TABLE idempotency_keys (
                user_id TEXT NOT NULL,
                key TEXT NOT NULL,
                scope TEXT NOT NULL,
                request_hash TEXT NOT NULL,
                status_code INTEGER NOT NULL CHECK (status_code BETWEEN 100 AND 599),
                response_body TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (user_id, key)
            )
            """,
        ]),
        Migration("0004_core_jobs", [
            """
            CREATE TABLE jobs (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'dead')),
                attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
                max_attempts INTEGER NOT NULL CHECK (max_attempts > 0),
                run_at BIGINT NOT NULL,
                locked_until BIGINT,
                last_error TEXT,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX jobs_ready ON jobs (state, run_at)",
        ]),
        // A journal entry is a line of its transaction: keyed by (transaction, line), as journals
        // number them, instead of an id of its own that nothing read. On SQLite the table is
        // clustered by that key (WITHOUT ROWID) — a transaction's entries are one append to one
        // B-tree, where the id-keyed table took four B-tree inserts per entry (the rows, the id's
        // index, the transaction index, the account index), the most of any table a payment
        // writes; the key's index also serves lookups by transaction, so that index goes.
        Migration(
            "0005_core_ledger_entries_by_transaction",
            sqlite: [
                """
                CREATE TABLE ledger_entries_by_line (
                    transaction_id TEXT NOT NULL REFERENCES ledger_transactions(id),
                    line INTEGER NOT NULL CHECK (line >= 0),
                    account_id TEXT NOT NULL REFERENCES ledger_accounts(id),
                    amount BIGINT NOT NULL CHECK (amount <> 0),
                    currency TEXT NOT NULL,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (transaction_id, line)
                ) WITHOUT ROWID
                """,
                """
                INSERT INTO ledger_entries_by_line (transaction_id, line, account_id, amount, currency, created_at)
                SELECT transaction_id, ROW_NUMBER() OVER (PARTITION BY transaction_id ORDER BY id) - 1, account_id, amount, currency, created_at
                FROM ledger_entries
                """,
                "DROP TABLE ledger_entries",
                "ALTER TABLE ledger_entries_by_line RENAME TO ledger_entries",
                "CREATE INDEX ledger_entries_account ON ledger_entries (account_id, created_at)",
            ],
            postgres: [
                "ALTER TABLE ledger_entries ADD COLUMN line INTEGER",
                """
                UPDATE ledger_entries e SET line = numbered.line
                FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY transaction_id ORDER BY id) - 1 AS line FROM ledger_entries) numbered
                WHERE numbered.id = e.id
                """,
                "ALTER TABLE ledger_entries ALTER COLUMN line SET NOT NULL",
                "ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_line_check CHECK (line >= 0)",
                "ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_pkey",
                "ALTER TABLE ledger_entries DROP COLUMN id",
                "ALTER TABLE ledger_entries ADD PRIMARY KEY (transaction_id, line)",
                "DROP INDEX ledger_entries_transaction",
            ]
        ),
        // A house account (no owner: settlement, funding, fees) is credited or debited by almost
        // every payment. Where writers run side by side (PostgreSQL), keeping its balance in its
        // one row makes every payment queue on that row's lock until the payer's commit. Its
        // changes go instead to one of several slot rows, chosen by the database backend, so
        // concurrent postings touch different rows; the balance is the row's plus its slots'.
        // A slot copies its account's `allow_negative` (held to it by the foreign key) so the
        // same CHECK guards every row that makes up a balance.
        Migration("0006_core_ledger_balance_slots", [
            "CREATE UNIQUE INDEX ledger_accounts_id_allow_negative ON ledger_accounts (id, allow_negative)",
            """
            CREATE TABLE ledger_balance_slots (
                account_id TEXT NOT NULL,
                slot INTEGER NOT NULL CHECK (slot >= 0),
                allow_negative BOOLEAN NOT NULL,
                balance BIGINT NOT NULL,
                PRIMARY KEY (account_id, slot),
                FOREIGN KEY (account_id, allow_negative) REFERENCES ledger_accounts (id, allow_negative),
                CHECK (allow_negative OR balance >= 0)
            )
            """,
        ]),
        // Rate limits that hold across replicas (``SharedRateLimiter``): one row per bucket.
        Migration("0007_core_rate_buckets", [
            """
            CREATE TABLE rate_buckets (
                key TEXT PRIMARY KEY,
                micro_tokens BIGINT NOT NULL CHECK (micro_tokens >= 0),
                updated_at BIGINT NOT NULL,
                taken INTEGER NOT NULL CHECK (taken IN (0, 1))
            )
            """,
            "CREATE INDEX rate_buckets_updated ON rate_buckets (updated_at)",
        ]),
        // How many tokens a bucket's last draw took: a replica may draw a few at once.
        Migration("0008_core_rate_bucket_batches", [
            "ALTER TABLE rate_buckets ADD COLUMN drawn BIGINT NOT NULL DEFAULT 0 CHECK (drawn >= 0)",
        ]),
        // A stored answer the first request will still replace (a top-up's, until its delivery's
        // first verdict): a retry waits for the final one instead of answering with this.
        Migration("0009_core_idempotency_provisional", [
            "ALTER TABLE idempotency_keys ADD COLUMN provisional BOOLEAN NOT NULL DEFAULT FALSE",
        ]),
    ]
}

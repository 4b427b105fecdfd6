import PurseDatabase
import PurseServer

enum ConnectMigrations {
    static let all: [Migration] = [
        Migration("connect_0001_accounts", [
            """
            CREATE TABLE connect_accounts (
                user_id TEXT PRIMARY KEY REFERENCES users(id),
                stripe_account_id TEXT NOT NULL UNIQUE,
                onboarding_complete BOOLEAN NOT NULL DEFAULT FALSE,
                charges_enabled BOOLEAN NOT NULL DEFAULT FALSE,
                payouts_enabled BOOLEAN NOT NULL DEFAULT FALSE,
                details_submitted BOOLEAN NOT NULL DEFAULT FALSE,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE connect_stripe_events (
                id TEXT PRIMARY KEY,
                type TEXT NOT NULL,
                received_at BIGINT NOT NULL
            )
            """,
        ]),
        Migration("connect_0002_sandbox", [
            """
            CREATE TABLE stripe_sandbox_accounts (
                id TEXT PRIMARY KEY,
                body TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE stripe_sandbox_links (
                token TEXT PRIMARY KEY,
                account_id TEXT NOT NULL REFERENCES stripe_sandbox_accounts(id),
                refresh_url TEXT NOT NULL,
                return_url TEXT NOT NULL,
                expires_at BIGINT NOT NULL,
                used_at BIGINT
            )
            """,
            """
            CREATE TABLE stripe_sandbox_idempotency (
                key TEXT PRIMARY KEY,
                request_hash TEXT NOT NULL,
                status_code INTEGER NOT NULL,
                body TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )
            """,
        ]),
        // Stripe does not promise delivery order: an older account.updated must not undo a newer one.
        Migration("connect_0003_event_order", [
            "ALTER TABLE connect_accounts ADD COLUMN last_event_created BIGINT NOT NULL DEFAULT 0",
        ]),
        Migration("connect_0004_paid_events", [
            """
            CREATE TABLE connect_events (
                id TEXT PRIMARY KEY,
                host_user_id TEXT NOT NULL REFERENCES users(id),
                title TEXT NOT NULL,
                description TEXT,
                starts_at BIGINT NOT NULL,
                price BIGINT NOT NULL CHECK (price >= 50),
                currency TEXT NOT NULL,
                capacity INTEGER CHECK (capacity IS NULL OR capacity > 0),
                tickets_sold INTEGER NOT NULL DEFAULT 0 CHECK (tickets_sold >= 0 AND (capacity IS NULL OR tickets_sold <= capacity)),
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE connect_tickets (
                id TEXT PRIMARY KEY,
                event_id TEXT NOT NULL REFERENCES connect_events(id),
                buyer_user_id TEXT NOT NULL REFERENCES users(id),
                payment_intent_id TEXT NOT NULL UNIQUE,
                amount BIGINT NOT NULL CHECK (amount > 0),
                application_fee BIGINT NOT NULL CHECK (application_fee >= 0 AND application_fee < amount),
                ledger_transaction_id TEXT NOT NULL REFERENCES ledger_transactions(id),
                created_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX connect_tickets_event ON connect_tickets (event_id)",
        ]),
        Migration("connect_0005_sandbox_payments", [
            """
            CREATE TABLE stripe_sandbox_payment_intents (
                id TEXT PRIMARY KEY,
                body TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )
            """,
        ]),
        // A buyer's seat is held from before the charge until the sale is recorded, once per
        // Idempotency-Key: a retry finds its hold instead of taking another seat, a failed
        // charge gives the seat back, and a recorded sale turns the hold into a ticket.
        Migration("connect_0006_seat_holds", [
            """
            CREATE TABLE connect_seat_holds (
                buyer_user_id TEXT NOT NULL REFERENCES users(id),
                idempotency_key TEXT NOT NULL,
                event_id TEXT NOT NULL REFERENCES connect_events(id),
                request_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (buyer_user_id, idempotency_key)
            )
            """,
        ]),
    ]
}

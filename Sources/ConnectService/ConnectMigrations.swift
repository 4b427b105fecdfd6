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
    ]
}

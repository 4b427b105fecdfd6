import PurseDatabase
import StarknetDevnet

/// ChippiPay's schema: the sandbox Starknet node's chain (head, blocks, contracts, storage,
/// transactions, events), and the provider's merchants, API keys, wallets, purchases and webhook
/// deliveries. Felts are stored as minimal 0x-hex text, STRK amounts as decimal fri.
enum ChippiPayMigrations {
    static let all: [Migration] = [
        StarknetDevnet.migration,
        Migration("chippi_0002_provider", [
            """
            CREATE TABLE chippi_merchants (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                webhook_url TEXT,
                webhook_secret TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE chippi_api_keys (
                public_key TEXT PRIMARY KEY,
                merchant_id TEXT NOT NULL REFERENCES chippi_merchants(id),
                secret_hash TEXT NOT NULL UNIQUE,
                revoked_at BIGINT,
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE chippi_wallets (
                id TEXT PRIMARY KEY,
                merchant_id TEXT NOT NULL REFERENCES chippi_merchants(id),
                external_user_id TEXT NOT NULL,
                public_key TEXT,
                encrypted_private_key TEXT,
                address TEXT,
                status TEXT NOT NULL CHECK (status IN ('prepared', 'active')),
                metadata TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                UNIQUE (merchant_id, external_user_id)
            )
            """,
            """
            CREATE TABLE chippi_sku_transactions (
                id TEXT PRIMARY KEY,
                merchant_id TEXT NOT NULL REFERENCES chippi_merchants(id),
                wallet_id TEXT NOT NULL REFERENCES chippi_wallets(id),
                sku_id TEXT NOT NULL,
                reference TEXT NOT NULL,
                amount_centavos BIGINT NOT NULL CHECK (amount_centavos > 0),
                currency TEXT NOT NULL,
                strk_fri TEXT NOT NULL,
                paid_fri TEXT NOT NULL,
                payer TEXT NOT NULL,
                vault_transaction_hash TEXT NOT NULL UNIQUE,
                status TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
                failure_reason TEXT,
                refund_transaction_hash TEXT,
                metadata TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                CHECK ((status = 'failed') = (failure_reason IS NOT NULL))
            )
            """,
            "CREATE INDEX chippi_sku_transactions_wallet ON chippi_sku_transactions (merchant_id, wallet_id, created_at)",
            """
            CREATE TABLE chippi_webhook_deliveries (
                id TEXT PRIMARY KEY,
                merchant_id TEXT NOT NULL REFERENCES chippi_merchants(id),
                event TEXT NOT NULL,
                transaction_id TEXT NOT NULL,
                url TEXT NOT NULL,
                payload TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
                attempts INTEGER NOT NULL DEFAULT 0,
                last_status_code INTEGER,
                last_error TEXT,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX chippi_webhook_deliveries_merchant ON chippi_webhook_deliveries (merchant_id, created_at)",
        ]),
        Migration("chippi_0003_wallet_deployment", [
            "ALTER TABLE chippi_wallets ADD COLUMN deploy_transaction_hash TEXT",
        ]),
        Migration("chippi_0004_paymaster_relays", [
            """
            CREATE TABLE chippi_relays (
                account TEXT NOT NULL,
                nonce TEXT NOT NULL,
                transaction_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (account, nonce)
            )
            """,
        ]),
        Migration("chippi_0005_merchant_auth_issuer", [
            "ALTER TABLE chippi_merchants ADD COLUMN auth_hs256_secret TEXT",
        ]),
        Migration("chippi_0006_merchant_jwks", [
            "ALTER TABLE chippi_merchants ADD COLUMN auth_jwks_url TEXT",
        ]),
        // Accounts a wallet pays from besides its own (the user's connected Starknet wallet),
        // each with the account's signature over `PayerLink`.
        Migration("chippi_0007_wallet_payers", [
            """
            CREATE TABLE chippi_wallet_payers (
                wallet_id TEXT NOT NULL REFERENCES chippi_wallets(id),
                address TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (wallet_id, address)
            )
            """,
        ]),
        // Whose budget a relay counts against.
        Migration("chippi_0008_relay_budget", [
            "ALTER TABLE chippi_relays ADD COLUMN merchant_id TEXT",
            "CREATE INDEX chippi_relays_by_merchant ON chippi_relays (merchant_id, created_at)",
            "CREATE INDEX chippi_relays_by_account ON chippi_relays (account, created_at)",
        ]),
        Migration("chippi_0009_paymaster_spend", [
            // What the paymaster has sponsored per account and per merchant and UTC day: relays,
            // and their fees at most (the transactions' max fee, in nano-STRK). Each relay draws
            // from both rows in one conditional update, so the budgets hold across replicas.
            """
            CREATE TABLE chippi_paymaster_spend (
                scope TEXT NOT NULL,
                day TEXT NOT NULL,
                relays BIGINT NOT NULL DEFAULT 0 CHECK (relays >= 0),
                fee_nano BIGINT NOT NULL DEFAULT 0 CHECK (fee_nano >= 0),
                PRIMARY KEY (scope, day)
            )
            """,
        ]),
        // A merchant account may be suspended, and its keys limited to some of the API's areas
        // (catalogue, purchases, wallets, paymaster): the seed's "is the account active, does it
        // have permissions".
        Migration("chippi_0010_merchant_status", [
            "ALTER TABLE chippi_merchants ADD COLUMN active BOOLEAN NOT NULL DEFAULT TRUE",
            "ALTER TABLE chippi_merchants ADD COLUMN permissions TEXT NOT NULL DEFAULT 'catalogue,purchases,wallets,paymaster'",
        ]),
        // A rotated webhook secret stays valid for a window: deliveries carry a signature with
        // each (Stripe's several `v1=`), so a merchant's receiver keeps working until redeployed.
        Migration("chippi_0011_webhook_secret_roll", [
            "ALTER TABLE chippi_merchants ADD COLUMN previous_webhook_secret TEXT",
            "ALTER TABLE chippi_merchants ADD COLUMN previous_webhook_secret_until BIGINT",
        ]),
        // A payment the provider received and refused (short, from an account not linked to the
        // wallet) is recorded as a purchase that fails with a refund, so the money goes back
        // exactly once, as a failed delivery's does.
        Migration("chippi_0012_refused_payments", [
            "ALTER TABLE chippi_sku_transactions ADD COLUMN refusal TEXT",
        ]),
        // Every payment the provider's address received, read from the chain, and whether a
        // purchase claimed it; one unclaimed past a window goes back to its payer, once. A claim
        // and a return exclude each other by a conditional update of `state`.
        Migration("chippi_0013_incoming_payments", [
            """
            CREATE TABLE chippi_incoming_payments (
                transaction_hash TEXT PRIMARY KEY,
                payer TEXT NOT NULL,
                amount_fri TEXT NOT NULL,
                from_vault BOOLEAN NOT NULL,
                block_number BIGINT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('unclaimed', 'claimed', 'returning', 'returned')),
                refund_transaction_hash TEXT,
                seen_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                CHECK ((state = 'returned') = (refund_transaction_hash IS NOT NULL))
            )
            """,
            "CREATE INDEX chippi_incoming_payments_unclaimed ON chippi_incoming_payments (state, seen_at)",
            "CREATE INDEX chippi_incoming_payments_refunds ON chippi_incoming_payments (refund_transaction_hash)",
            "CREATE INDEX chippi_sku_transactions_refunds ON chippi_sku_transactions (refund_transaction_hash)",
            """
            CREATE TABLE chippi_payment_scan (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                next_block BIGINT NOT NULL CHECK (next_block >= 0)
            )
            """,
        ]),
    ]
}

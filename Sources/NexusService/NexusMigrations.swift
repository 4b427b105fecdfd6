import PurseDatabase
import PurseServer

/// Nexus Data's schema: WebAuthn credentials and challenges, spent step-up tokens, the
/// product catalogue (seeded), transaction PINs and wallet transactions.
enum NexusMigrations {
    static let all: [Migration] = [
        Migration("nexus_0001_webauthn", [
            """
            CREATE TABLE nexus_credentials (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                public_key TEXT NOT NULL,
                sign_count BIGINT NOT NULL CHECK (sign_count >= 0),
                transports TEXT NOT NULL DEFAULT '[]',
                aaguid TEXT NOT NULL,
                attestation_format TEXT NOT NULL,
                name TEXT,
                created_at BIGINT NOT NULL,
                last_used_at BIGINT
            )
            """,
            "CREATE INDEX nexus_credentials_user ON nexus_credentials (user_id)",
            """
            CREATE TABLE nexus_challenges (
                challenge TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                ceremony TEXT NOT NULL CHECK (ceremony IN ('registration', 'authentication')),
                intent TEXT NOT NULL CHECK (intent IN ('transaction', 'unlock', 'enrol')),
                user_verification TEXT NOT NULL CHECK (user_verification IN ('required', 'preferred', 'discouraged')),
                expires_at BIGINT NOT NULL,
                used_at BIGINT,
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE nexus_used_tokens (
                jti TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                used_at BIGINT NOT NULL
            )
            """,
        ]),
        Migration("nexus_0002_products", [
            """
            CREATE TABLE nexus_products (
                code TEXT PRIMARY KEY,
                supplier_slug TEXT NOT NULL,
                network TEXT NOT NULL,
                category TEXT NOT NULL CHECK (category IN ('airtime', 'data')),
                name TEXT NOT NULL,
                min_amount BIGINT NOT NULL CHECK (min_amount > 0),
                max_amount BIGINT NOT NULL,
                active BOOLEAN NOT NULL DEFAULT TRUE,
                CHECK (max_amount >= min_amount)
            )
            """,
        ] + NexusCatalogue.seed.map { product in
            """
            INSERT INTO nexus_products (code, supplier_slug, network, category, name, min_amount, max_amount, active)
            VALUES ('\(product.code)', '\(product.supplierSlug)', '\(product.network)', '\(product.category)', '\(product.name)', \(product.minAmount), \(product.maxAmount), TRUE)
            """
        }),
        Migration("nexus_0003_wallet", [
            """
            CREATE TABLE nexus_pins (
                user_id TEXT PRIMARY KEY REFERENCES users(id),
                pin_hash TEXT NOT NULL,
                failed_attempts INTEGER NOT NULL DEFAULT 0 CHECK (failed_attempts >= 0),
                locked_until BIGINT,
                updated_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE nexus_transactions (
                id TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(id),
                kind TEXT NOT NULL CHECK (kind IN ('topup', 'funding')),
                product_code TEXT REFERENCES nexus_products(code),
                recipient_phone TEXT,
                amount BIGINT NOT NULL CHECK (amount > 0),
                cashback_used BIGINT NOT NULL DEFAULT 0 CHECK (cashback_used >= 0),
                cashback_earned BIGINT NOT NULL DEFAULT 0 CHECK (cashback_earned >= 0),
                method TEXT CHECK (method IN ('biometric', 'pin')),
                status TEXT NOT NULL CHECK (status IN ('completed', 'failed')),
                ledger_transaction_id TEXT NOT NULL REFERENCES ledger_transactions(id),
                created_at BIGINT NOT NULL,
                CHECK (kind <> 'topup' OR (product_code IS NOT NULL AND recipient_phone IS NOT NULL AND method IS NOT NULL))
            )
            """,
            "CREATE INDEX nexus_transactions_user ON nexus_transactions (user_id, created_at, id)",
        ]),
        // Every options request prunes long-expired challenges: without this index that is a full scan
        // that grows with traffic.
        Migration("nexus_0004_challenge_expiry_index", [
            "CREATE INDEX nexus_challenges_expiry ON nexus_challenges (expires_at)",
        ]),
        // Spent step-up tokens are only ever inserted and looked up by their id: on SQLite one
        // B-tree keyed by it (WITHOUT ROWID) instead of a table and its key's index. PostgreSQL
        // keeps its table as it is.
        Migration(
            "nexus_0005_used_tokens_by_id",
            sqlite: [
                """
                CREATE TABLE nexus_used_tokens_by_id (
                    jti TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users(id),
                    used_at BIGINT NOT NULL
                ) WITHOUT ROWID
                """,
                "INSERT INTO nexus_used_tokens_by_id (jti, user_id, used_at) SELECT jti, user_id, used_at FROM nexus_used_tokens",
                "DROP TABLE nexus_used_tokens",
                "ALTER TABLE nexus_used_tokens_by_id RENAME TO nexus_used_tokens",
            ],
            postgres: []
        ),
        // Airtime is delivered by a supplier (VTpass): a top-up is `pending` until the supplier
        // confirms (`completed`) or refuses (`failed`, refunded). Each product names the
        // supplier's service and plan; each top-up has one delivery with its supplier request id.
        Migration(
            "nexus_0006_airtime_delivery",
            sqlite: productSupplierColumns + [
                """
                CREATE TABLE nexus_transactions_v2 (
                    id TEXT PRIMARY KEY,
                    user_id TEXT NOT NULL REFERENCES users(id),
                    kind TEXT NOT NULL CHECK (kind IN ('topup', 'funding')),
                    product_code TEXT REFERENCES nexus_products(code),
                    recipient_phone TEXT,
                    amount BIGINT NOT NULL CHECK (amount > 0),
                    cashback_used BIGINT NOT NULL DEFAULT 0 CHECK (cashback_used >= 0),
                    cashback_earned BIGINT NOT NULL DEFAULT 0 CHECK (cashback_earned >= 0),
                    method TEXT CHECK (method IN ('biometric', 'pin')),
                    status TEXT NOT NULL CHECK (status IN ('pending', 'completed', 'failed')),
                    ledger_transaction_id TEXT NOT NULL REFERENCES ledger_transactions(id),
                    created_at BIGINT NOT NULL,
                    failure_reason TEXT,
                    CHECK (kind <> 'topup' OR (product_code IS NOT NULL AND recipient_phone IS NOT NULL AND method IS NOT NULL)),
                    CHECK (kind = 'topup' OR status = 'completed')
                )
                """,
                """
                INSERT INTO nexus_transactions_v2 (id, user_id, kind, product_code, recipient_phone, amount, cashback_used, cashback_earned, method, status, ledger_transaction_id, created_at)
                SELECT id, user_id, kind, product_code, recipient_phone, amount, cashback_used, cashback_earned, method, status, ledger_transaction_id, created_at FROM nexus_transactions
                """,
                "DROP TABLE nexus_transactions",
                "ALTER TABLE nexus_transactions_v2 RENAME TO nexus_transactions",
                "CREATE INDEX nexus_transactions_user ON nexus_transactions (user_id, created_at, id)",
            ] + deliveryTables,
            postgres: productSupplierColumns + [
                "ALTER TABLE nexus_transactions DROP CONSTRAINT nexus_transactions_status_check",
                "ALTER TABLE nexus_transactions ADD CONSTRAINT nexus_transactions_status_check CHECK (status IN ('pending', 'completed', 'failed'))",
                "ALTER TABLE nexus_transactions ADD CONSTRAINT nexus_transactions_only_topups_pend CHECK (kind = 'topup' OR status = 'completed')",
                "ALTER TABLE nexus_transactions ADD COLUMN failure_reason TEXT",
            ] + deliveryTables
        ),
    ]

    static let productSupplierColumns = [
        "ALTER TABLE nexus_products ADD COLUMN supplier_service_id TEXT",
        "ALTER TABLE nexus_products ADD COLUMN supplier_variation_code TEXT",
            "UPDATE nexus_products SET supplier_service_id = 'mtn', supplier_variation_code = NULL WHERE code = 'AIRTIME_MTN'",
            "UPDATE nexus_products SET supplier_service_id = 'airtel', supplier_variation_code = NULL WHERE code = 'AIRTIME_AIRTEL'",
            "UPDATE nexus_products SET supplier_service_id = 'glo', supplier_variation_code = NULL WHERE code = 'AIRTIME_GLO'",
            "UPDATE nexus_products SET supplier_service_id = 'etisalat', supplier_variation_code = NULL WHERE code = 'AIRTIME_9MOBILE'",
            "UPDATE nexus_products SET supplier_service_id = 'mtn-data', supplier_variation_code = 'mtn-1gb-1000' WHERE code = 'DATA_MTN_1GB'",
            "UPDATE nexus_products SET supplier_service_id = 'mtn-data', supplier_variation_code = 'mtn-5gb-3500' WHERE code = 'DATA_MTN_5GB'",
            "UPDATE nexus_products SET supplier_service_id = 'airtel-data', supplier_variation_code = 'airt-1000' WHERE code = 'DATA_AIRTEL_1GB'",
            "UPDATE nexus_products SET supplier_service_id = 'airtel-data', supplier_variation_code = 'airt-3500' WHERE code = 'DATA_AIRTEL_5GB'",
            "UPDATE nexus_products SET supplier_service_id = 'glo-data', supplier_variation_code = 'glo500' WHERE code = 'DATA_GLO_1GB'",
            "UPDATE nexus_products SET supplier_service_id = 'glo-data', supplier_variation_code = 'glo2000' WHERE code = 'DATA_GLO_5GB'",
            "UPDATE nexus_products SET supplier_service_id = 'etisalat-data', supplier_variation_code = 'eti-1000' WHERE code = 'DATA_9MOBILE_1GB'",
            "UPDATE nexus_products SET supplier_service_id = 'etisalat-data', supplier_variation_code = 'eti-4000' WHERE code = 'DATA_9MOBILE_4GB'",
    ]

    static let deliveryTables = [
        """
        CREATE TABLE nexus_deliveries (
            transaction_id TEXT PRIMARY KEY REFERENCES nexus_transactions(id),
            supplier TEXT NOT NULL,
            request_id TEXT NOT NULL UNIQUE,
            service_id TEXT NOT NULL,
            variation_code TEXT,
            phone TEXT NOT NULL,
            amount BIGINT NOT NULL CHECK (amount > 0),
            job_id TEXT,
            supplier_reference TEXT,
            last_answer TEXT,
            attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        )
        """,
        // The built-in VTpass sandbox's purchases (unused when VTPASS_URL points at VTpass).
        """
        CREATE TABLE vtpass_sandbox_transactions (
            request_id TEXT PRIMARY KEY,
            service_id TEXT NOT NULL,
            variation_code TEXT,
            product_name TEXT NOT NULL,
            phone TEXT NOT NULL,
            amount BIGINT NOT NULL CHECK (amount > 0),
            transaction_id TEXT NOT NULL,
            final_status TEXT NOT NULL CHECK (final_status IN ('delivered', 'failed', 'reversed')),
            created_at BIGINT NOT NULL,
            settles_at BIGINT NOT NULL
        )
        """,
    ]
}

/// The seeded catalogue: airtime (any amount in range) and data bundles (fixed price), in naira.
enum NexusCatalogue {
    typealias Seed = NexusWire.Product

    static let seed: [Seed] = [
        Seed(code: "AIRTIME_MTN", supplierSlug: "mtn", network: "MTN", category: "airtime", name: "MTN Airtime", minAmount: 50, maxAmount: 50_000),
        Seed(code: "AIRTIME_AIRTEL", supplierSlug: "airtel", network: "Airtel", category: "airtime", name: "Airtel Airtime", minAmount: 50, maxAmount: 50_000),
        Seed(code: "AIRTIME_GLO", supplierSlug: "glo", network: "Glo", category: "airtime", name: "Glo Airtime", minAmount: 50, maxAmount: 50_000),
        Seed(code: "AIRTIME_9MOBILE", supplierSlug: "9mobile", network: "9mobile", category: "airtime", name: "9mobile Airtime", minAmount: 50, maxAmount: 50_000),
        Seed(code: "DATA_MTN_1GB", supplierSlug: "mtn", network: "MTN", category: "data", name: "MTN 1GB (30 days)", minAmount: 1_000, maxAmount: 1_000),
        Seed(code: "DATA_MTN_5GB", supplierSlug: "mtn", network: "MTN", category: "data", name: "MTN 5GB (30 days)", minAmount: 3_500, maxAmount: 3_500),
        Seed(code: "DATA_AIRTEL_1GB", supplierSlug: "airtel", network: "Airtel", category: "data", name: "Airtel 1GB (30 days)", minAmount: 1_000, maxAmount: 1_000),
        Seed(code: "DATA_AIRTEL_5GB", supplierSlug: "airtel", network: "Airtel", category: "data", name: "Airtel 5GB (30 days)", minAmount: 3_500, maxAmount: 3_500),
        Seed(code: "DATA_GLO_1GB", supplierSlug: "glo", network: "Glo", category: "data", name: "Glo 1.35GB (14 days)", minAmount: 500, maxAmount: 500),
        Seed(code: "DATA_GLO_5GB", supplierSlug: "glo", network: "Glo", category: "data", name: "Glo 5.8GB (30 days)", minAmount: 2_000, maxAmount: 2_000),
        Seed(code: "DATA_9MOBILE_1GB", supplierSlug: "9mobile", network: "9mobile", category: "data", name: "9mobile 1GB (30 days)", minAmount: 1_000, maxAmount: 1_000),
        Seed(code: "DATA_9MOBILE_4GB", supplierSlug: "9mobile", network: "9mobile", category: "data", name: "9mobile 4.5GB (30 days)", minAmount: 4_000, maxAmount: 4_000),
    ]
}

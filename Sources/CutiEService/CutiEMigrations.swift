import PurseAPNs
import PurseDatabase

/// Cuti-E's schema: apps, devices and their tokens, device groups (linked devices share one
/// inbox), conversations and messages, push registrations and the push log, link tokens, admin
/// accounts and their sessions, canned responses, and what the APNs sandbox received.
/// Times are Unix milliseconds; secrets (device tokens, link tokens, session ids) are stored only
/// as their SHA-256.
enum CutiEMigrations {
    static let all: [Migration] = [
        Migration("cutie_0001_feedback", [
            """
            CREATE TABLE cutie_apps (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
                bundle_id TEXT NOT NULL CHECK (length(bundle_id) BETWEEN 1 AND 155),
                apns_environment TEXT NOT NULL CHECK (apns_environment IN ('sandbox', 'production')),
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE cutie_groups (
                id TEXT PRIMARY KEY,
                app_id TEXT NOT NULL REFERENCES cutie_apps(id),
                created_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE cutie_devices (
                app_id TEXT NOT NULL REFERENCES cutie_apps(id),
                device_id TEXT NOT NULL,
                group_id TEXT NOT NULL REFERENCES cutie_groups(id),
                device_name TEXT,
                user_id TEXT,
                user_name TEXT,
                created_at BIGINT NOT NULL,
                linked_at BIGINT,
                last_seen_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, device_id)
            )
            """,
            "CREATE INDEX cutie_devices_group ON cutie_devices (group_id)",
            """
            CREATE TABLE cutie_device_tokens (
                token_id TEXT PRIMARY KEY,
                token_hash TEXT NOT NULL UNIQUE,
                app_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                revoked_at BIGINT,
                FOREIGN KEY (app_id, device_id) REFERENCES cutie_devices(app_id, device_id)
            )
            """,
            "CREATE INDEX cutie_device_tokens_device ON cutie_device_tokens (app_id, device_id)",
            """
            CREATE TABLE cutie_conversations (
                id TEXT PRIMARY KEY,
                app_id TEXT NOT NULL REFERENCES cutie_apps(id),
                group_id TEXT NOT NULL REFERENCES cutie_groups(id),
                device_id TEXT NOT NULL,
                title TEXT,
                category TEXT NOT NULL CHECK (category IN ('bug', 'feature', 'question', 'feedback', 'other')),
                status TEXT NOT NULL CHECK (status IN ('open', 'in_progress', 'waiting_user', 'waiting_admin', 'resolved', 'closed')),
                priority TEXT NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
                assigned_admin_id TEXT,
                user_id TEXT,
                user_name TEXT,
                app_version TEXT,
                os_version TEXT,
                device_model TEXT,
                message_count BIGINT NOT NULL DEFAULT 0 CHECK (message_count >= 0),
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX cutie_conversations_group ON cutie_conversations (group_id, updated_at)",
            "CREATE INDEX cutie_conversations_app ON cutie_conversations (app_id, updated_at)",
            """
            CREATE TABLE cutie_messages (
                id TEXT PRIMARY KEY,
                conversation_id TEXT NOT NULL REFERENCES cutie_conversations(id),
                sender_type TEXT NOT NULL CHECK (sender_type IN ('user', 'admin', 'system')),
                sender_id TEXT,
                sender_name TEXT,
                message TEXT NOT NULL,
                message_type TEXT NOT NULL CHECK (message_type IN ('text', 'image')),
                is_internal_note BOOLEAN NOT NULL,
                attachment_url TEXT,
                client_id TEXT,
                created_at BIGINT NOT NULL,
                read_at BIGINT,
                CHECK (is_internal_note = FALSE OR sender_type = 'admin'),
                CHECK ((message_type = 'image') = (attachment_url IS NOT NULL))
            )
            """,
            "CREATE INDEX cutie_messages_conversation ON cutie_messages (conversation_id, created_at)",
            // The inbox's unread count reads only unread admin and system messages.
            "CREATE INDEX cutie_messages_unread ON cutie_messages (conversation_id, sender_type) WHERE read_at IS NULL",
            // A message sent with a client id (the SDK's optimistic message) is stored once.
            "CREATE UNIQUE INDEX cutie_messages_client ON cutie_messages (conversation_id, client_id)",
            """
            CREATE TABLE cutie_tags (
                conversation_id TEXT NOT NULL REFERENCES cutie_conversations(id),
                tag TEXT NOT NULL CHECK (length(tag) BETWEEN 1 AND 40),
                PRIMARY KEY (conversation_id, tag)
            )
            """,
            """
            CREATE TABLE cutie_push_tokens (
                app_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                platform TEXT NOT NULL CHECK (platform IN ('ios', 'macos')),
                push_token TEXT NOT NULL,
                bundle_id TEXT NOT NULL,
                environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
                active BOOLEAN NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, device_id),
                FOREIGN KEY (app_id, device_id) REFERENCES cutie_devices(app_id, device_id)
            )
            """,
            """
            CREATE TABLE cutie_pushes (
                id TEXT PRIMARY KEY,
                app_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL REFERENCES cutie_conversations(id),
                message_id TEXT NOT NULL REFERENCES cutie_messages(id),
                device_id TEXT NOT NULL,
                push_token TEXT NOT NULL,
                status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'failed', 'unregistered')),
                apns_id TEXT,
                reason TEXT,
                attempts BIGINT NOT NULL DEFAULT 0,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                UNIQUE (message_id, device_id)
            )
            """,
            "CREATE INDEX cutie_pushes_app ON cutie_pushes (app_id, created_at)",
            """
            CREATE TABLE cutie_link_tokens (
                token_hash TEXT PRIMARY KEY,
                app_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                group_id TEXT NOT NULL REFERENCES cutie_groups(id),
                status TEXT NOT NULL CHECK (status IN ('pending', 'confirmed')),
                confirmed_device_id TEXT,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                confirmed_at BIGINT,
                CHECK ((status = 'confirmed') = (confirmed_device_id IS NOT NULL))
            )
            """,
            """
            CREATE TABLE cutie_admins (
                id TEXT PRIMARY KEY,
                email TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL,
                role TEXT NOT NULL CHECK (role IN ('owner', 'agent', 'viewer')),
                password_hash TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                disabled_at BIGINT
            )
            """,
            """
            CREATE TABLE cutie_admin_sessions (
                id_hash TEXT PRIMARY KEY,
                admin_id TEXT NOT NULL REFERENCES cutie_admins(id),
                csrf_token TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE cutie_canned_responses (
                id TEXT PRIMARY KEY,
                title TEXT NOT NULL CHECK (length(title) BETWEEN 1 AND 100),
                body TEXT NOT NULL,
                created_at BIGINT NOT NULL
            )
            """,
        ] + CutiEModule.apnsSandboxTables.statements),
        Migration("cutie_0002_trust", [
            // App Attest: rpIdHash = SHA-256(team id "." bundle id); the AAGUID environment; and
            // whether signed requests must also carry an assertion.
            "ALTER TABLE cutie_apps ADD COLUMN team_id TEXT CHECK (team_id IS NULL OR length(team_id) = 10)",
            "ALTER TABLE cutie_apps ADD COLUMN attest_environment TEXT NOT NULL DEFAULT 'production' CHECK (attest_environment IN ('development', 'production'))",
            "ALTER TABLE cutie_apps ADD COLUMN require_app_attest BOOLEAN NOT NULL DEFAULT FALSE",
            // A challenge is a public nonce, not a credential: kept as is, so the attestation
            // request need not repeat it.
            """
            CREATE TABLE cutie_attest_challenges (
                challenge TEXT PRIMARY KEY,
                app_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                used_at BIGINT,
                FOREIGN KEY (app_id, device_id) REFERENCES cutie_devices(app_id, device_id)
            )
            """,
            "CREATE INDEX cutie_attest_challenges_device ON cutie_attest_challenges (app_id, device_id, expires_at)",
            // One attested key per device; its counter only grows (a replayed or reordered
            // assertion fails the conditional update that stores the new one).
            """
            CREATE TABLE cutie_attested_keys (
                app_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                key_id TEXT NOT NULL UNIQUE,
                public_key TEXT NOT NULL,
                sign_count BIGINT NOT NULL CHECK (sign_count >= 0),
                environment TEXT NOT NULL CHECK (environment IN ('development', 'production')),
                receipt_bytes BIGINT NOT NULL,
                attested_at BIGINT NOT NULL,
                last_assertion_at BIGINT,
                PRIMARY KEY (app_id, device_id),
                FOREIGN KEY (app_id, device_id) REFERENCES cutie_devices(app_id, device_id)
            )
            """,
            // Subscriptions: the app's tier, from verified StoreKit transactions and App Store
            // Server Notifications.
            """
            CREATE TABLE cutie_subscriptions (
                app_id TEXT PRIMARY KEY REFERENCES cutie_apps(id),
                original_transaction_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                tier TEXT NOT NULL CHECK (tier IN ('starter', 'pro', 'business')),
                status TEXT NOT NULL CHECK (status IN ('active', 'grace_period', 'expired', 'revoked')),
                expires_at BIGINT,
                grace_expires_at BIGINT,
                environment TEXT NOT NULL,
                updated_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX cutie_subscriptions_original ON cutie_subscriptions (original_transaction_id)",
            """
            CREATE TABLE cutie_appstore_transactions (
                transaction_id TEXT PRIMARY KEY,
                original_transaction_id TEXT NOT NULL,
                app_id TEXT NOT NULL REFERENCES cutie_apps(id),
                product_id TEXT NOT NULL,
                purchase_date BIGINT NOT NULL,
                expires_date BIGINT,
                revocation_date BIGINT,
                environment TEXT NOT NULL,
                received_at BIGINT NOT NULL
            )
            """,
            """
            CREATE TABLE cutie_appstore_notifications (
                notification_uuid TEXT PRIMARY KEY,
                notification_type TEXT NOT NULL,
                subtype TEXT,
                original_transaction_id TEXT,
                app_id TEXT,
                received_at BIGINT NOT NULL
            )
            """,
            // Feedback received per app and month (UTC): the tier's limit is checked and the count
            // raised in one conditional update.
            """
            CREATE TABLE cutie_usage (
                app_id TEXT NOT NULL REFERENCES cutie_apps(id),
                period TEXT NOT NULL,
                received BIGINT NOT NULL CHECK (received >= 0),
                PRIMARY KEY (app_id, period)
            )
            """,
        ]),
        Migration("cutie_0003_address_usage", [
            // Feedback received per app, month and client address (hashed with the app id): one
            // address's share of a limited tier's month is checked and raised in one update.
            """
            CREATE TABLE cutie_address_usage (
                app_id TEXT NOT NULL REFERENCES cutie_apps(id),
                period TEXT NOT NULL,
                address_key TEXT NOT NULL,
                received BIGINT NOT NULL CHECK (received >= 0),
                PRIMARY KEY (app_id, period, address_key)
            )
            """,
        ]),
        // The real SDK's contract: apps that take a device token alone (the SDK's own requests)
        // unless they require signed ones; the language and country a conversation was started
        // in; and opt-in activity pings, one row per app, day and hashed device id.
        Migration("cutie_0004_sdk", [
            "ALTER TABLE cutie_apps ADD COLUMN require_signed_requests BOOLEAN NOT NULL DEFAULT FALSE",
            "ALTER TABLE cutie_conversations ADD COLUMN language TEXT CHECK (language IS NULL OR length(language) <= 16)",
            "ALTER TABLE cutie_conversations ADD COLUMN country TEXT CHECK (country IS NULL OR length(country) <= 8)",
            """
            CREATE TABLE cutie_activity (
                app_id TEXT NOT NULL REFERENCES cutie_apps(id),
                day TEXT NOT NULL CHECK (length(day) = 10),
                hashed_device_id TEXT NOT NULL CHECK (length(hashed_device_id) BETWEEN 16 AND 128),
                language TEXT,
                country TEXT,
                app_version TEXT,
                os_version TEXT,
                device_model TEXT,
                pings BIGINT NOT NULL CHECK (pings > 0),
                first_at BIGINT NOT NULL,
                last_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, day, hashed_device_id)
            )
            """,
        ]),
        // A device id is not a credential: the id a device sends (`client_device_id`) labels it,
        // and the identity that owns an inbox has an id of its own (`device_id`). Devices
        // registered before keep their id as both.
        Migration("cutie_0005_identity", [
            "ALTER TABLE cutie_devices ADD COLUMN client_device_id TEXT NOT NULL DEFAULT ''",
            "UPDATE cutie_devices SET client_device_id = device_id",
        ]),
        // Who spent an app's month: each conversation keeps the (hashed) network it came from,
        // and support can block a device or a network and give the quota back.
        Migration("cutie_0006_quota", [
            "ALTER TABLE cutie_conversations ADD COLUMN address_key TEXT CHECK (address_key IS NULL OR length(address_key) <= 64)",
            "CREATE INDEX cutie_conversations_created ON cutie_conversations (app_id, created_at)",
            """
            CREATE TABLE cutie_blocks (
                app_id TEXT NOT NULL REFERENCES cutie_apps(id),
                kind TEXT NOT NULL CHECK (kind IN ('device', 'address')),
                value TEXT NOT NULL CHECK (length(value) BETWEEN 1 AND 100),
                created_at BIGINT NOT NULL,
                created_by TEXT NOT NULL,
                PRIMARY KEY (app_id, kind, value)
            )
            """,
        ]),
        // Registrations look up the id a device sends, to tell a known device from a new one.
        Migration("cutie_0007_client_ids", [
            "CREATE INDEX cutie_devices_client_id ON cutie_devices (app_id, client_device_id)",
        ]),
    ]
}

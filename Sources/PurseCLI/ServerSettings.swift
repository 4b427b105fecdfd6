import Foundation

/// Every environment setting `purse serve` reads, with what it does and its default: the one
/// table `serve --help` prints and docs/configuration.md is generated from
/// (`purse serve --settings-markdown`). A test checks that each setting the server's code reads
/// is here, and that the docs are the table's current rendering.
enum ServerSettings {
    struct Group {
        var title: String
        /// `(names, what it does)`: names share a line when they are set together.
        var settings: [(names: [String], help: String)]
    }

    static let groups: [Group] = [
        Group(title: "Server", settings: [
            (["PURSE_HOST", "PURSE_PORT", "PURSE_DATA_DIR", "PURSE_LOG_LEVEL"], "twins of the options above"),
            (["DATABASE_URL"], "postgres://user:pass@host:5432/db[?sslmode=require] to use PostgreSQL, with pool_size (16), statement_timeout, "
             + "lock_timeout, idle_in_transaction_session_timeout and lease_timeout (30s, 10s, 60s, 3s: the longest wait for a connection "
             + "before a 503) as query items (default: SQLite file in the data dir)"),
            (["PURSE_ENV"], "development (default) or production (sandbox-only routes off, secrets required)"),
            (["PURSE_JWT_SECRET"], "session signing secret, at least 32 bytes (generated into the data dir in development)"),
            (["PURSE_SESSION_TTL"], "session lifetime in seconds (default 2592000, 30 days)"),
            (["PURSE_BCRYPT_COST"], "password hashing cost, 4 to 31 (default 10)"),
            (["PURSE_PUBLIC_URL"], "the URL users reach the server at (default http://HOST:PORT)"),
            (["PURSE_SEAL_KEY", "PURSE_SEAL_KEY_FILE"], "the key database-kept secrets are sealed with, or a file holding it, kept outside "
             + "the data dir in production (default DATA_DIR/secrets/seal.key, with a warning in production)"),
            (["PURSE_TRUSTED_PROXIES"], "proxies whose X-Forwarded-For names the client (default none)"),
            (["PURSE_HTTP_HEADER_TIMEOUT", "PURSE_HTTP_IDLE_TIMEOUT", "PURSE_HTTP_BODY_TIMEOUT"], "seconds (default 10, 75, 30)"),
            (["PURSE_HTTP_MAX_REQUEST_LINE", "PURSE_HTTP_MAX_HEADER_BYTES"], "bytes (default 8192 → 414, 32768 → 431)"),
            (["PURSE_HTTP_MAX_CONNECTIONS", "PURSE_HTTP_MAX_CONNECTIONS_PER_PEER"], "open at once, in all and per IPv4 /24 or IPv6 /64 (default 10000, 512 → 503)"),
            (["PURSE_JOB_LEASE_SECONDS"], "how long a crashed worker's job waits before another takes it (default 30)"),
            (["PURSE_SQLITE_TUNING"], "all (default) SQLite hooks, none, or a list"),
        ]),
        Group(title: "Nexus Data", settings: [
            (["NEXUS_RP_ID", "NEXUS_RP_NAME", "NEXUS_ALLOWED_ORIGINS"], "the WebAuthn relying party (localhost, Nexus Data, the server's own origins)"),
            (["NEXUS_USER_VERIFICATION"], "required (default: a step-up is a biometric) or preferred"),
            (["VTPASS_URL", "VTPASS_API_KEY", "VTPASS_SECRET_KEY", "VTPASS_PUBLIC_KEY"], "the airtime supplier (unset: built-in sandbox)"),
            (["VTPASS_SANDBOX_PENDING_SECONDS"], "how long the sandbox supplier's processing purchases stay pending (default 20)"),
        ]),
        Group(title: "Maly (Stripe Connect)", settings: [
            (["STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET", "STRIPE_API_BASE"], "Stripe (unset: built-in sandbox; webhook secret generated in development)"),
            (["STRIPE_SANDBOX_SECRET_KEY", "STRIPE_SANDBOX_PLATFORM_PROFILE"], "the key the sandbox accepts; incomplete: answer as an unready platform"),
            (["CONNECT_ALLOWED_ORIGINS"], "origins allowed for onboarding links (required in production)"),
        ]),
        Group(title: "ChippiPay and Starknet", settings: [
            (["STARKNET_RPC_URL", "STARKNET_VAULT_ADDRESS", "STARKNET_TOKEN_ADDRESS"], "the node, vault and STRK (unset: the built-in sandbox node)"),
            (["STARKNET_SANDBOX_CHAIN_ID", "STARKNET_SANDBOX_BLOCK_SECONDS", "STARKNET_SANDBOX_ACCOUNTS", "STARKNET_SANDBOX_SEED", "STARKNET_SANDBOX_ACCOUNT_STRK"],
             "the sandbox node (SN_SEPOLIA, a block per transaction, 5 accounts, seed purse, 1000 STRK each)"),
            (["CHIPPI_PAYMENT_ADDRESS", "CHIPPI_PAYMENT_PRIVATE_KEY"], "the provider's account vault payments go to (sandbox: an account of the node)"),
            (["CHIPPI_ACCOUNT_CLASS_HASH"], "the class gasless wallets are deployed from"),
            (["CHIPPI_MXN_PER_STRK", "CHIPPI_QUOTE_SECONDS"], "the exchange rate (default 20) and how long a quote holds (300 s)"),
            (["CHIPPI_REFUNDS"], "vault (default: a refund goes back into the payer's vault balance) or account"),
            (["CHIPPI_UNCLAIMED_RETURN_SECONDS", "CHIPPI_PAYMENT_SCAN_SECONDS", "CHIPPI_FUNDING_ACCOUNTS"],
             "a payment no purchase claims goes back after 86400 s; the chain is read every 30 s; accounts whose transfers fund the provider"),
            (["CHIPPI_RATE_LIMIT", "CHIPPI_KEY_CACHE_SECONDS"], "requests per second per API key (50) and how long a checked key is remembered (5 s)"),
            (["CHIPPI_PAYMASTER_RELAYS_PER_ACCOUNT", "CHIPPI_PAYMASTER_RELAYS_PER_MERCHANT"], "gasless withdrawals sponsored a day (50, 10000)"),
            (["CHIPPI_PAYMASTER_FEE_PER_ACCOUNT", "CHIPPI_PAYMASTER_FEE_PER_MERCHANT"], "fee in STRK sponsored a day (5, 1000)"),
            (["CHIPPI_SANDBOX_MERCHANT_KEYS", "CHIPPI_SANDBOX_WEBHOOK_URL", "CHIPPI_SANDBOX_FULFILMENT_SECONDS"],
             "the sandbox merchant's pk_…:sk_… (written to DATA_DIR/secrets/chippi-sandbox-merchant.json), its webhook URL, the supplier's delay"),
        ]),
        Group(title: "Cuti-E", settings: [
            (["CUTIE_LINK_SECONDS", "CUTIE_MAX_MESSAGE_LENGTH", "CUTIE_SIGNATURE_WINDOW_SECONDS"], "link token life (600 s), message length (5000), signature window (300 s)"),
            (["CUTIE_ADMIN_SESSION_HOURS"], "how long an admin stays signed in (12)"),
            (["CUTIE_APP_ATTEST_DEV_ROOT", "CUTIE_ATTEST_CHALLENGE_SECONDS"], "an extra App Attest root (PEM), challenge life (300 s)"),
            (["CUTIE_STOREKIT_ROOT"], "an extra StoreKit root (PEM)"),
            (["CUTIE_NEW_DEVICES_PER_ADDRESS_HOUR", "CUTIE_CONVERSATIONS_PER_DEVICE_DAY", "CUTIE_ADDRESS_QUOTA_PERCENT"],
             "new devices per address an hour (30), conversations per device a day (20), one address's share of a month (20 %)"),
        ]),
        Group(title: "Pushes (Cuti-E and MyCHIPs)", settings: [
            (["APNS_URL"], "where pushes go (default: the APNs sandbox in this process; with a key, Apple's)"),
            (["APNS_KEY_FILE", "APNS_KEY_ID", "APNS_TEAM_ID"], "the .p8 key from the developer account (required in production)"),
            (["APNS_ENVIRONMENT", "APNS_CA_FILE"], "sandbox or production; an extra trust root"),
        ]),
        Group(title: "MyCHIPs", settings: [
            (["CHIPS_WS_PORT"], "the websocket's own port (default PORT+1, 0 for none; /clientinfo one below)"),
            (["CHIPS_HOST", "CHIPS_PORT", "CHIPS_ORIGIN"], "where clients reach the websocket and the HTTP side (tickets, report links)"),
            (["CHIPS_AGENT"], "the agent id in CHIP addresses (default: made for the data dir)"),
            (["CHIPS_TICKET_MINUTES", "CHIPS_DATE_WINDOW_SECONDS", "CHIPS_MAX_MESSAGE_BYTES"], "ticket life (30), login date window (60 s), largest request (768 KiB)"),
            (["CHIPS_APNS_TOPIC"], "the wallet app's bundle id (org.mychips.chark)"),
            (["CHIPS_SIGNATURE_VERIFIER"], "what checks P-521 signatures: purse-p521 (default) or swift-crypto"),
        ]),
    ]

    /// Every setting's name.
    static var names: Set<String> { Set(groups.flatMap { $0.settings.flatMap(\.names) }) }

    /// The options `purse serve` takes, with their environment twins and defaults.
    static let options: [(option: String, environment: String, help: String)] = [
        ("--host", "PURSE_HOST", "address to listen on (default 127.0.0.1)"),
        ("--port", "PURSE_PORT", "port to listen on (default 8080; 0 picks a free one)"),
        ("--data-dir", "PURSE_DATA_DIR", "the SQLite database and generated development secrets (default ./data)"),
        ("--log-level", "PURSE_LOG_LEVEL", "trace, debug, info (default), notice, warning, error or critical"),
    ]

    /// docs/configuration.md: the options and every setting, by system.
    static var markdown: String {
        var lines = [
            "# Configuration",
            "",
            "<!-- Generated by `purse serve --settings-markdown` from the table `purse serve --help` prints; a test keeps it current. -->",
            "",
            "`purse serve` needs nothing set: it listens on 127.0.0.1:8080, keeps SQLite in `./data` and runs the built-in",
            "sandboxes. Options win over their environment twins. Production sets `PURSE_ENV=production`, which turns",
            "sandbox-only routes off and requires the secrets below; [deploy.md](deploy.md) shows a whole setup.",
            "",
            "| option | environment | what it is |",
            "|---|---|---|",
        ]
        lines += options.map { "| `\($0.option)` | `\($0.environment)` | \($0.help) |" }
        for group in groups {
            lines += ["", "## \(group.title)", "", "| environment | what it is |", "|---|---|"]
            for setting in group.settings where setting.names.first != "PURSE_HOST" {
                lines.append("| \(setting.names.map { "`\($0)`" }.joined(separator: ", ")) | \(setting.help.replacingOccurrences(of: "|", with: "\\|")) |")
            }
        }
        lines += ["", "Client subcommands take `--server URL` (env `PURSE_SERVER`, default `http://127.0.0.1:8080`) and `--json`."]
        return lines.joined(separator: "\n") + "\n"
    }

    /// The table as `serve --help` prints it.
    static var help: String {
        groups.map { group in
            "  \(group.title):\n" + group.settings.map { "    \($0.names.joined(separator: ", "))\n        \($0.help)" }.joined(separator: "\n")
        }.joined(separator: "\n")
    }
}

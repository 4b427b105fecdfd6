import PurseAPNs
import PurseDatabase

/// The MyCHIPs provider's schema: users and their certificates, one-time connection tokens, the
/// signature logins already used, by the `r` of their signature (so a captured login URL cannot be replayed), the languages the
/// provider speaks and its language pack (`wm.table_lang` of the real backend).
/// Times are Unix milliseconds; JSON members (`connect`, `place`, `conn_pub`) are JSON text.
enum ChipsMigrations {
    static let all: [Migration] = [
        Migration("chips_0001_users", [
            """
            CREATE TABLE chips_users (
                username TEXT PRIMARY KEY CHECK (length(username) BETWEEN 1 AND 64),
                user_ent TEXT NOT NULL UNIQUE,
                peer_cuid TEXT NOT NULL UNIQUE CHECK (length(peer_cuid) BETWEEN 1 AND 64),
                ent_type TEXT NOT NULL DEFAULT 'p' CHECK (ent_type IN ('p', 'o')),
                ent_name TEXT NOT NULL CHECK (length(ent_name) BETWEEN 1 AND 120),
                fir_name TEXT CHECK (fir_name IS NULL OR length(fir_name) <= 120),
                born_date TEXT,
                country TEXT CHECK (country IS NULL OR length(country) = 2),
                tax_id TEXT CHECK (tax_id IS NULL OR length(tax_id) <= 40),
                connect TEXT NOT NULL DEFAULT '[]',
                place TEXT NOT NULL DEFAULT '[]',
                conn_pub TEXT,
                language TEXT NOT NULL DEFAULT 'eng',
                created_at BIGINT NOT NULL,
                modified_at BIGINT NOT NULL,
                version BIGINT NOT NULL DEFAULT 0
            )
            """,
            """
            CREATE TABLE chips_tokens (
                token TEXT PRIMARY KEY,
                username TEXT NOT NULL REFERENCES chips_users(username),
                expires_at BIGINT NOT NULL,
                used_at BIGINT,
                created_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX chips_tokens_user ON chips_tokens (username)",
            """
            CREATE TABLE chips_logins (
                username TEXT NOT NULL REFERENCES chips_users(username),
                signature_r TEXT NOT NULL,
                at BIGINT NOT NULL,
                PRIMARY KEY (username, signature_r)
            )
            """,
            """
            CREATE TABLE chips_languages (
                code TEXT PRIMARY KEY CHECK (length(code) = 3),
                iso_2 TEXT,
                eng_name TEXT NOT NULL,
                name TEXT NOT NULL
            )
            """,
            """
            CREATE TABLE chips_lang (
                obj TEXT NOT NULL,
                language TEXT NOT NULL REFERENCES chips_languages(code),
                title TEXT NOT NULL,
                help TEXT NOT NULL,
                columns TEXT NOT NULL,
                messages TEXT NOT NULL,
                PRIMARY KEY (obj, language)
            )
            """,
        ]),
        // Tallies and chits. Each partner of a tally has its own copy (`tally_ent`, `tally_seq`),
        // one the stock and the other the foil, with the same `tally_uuid`; both partners being
        // users of this provider, a change to one copy is made to the other in the same
        // transaction. Units are milliCHIPs; `net_c` is the holder's balance of good chits and
        // `net_pc` that of pending ones, kept with each chit. Margins (`reward`, `clutch`) are
        // parts per million. Dates are Unix milliseconds, signatures and digests base64url.
        Migration("chips_0002_tallies", [
            "ALTER TABLE chips_users ADD COLUMN user_psig TEXT",
            "ALTER TABLE chips_users ADD COLUMN last_tally BIGINT NOT NULL DEFAULT 0",
            """
            CREATE TABLE chips_tallies (
                tally_ent TEXT NOT NULL REFERENCES chips_users(user_ent),
                tally_seq BIGINT NOT NULL,
                tally_uuid TEXT NOT NULL CHECK (length(tally_uuid) = 36),
                tally_type TEXT NOT NULL CHECK (tally_type IN ('stock', 'foil')),
                tally_date BIGINT NOT NULL,
                version BIGINT NOT NULL DEFAULT 1 CHECK (version > 0),
                comment TEXT CHECK (comment IS NULL OR length(comment) <= 400),
                contract TEXT NOT NULL,
                hold_cert TEXT NOT NULL,
                part_cert TEXT,
                hold_sig TEXT,
                part_sig TEXT,
                hold_terms TEXT NOT NULL DEFAULT '{}',
                part_terms TEXT NOT NULL DEFAULT '{}',
                digest TEXT,
                target BIGINT NOT NULL DEFAULT 0 CHECK (target >= 0 AND target <= bound),
                bound BIGINT NOT NULL DEFAULT 0 CHECK (bound >= 0),
                reward BIGINT NOT NULL DEFAULT 0 CHECK (reward BETWEEN -1000000 AND 1000000),
                clutch BIGINT NOT NULL DEFAULT 0 CHECK (clutch BETWEEN -1000000 AND 1000000),
                request TEXT CHECK (request IS NULL OR request IN ('void', 'draft', 'offer', 'open')),
                status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('void', 'draft', 'offer', 'open', 'close')),
                closing BIGINT NOT NULL DEFAULT 0 CHECK (closing IN (0, 1) AND (closing = 0 OR status = 'open')),
                part_ent TEXT CHECK (part_ent IS NULL OR part_ent <> tally_ent),
                hold_cid TEXT NOT NULL,
                hold_agent TEXT NOT NULL,
                part_cid TEXT,
                part_agent TEXT,
                hold_sets TEXT NOT NULL DEFAULT '{}',
                part_sets TEXT NOT NULL DEFAULT '{}',
                net_c BIGINT NOT NULL DEFAULT 0,
                net_pc BIGINT NOT NULL DEFAULT 0,
                chits_c BIGINT NOT NULL DEFAULT 0 CHECK (chits_c >= 0),
                chain_conf BIGINT NOT NULL DEFAULT 0 CHECK (chain_conf >= 0),
                chain_last TEXT,
                last_chit BIGINT NOT NULL DEFAULT 0,
                row_version BIGINT NOT NULL DEFAULT 0,
                created_at BIGINT NOT NULL,
                modified_at BIGINT NOT NULL,
                PRIMARY KEY (tally_ent, tally_seq),
                CHECK (status NOT IN ('open', 'close') OR (hold_sig IS NOT NULL AND part_sig IS NOT NULL AND part_cert IS NOT NULL
                       AND digest IS NOT NULL AND part_ent IS NOT NULL AND chain_last IS NOT NULL)),
                CHECK (status <> 'close' OR net_c = 0)
            )
            """,
            "CREATE UNIQUE INDEX chips_tallies_active ON chips_tallies (tally_type, tally_uuid) WHERE status IN ('open', 'close')",
            "CREATE INDEX chips_tallies_uuid ON chips_tallies (tally_uuid)",
            """
            CREATE TABLE chips_chits (
                chit_ent TEXT NOT NULL,
                chit_seq BIGINT NOT NULL,
                chit_idx BIGINT NOT NULL,
                chit_uuid TEXT NOT NULL CHECK (length(chit_uuid) = 36),
                chit_type TEXT NOT NULL DEFAULT 'tran' CHECK (chit_type IN ('lift', 'tran', 'set')),
                chit_date BIGINT NOT NULL,
                issuer TEXT NOT NULL CHECK (issuer IN ('stock', 'foil')),
                units BIGINT CHECK ((units > 0 AND chit_type IN ('lift', 'tran')) OR (units IS NULL AND chit_type = 'set')),
                reference TEXT,
                memo TEXT CHECK (memo IS NULL OR length(memo) <= 400),
                digest TEXT NOT NULL,
                signature TEXT,
                request TEXT CHECK (request IS NULL OR request IN ('pend', 'good', 'void')),
                status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'pend', 'good', 'void')),
                chain_idx BIGINT,
                chain_prev TEXT,
                chain_hash TEXT,
                created_at BIGINT NOT NULL,
                modified_at BIGINT NOT NULL,
                PRIMARY KEY (chit_ent, chit_seq, chit_idx),
                FOREIGN KEY (chit_ent, chit_seq) REFERENCES chips_tallies (tally_ent, tally_seq),
                UNIQUE (chit_ent, chit_seq, chit_uuid),
                UNIQUE (chit_ent, chit_seq, chain_idx),
                CHECK (status <> 'good' OR (signature IS NOT NULL AND chain_idx IS NOT NULL AND chain_prev IS NOT NULL AND chain_hash IS NOT NULL))
            )
            """,
            "CREATE INDEX chips_chits_uuid ON chips_chits (chit_uuid)",
            """
            CREATE TABLE chips_tally_tokens (
                token TEXT PRIMARY KEY,
                token_ent TEXT NOT NULL,
                token_seq BIGINT NOT NULL,
                tally_seq BIGINT NOT NULL,
                expires_at BIGINT NOT NULL,
                used_at BIGINT,
                used_by TEXT,
                created_at BIGINT NOT NULL,
                FOREIGN KEY (token_ent, tally_seq) REFERENCES chips_tallies (tally_ent, tally_seq),
                UNIQUE (token_ent, token_seq)
            )
            """,
            """
            CREATE TABLE chips_contracts (
                host TEXT NOT NULL,
                name TEXT NOT NULL,
                version BIGINT NOT NULL CHECK (version > 0),
                language TEXT NOT NULL,
                title TEXT NOT NULL,
                text TEXT NOT NULL,
                sections TEXT NOT NULL DEFAULT '[]',
                published TEXT NOT NULL,
                rid TEXT NOT NULL UNIQUE,
                PRIMARY KEY (host, name, version, language)
            )
            """,
        ]),
        // Pushes: the devices each user's app registered for APNs, the pushes sent to them (one
        // row per device and notice, its outcome), the websocket connections open now (a user
        // connected within the presence window gets notices on the socket instead), and what the
        // development APNs sandbox received.
        Migration("chips_0003_pushes", [
            """
            CREATE TABLE chips_devices (
                username TEXT NOT NULL REFERENCES chips_users(username),
                device_token TEXT NOT NULL CHECK (length(device_token) BETWEEN 64 AND 200),
                active BOOLEAN NOT NULL DEFAULT TRUE,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (username, device_token)
            )
            """,
            """
            CREATE TABLE chips_pushes (
                id TEXT PRIMARY KEY,
                username TEXT NOT NULL,
                device_token TEXT NOT NULL,
                title TEXT NOT NULL,
                body TEXT NOT NULL,
                data TEXT NOT NULL,
                status TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'skipped', 'unregistered', 'failed')),
                apns_id TEXT,
                reason TEXT,
                attempts BIGINT NOT NULL DEFAULT 0,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX chips_pushes_user ON chips_pushes (username, created_at)",
            """
            CREATE TABLE chips_presence (
                connection_id TEXT PRIMARY KEY,
                username TEXT NOT NULL,
                seen_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX chips_presence_user ON chips_presence (username, seen_at)",
        ] + ChipsModule.apnsSandboxTables.statements),
        // Tallies as MyCHIPs records them: the negotiation's revision count (part of the signed
        // record), and the digest of the last chit linked into the chain (`ack_hash`).
        Migration("chips_0004_records", [
            "ALTER TABLE chips_tallies ADD COLUMN revision BIGINT NOT NULL DEFAULT 1 CHECK (revision > 0)",
            "ALTER TABLE chips_tallies ADD COLUMN ack_hash TEXT",
        ]),
        // Exchange rates (`base.exchange`): what the `chip` action prices a CHIP from. Rates are
        // decimal text, kept exact; `sample` is the day they were read.
        Migration("chips_0005_exchange", [
            """
            CREATE TABLE chips_exchange (
                curr TEXT NOT NULL CHECK (length(curr) = 3),
                base TEXT NOT NULL CHECK (length(base) = 3),
                rate TEXT NOT NULL,
                sample TEXT NOT NULL CHECK (length(sample) = 10),
                PRIMARY KEY (curr, base, sample)
            )
            """,
        ]),
        // Users' files (`mychips.file_v_me`): their profile photo and other documents, by
        // digest. One main file per user and type, by a partial unique index; a file's
        // bytes are base64 text (`file_data`), their SHA-256 base64url (`file_hash`), and a user
        // stores a file of a type once. `cert_file` is the certificate's `file` member, the
        // main public files, written in the same transaction as the files.
        Migration("chips_0006_files", [
            """
            CREATE TABLE chips_files (
                file_ent TEXT NOT NULL REFERENCES chips_users(user_ent),
                file_seq BIGINT NOT NULL CHECK (file_seq > 0),
                file_type TEXT NOT NULL CHECK (file_type IN ('bio', 'id', 'photo', 'cert', 'other')),
                file_fmt TEXT NOT NULL CHECK (length(file_fmt) BETWEEN 3 AND 100),
                file_cmt TEXT CHECK (file_cmt IS NULL OR length(file_cmt) <= 200),
                file_priv BOOLEAN NOT NULL DEFAULT FALSE,
                file_prim BOOLEAN NOT NULL DEFAULT FALSE,
                file_size BIGINT NOT NULL CHECK (file_size BETWEEN 1 AND \(FilesView.maxBytes)),
                file_hash TEXT NOT NULL CHECK (length(file_hash) = 43),
                file_data TEXT NOT NULL,
                crt_date BIGINT NOT NULL,
                mod_date BIGINT NOT NULL,
                PRIMARY KEY (file_ent, file_seq),
                UNIQUE (file_ent, file_type, file_hash)
            )
            """,
            "CREATE UNIQUE INDEX chips_files_main ON chips_files (file_ent, file_type) WHERE file_prim",
            "ALTER TABLE chips_users ADD COLUMN cert_file TEXT",
        ]),
        // Action reports (`agree`, `graph`): what a report's link names, by the SHA-256 of its
        // token; a link works for `ChipsReports.lifetime`.
        Migration("chips_0007_reports", [
            """
            CREATE TABLE chips_reports (
                token TEXT PRIMARY KEY,
                username TEXT NOT NULL REFERENCES chips_users(username),
                view TEXT NOT NULL,
                name TEXT NOT NULL,
                report_key TEXT NOT NULL,
                language TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                expires_at BIGINT NOT NULL
            )
            """,
            "CREATE INDEX chips_reports_expiry ON chips_reports (expires_at)",
        ]),
        // Where the serving provider's clients connect (one row, written while it serves), for
        // tickets made beside it (`purse chips ticket`).
        Migration("chips_0008_serving", [
            """
            CREATE TABLE chips_serving (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                host TEXT NOT NULL,
                port INTEGER NOT NULL CHECK (port BETWEEN 1 AND 65535),
                updated_at BIGINT NOT NULL
            )
            """,
        ]),
    ]
}
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
    ]
}

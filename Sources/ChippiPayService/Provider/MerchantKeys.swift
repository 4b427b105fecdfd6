import ChippiPayVocabulary
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit
import Synchronization

/// A merchant's API keys: a publishable `pk_…` sent as `x-api-key` and a secret `sk_…` sent as
/// `Authorization: Bearer`. Keys come in pairs; the secret is stored only as its SHA-256 (it is
/// 32 random bytes, so a fast hash is enough: there is nothing to guess), and a request must
/// carry both halves of one pair that is not revoked.
enum MerchantKeys {
    /// A fresh pair, `pk_test_…`/`sk_test_…` in the sandbox and `pk_live_…`/`sk_live_…` otherwise.
    static func newPair(live: Bool) -> (public: String, secret: String) {
        let mode = live ? "live" : "test"
        return ("pk_\(mode)_" + Base64URL.encode(RandomID.bytes(18)), "sk_\(mode)_" + Base64URL.encode(RandomID.bytes(32)))
    }

    /// The sandbox merchant's pair, derived from a server secret so it stays the same across restarts.
    static func sandboxPair(from secret: [UInt8]) -> (public: String, secret: String) {
        let key = SymmetricKey(data: secret)
        func derive(_ label: String, _ count: Int) -> String {
            Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Data(label.utf8), using: key)).prefix(count))
        }
        return ("pk_test_" + derive("chippi sandbox merchant public", 18), "sk_test_" + derive("chippi sandbox merchant secret", 32))
    }


    /// Creates a merchant with its first key pair, or (when `id` exists) only a new pair for it.
    static func create(merchant id: String, name: String, webhookURL: String?, keys: (public: String, secret: String),
                       now: Date, sealer: SecretSealer, in db: any DatabaseSession) async throws {
        let millis = now.epochMillis
        let webhookSecret = try sealer.seal("whsec_" + Base64URL.encode(RandomID.bytes(24)), column: Self.webhookSecretColumn)
        try await db.raw("""
            INSERT INTO chippi_merchants (id, name, webhook_url, webhook_secret, created_at)
            VALUES (\(bind: id), \(bind: name), \(bind: webhookURL), \(bind: webhookSecret), \(bind: millis))
            ON CONFLICT (id) DO NOTHING
            """).run()
        try await db.raw("""
            INSERT INTO chippi_api_keys (public_key, merchant_id, secret_hash, created_at)
            VALUES (\(bind: keys.public), \(bind: id), \(bind: SecretDigest.hex(keys.secret)), \(bind: millis))
            ON CONFLICT (public_key) DO NOTHING
            """).run()
    }

    /// What a request authenticates with: the publishable key, and either the merchant's secret
    /// key (a merchant's own backend) or an app user's token (user mode: an app that holds no
    /// secret). Which is which shows in the bearer itself: secret keys start `sk_`.
    enum Credential {
        case secret(publicKey: String, secret: String)
        case user(publicKey: String, token: String)

        var publicKey: String {
            switch self {
            case .secret(let key, _), .user(let key, _): key
            }
        }
    }

    /// The request's credential, when its halves are present and well-formed (a token is at most
    /// 8 KB: a JWT, never a document).
    static func credential(of request: Request) throws -> Credential {
        guard let publicKey = request.headers[.apiKey], publicKey.hasPrefix("pk_"), publicKey.utf8.count <= 128,
              let authorization = request.headers[.authorization], authorization.hasPrefix("Bearer "), authorization.utf8.count <= 8192 else {
            throw ProviderError.unauthorized
        }
        let bearer = String(authorization.dropFirst("Bearer ".count))
        if bearer.hasPrefix("sk_") {
            guard bearer.utf8.count <= 128 else { throw ProviderError.unauthorized }
            return .secret(publicKey: publicKey, secret: bearer)
        }
        guard !bearer.isEmpty else { throw ProviderError.unauthorized }
        return .user(publicKey: publicKey, token: bearer)
    }

    /// The columns whose secrets are sealed (``SecretSealer``): the name is the sealing's context.
    static let webhookSecretColumn = "chippi_merchants.webhook_secret"
    static let previousWebhookSecretColumn = "chippi_merchants.previous_webhook_secret"

    /// The secrets of a `chippi_merchants` row read with `webhook_secret`, `previous_webhook_secret`
    /// and `previous_webhook_secret_until`; a previous secret whose window ended is left out.
    static func webhookSecrets(_ row: any SQLRow, sealer: SecretSealer, now: Date) throws -> ChippiPayModule.WebhookSecrets {
        let current = try sealer.open(try row.decode(column: "webhook_secret", as: String.self), column: webhookSecretColumn)
        guard let sealed = try row.decode(column: "previous_webhook_secret", as: String?.self),
              let until = try row.decode(column: "previous_webhook_secret_until", as: Int64?.self), until > now.epochMillis else {
            return ChippiPayModule.WebhookSecrets(current: current, previous: nil)
        }
        return ChippiPayModule.WebhookSecrets(current: current, previous: (try sealer.open(sealed, column: previousWebhookSecretColumn),
                                                                          Date(timeIntervalSince1970: Double(until) / 1000)))
    }
    static let issuerSecretColumn = "chippi_merchants.auth_hs256_secret"

    /// The merchant of a request's key pair; 401 `{"error": …}` for a missing, wrong, mismatched
    /// or revoked pair (one message for all: which half was wrong is not the caller's business).
    /// - Parameter secretHash: `SecretDigest.hex(secret)` of the pair's secret half; nil for user mode, where the publishable
    ///   key alone names the merchant (the user's token is checked next, by the routes).
    static func authenticate(publicKey: String, secretHash: String?, sealer: SecretSealer, in db: any DatabaseSession) async throws -> Merchant {
        guard let row = try await db.raw("""
            SELECT k.secret_hash, k.revoked_at, m.id, m.name, m.webhook_url, m.webhook_secret, m.auth_hs256_secret, m.auth_jwks_url,
                CASE WHEN m.active THEN 1 ELSE 0 END AS active, m.permissions
            FROM chippi_api_keys k JOIN chippi_merchants m ON m.id = k.merchant_id WHERE k.public_key = \(bind: publicKey)
            """).first() else {
            throw ProviderError.unauthorized
        }
        if let secretHash {
            guard ConstantTime.equal(Array(try row.decode(column: "secret_hash", as: String.self).utf8), Array(secretHash.utf8)) else {
                throw ProviderError.unauthorized
            }
        }
        guard try row.decodeNil(column: "revoked_at") else {
            throw ProviderError.unauthorized
        }
        return Merchant(id: try row.decode(column: "id", as: String.self), name: try row.decode(column: "name", as: String.self),
                        publicKey: publicKey, webhookURL: try row.decode(column: "webhook_url", as: String?.self),
                        webhookSecret: try sealer.open(try row.decode(column: "webhook_secret", as: String.self), column: Self.webhookSecretColumn),
                        authHS256Secret: try row.decode(column: "auth_hs256_secret", as: String?.self).map { try sealer.open($0, column: Self.issuerSecretColumn) },
                        authJWKSURL: try row.decode(column: "auth_jwks_url", as: String?.self),
                        active: try row.decode(column: "active", as: Int.self) != 0,
                        permissions: Set(try row.decode(column: "permissions", as: String.self).split(separator: ",").compactMap { Merchant.Area(rawValue: String($0)) }))
    }
}

/// The merchant a request acts for.
struct Merchant: Sendable {
    var id: String
    var name: String
    var publicKey: String
    var webhookURL: String?
    var webhookSecret: String
    /// The HS256 secret of the merchant's own user tokens (Supabase's JWT secret, say); nil:
    /// this server's sessions.
    var authHS256Secret: String?
    /// Where the merchant's issuer publishes its signing keys (RS256, ES256 … user tokens).
    var authJWKSURL: String?
    /// A suspended account's keys are refused.
    var active = true
    /// The areas of the API its keys may use.
    var permissions: Set<Area> = Set(Area.allCases)

    /// The API's areas, as permissions name them.
    enum Area: String, CaseIterable, Sendable {
        /// `GET /v1/skus`, `GET /v1/quote`.
        case catalogue
        /// `/v1/sku-transactions`, `/v1/webhook-deliveries`.
        case purchases
        /// `/v1/chipi-wallets`.
        case wallets
        /// `/v1/paymaster`.
        case paymaster
    }
}

extension ChippiPayModule {
    /// Creates a merchant (when `merchant` is new) and a new key pair for it; returns the pair
    /// (`purse chippi keys create`). The secret is shown once: only its hash is kept.
    /// - Parameter authHS256Secret: the secret of the merchant's own app-user JWTs (HS256), when
    ///   its users do not sign in with this server.
    ///   `authJWKSURL`: where the merchant's issuer publishes its keys, for asymmetric user JWTs.
    public static func createMerchantKeys(merchant: String, name: String, webhookURL: String?, authHS256Secret: String? = nil, authJWKSURL: String? = nil,
                                          live: Bool, environment: ServerEnvironment) async throws -> (public: String, secret: String) {
        if let secret = authHS256Secret, secret.utf8.count < 32 { throw ConfigurationError("The HS256 secret must be at least 32 bytes") }
        if let url = authJWKSURL, URL(string: url).map({ ["https", "http"].contains($0.scheme ?? "") && $0.host != nil }) != true {
            throw ConfigurationError("The JWKS URL must be an http(s) URL")
        }
        let keys = MerchantKeys.newPair(live: live)
        try await environment.database.transaction { db in
            try await MerchantKeys.create(merchant: merchant, name: name, webhookURL: webhookURL, keys: keys, now: environment.now(),
                                          sealer: environment.sealer, in: db)
            if let webhookURL {
                try await db.raw("UPDATE chippi_merchants SET webhook_url = \(bind: webhookURL) WHERE id = \(bind: merchant)").run()
            }
            if let authHS256Secret {
                let sealed = try environment.sealer.seal(authHS256Secret, column: MerchantKeys.issuerSecretColumn)
                try await db.raw("UPDATE chippi_merchants SET auth_hs256_secret = \(bind: sealed) WHERE id = \(bind: merchant)").run()
            }
            if let authJWKSURL {
                try await db.raw("UPDATE chippi_merchants SET auth_jwks_url = \(bind: authJWKSURL) WHERE id = \(bind: merchant)").run()
            }
        }
        return keys
    }
}

extension ChippiPayModule {
    /// The secret a merchant's webhooks are signed with (`Chipi-Signature`, the HMAC-SHA256 scheme
    /// of Stripe's), issued with its first key pair: what the merchant verifies them with.
    public static func merchantWebhookSecret(merchant: String, environment: ServerEnvironment) async throws -> String {
        try await merchantWebhookSecrets(merchant: merchant, environment: environment).current
    }

    /// A merchant's webhook secrets: the current one, and while a roll's window lasts the one
    /// it replaced, with the end of that window.
    public struct WebhookSecrets: Sendable, Equatable {
        public var current: String
        public var previous: (secret: String, until: Date)?

        public static func == (a: WebhookSecrets, b: WebhookSecrets) -> Bool {
            a.current == b.current && a.previous?.secret == b.previous?.secret && a.previous?.until == b.previous?.until
        }

        /// The secrets deliveries are signed with now: the current one, and the previous one
        /// until its window ends.
        func signing(at now: Date) -> [String] {
            [current] + (previous.flatMap { $0.until > now ? [$0.secret] : nil } ?? [])
        }
    }

    public static func merchantWebhookSecrets(merchant: String, environment: ServerEnvironment) async throws -> WebhookSecrets {
        try await environment.database.read { db in
            guard let row = try await db.raw("""
                SELECT webhook_secret, previous_webhook_secret, previous_webhook_secret_until FROM chippi_merchants WHERE id = \(bind: merchant)
                """).first() else {
                throw ConfigurationError("No merchant \(merchant)")
            }
            return try MerchantKeys.webhookSecrets(row, sealer: environment.sealer, now: environment.now())
        }
    }

    /// Replaces a merchant's webhook secret, which is returned. For a routine change the old one
    /// stays valid for `overlap` (deliveries carry a signature with each, so the merchant's
    /// receiver keeps verifying until it is redeployed with the new one); for a leaked secret,
    /// an overlap of zero ends it at once.
    public static func rotateMerchantWebhookSecret(merchant: String, overlap: TimeInterval = 24 * 3600,
                                                   environment: ServerEnvironment) async throws -> WebhookSecrets {
        let secret = "whsec_" + Base64URL.encode(RandomID.bytes(24))
        let sealed = try environment.sealer.seal(secret, column: MerchantKeys.webhookSecretColumn)
        // Whole milliseconds, as the row keeps it.
        let until = Date(timeIntervalSince1970: Double(environment.now().addingTimeInterval(max(0, overlap)).epochMillis) / 1000)
        let previous: String? = try await environment.database.transaction { db in
            guard let row = try await db.raw("""
                SELECT webhook_secret FROM chippi_merchants WHERE id = \(bind: merchant)\(unsafeRaw: environment.database.dialect.lockRowsClause)
                """).first() else {
                throw ConfigurationError("No merchant \(merchant)")
            }
            let old = try environment.sealer.open(try row.decode(column: "webhook_secret", as: String.self), column: MerchantKeys.webhookSecretColumn)
            let kept = overlap > 0 ? try environment.sealer.seal(old, column: MerchantKeys.previousWebhookSecretColumn) : nil
            try await db.raw("""
                UPDATE chippi_merchants SET webhook_secret = \(bind: sealed), previous_webhook_secret = \(bind: kept),
                    previous_webhook_secret_until = \(bind: kept == nil ? nil : until.epochMillis) WHERE id = \(bind: merchant)
                """).run()
            return kept == nil ? nil : old
        }
        return WebhookSecrets(current: secret, previous: previous.map { ($0, until) })
    }

    /// Suspends or reactivates a merchant account, and sets the areas its keys may use (nil:
    /// unchanged); answers the account's state (`purse chippi merchant`). A suspended account's
    /// requests, and a request outside its permissions, are 401 with the reason.
    public static func setMerchantStatus(merchant: String, active: Bool?, permissions: [String]?, environment: ServerEnvironment) async throws -> (active: Bool, permissions: [String]) {
        if let permissions {
            let unknown = permissions.filter { Merchant.Area(rawValue: $0) == nil }
            guard unknown.isEmpty else {
                throw ConfigurationError("Unknown permission \(unknown.joined(separator: ", ")): the areas are \(Merchant.Area.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }
        return try await environment.database.transaction { db in
            if let active { try await db.raw("UPDATE chippi_merchants SET active = \(bind: active) WHERE id = \(bind: merchant)").run() }
            if let permissions {
                let list = Merchant.Area.allCases.map(\.rawValue).filter(permissions.contains).joined(separator: ",")
                try await db.raw("UPDATE chippi_merchants SET permissions = \(bind: list) WHERE id = \(bind: merchant)").run()
            }
            guard let row = try await db.raw("SELECT CASE WHEN active THEN 1 ELSE 0 END AS active, permissions FROM chippi_merchants WHERE id = \(bind: merchant)").first() else {
                throw ConfigurationError("No merchant \(merchant)")
            }
            return (try row.decode(column: "active", as: Int.self) != 0,
                    try row.decode(column: "permissions", as: String.self).split(separator: ",").map(String.init))
        }
    }

    /// Revokes a key pair by its publishable key (`purse chippi keys revoke`); false when there is
    /// no such key or it was revoked already. Requests with it are 401 from then on.
    public static func revokeMerchantKey(_ publicKey: String, environment: ServerEnvironment) async throws -> Bool {
        try await environment.database.transaction { db in
            try await db.raw("""
                UPDATE chippi_api_keys SET revoked_at = \(bind: environment.now().epochMillis)
                WHERE public_key = \(bind: publicKey) AND revoked_at IS NULL RETURNING public_key
                """).first() != nil
        }
    }
}

/// Key pairs that checked out in the last few seconds, so a merchant's stream of requests does
/// not read its key from the database each time. Only successes are kept, under the publishable
/// key and the secret's hash (`pk_…:<sha256>`); a revocation takes effect within `lifetime`.
final class MerchantKeyCache: Sendable {
    let lifetime: Duration
    private let entries = Mutex<[String: (merchant: Merchant, until: ContinuousClock.Instant)]>([:])
    static let capacity = 10_000

    init(lifetime: Duration = .seconds(5)) { self.lifetime = lifetime }


    func merchant(for key: String, now: ContinuousClock.Instant = .now) -> Merchant? {
        entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            guard entry.until > now else { entries[key] = nil; return nil }
            return entry.merchant
        }
    }

    func remember(_ merchant: Merchant, for key: String, now: ContinuousClock.Instant = .now) {
        guard lifetime > .zero else { return }
        entries.withLock { entries in
            if entries.count >= Self.capacity { entries = entries.filter { $0.value.until > now } }
            if entries.count < Self.capacity { entries[key] = (merchant, now + lifetime) }
        }
    }
}

import Foundation
import PurseDatabase
import PurseServer
import SQLKit

/// What a device keeps beside its conversations: its push token, the user it names, and the
/// opt-in activity pings. Each method runs in the session it is given.
struct DeviceStore: Sendable {
    /// What a device token opens: its device and group, the app's rules, and the device's
    /// attested key, in one read (every signed request makes it).
    struct Credentials: Sendable {
        var tokenID: String
        var appID: String
        /// The identity's own id, which no request names.
        var deviceID: String
        /// The id the device registered with and sends as `X-Device-ID`.
        var clientDeviceID: String
        var groupID: String
        var revoked: Bool
        var requireAppAttest: Bool
        var requireSignedRequests: Bool
        var teamID: String?
        var bundleID: String
        /// The attested key (X9.63, base64) and its counter, when the device attested one.
        var attestedKey: String?
        var signCount: Int64?
        /// Support blocked this device (``QuotaStore``).
        var blocked: Bool = false
    }

    func credentials(tokenHash: String, in db: any DatabaseSession) async throws -> Credentials? {
        guard let row = try await db.query(Self.credentials, [.text(tokenHash)]).first else { return nil }
        return Credentials(
            tokenID: try row.decode(column: "token_id", as: String.self), appID: try row.decode(column: "app_id", as: String.self),
            deviceID: try row.decode(column: "device_id", as: String.self),
            clientDeviceID: try row.decode(column: "client_device_id", as: String.self), groupID: try row.decode(column: "group_id", as: String.self),
            revoked: !(try row.decodeNil(column: "revoked_at")), requireAppAttest: try row.decode(column: "require_app_attest", as: Bool.self),
            requireSignedRequests: try row.decode(column: "require_signed_requests", as: Bool.self), teamID: try row.decode(column: "team_id", as: String?.self),
            bundleID: try row.decode(column: "bundle_id", as: String.self), attestedKey: try row.decode(column: "public_key", as: String?.self),
            signCount: try row.decode(column: "sign_count", as: Int64?.self), blocked: try row.decode(column: "blocked_device", as: String?.self) != nil)
    }

    /// Every request of the SDK reads its device's credentials: written once, bound directly.
    static let credentials = DatabaseStatement("""
        SELECT t.token_id, t.app_id, t.device_id, d.client_device_id, t.revoked_at, d.group_id, a.require_app_attest, a.require_signed_requests, a.team_id, a.bundle_id,
            k.public_key, k.sign_count, b.value AS blocked_device
        FROM cutie_device_tokens t JOIN cutie_devices d ON d.app_id = t.app_id AND d.device_id = t.device_id
        JOIN cutie_apps a ON a.id = t.app_id
        LEFT JOIN cutie_attested_keys k ON k.app_id = t.app_id AND k.device_id = t.device_id
        LEFT JOIN cutie_blocks b ON b.app_id = t.app_id AND b.kind = 'device' AND b.value = t.device_id
        WHERE t.token_hash = $1
        """)

    /// A known device registering again: its tokens are revoked (a new one follows), and it is seen.
    func reregister(app: String, device: String, name: String?, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("UPDATE cutie_device_tokens SET revoked_at = \(bind: now) WHERE app_id = \(bind: app) AND device_id = \(bind: device) AND revoked_at IS NULL").run()
        try await db.raw("UPDATE cutie_devices SET last_seen_at = \(bind: now), device_name = COALESCE(\(bind: name), device_name) WHERE app_id = \(bind: app) AND device_id = \(bind: device)").run()
    }

    /// A new identity in a group of its own, for a device that registered with `claimedID`.
    /// Several identities may share a claimed id: each registration that proves nothing is one.
    func register(app: String, device: String, claimedID: String, group: String, name: String?, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("INSERT INTO cutie_groups (id, app_id, created_at) VALUES (\(bind: group), \(bind: app), \(bind: now))").run()
        try await db.raw("""
            INSERT INTO cutie_devices (app_id, device_id, client_device_id, group_id, device_name, created_at, last_seen_at)
            VALUES (\(bind: app), \(bind: device), \(bind: claimedID), \(bind: group), \(bind: name), \(bind: now), \(bind: now))
            """).run()
    }

    /// Whether the app has registered a device under `clientID` before.
    func knows(clientID: String, app: String, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("SELECT device_id FROM cutie_devices WHERE app_id = \(bind: app) AND client_device_id = \(bind: clientID) LIMIT 1").first() != nil
    }

    /// A device token, kept as its SHA-256.
    func insertToken(id: String, hash: String, app: String, device: String, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO cutie_device_tokens (token_id, token_hash, app_id, device_id, created_at)
            VALUES (\(bind: id), \(bind: hash), \(bind: app), \(bind: device), \(bind: now))
            """).run()
    }

    /// Stops pushes to a device.
    func deactivatePushTokens(app: String, device: String, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE cutie_push_tokens SET active = FALSE, updated_at = \(bind: now)
            WHERE app_id = \(bind: app) AND device_id = \(bind: device)
            """).run()
    }

    /// An identity's APNs token. Only the identity itself sets or clears its registration: one
    /// that registers a token another identity holds adds a registration of its own and takes
    /// nothing from the other (a phone that lost its Cuti-E token and registered afresh keeps
    /// getting replies to its earlier thread; someone who learned a token cannot silence it).
    func registerPushToken(app: String, device: String, platform: String, token: String, bundleID: String, environment: String,
                           now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO cutie_push_tokens (app_id, device_id, platform, push_token, bundle_id, environment, active, updated_at)
            VALUES (\(bind: app), \(bind: device), \(bind: platform), \(bind: token), \(bind: bundleID), \(bind: environment), TRUE, \(bind: now))
            ON CONFLICT (app_id, device_id) DO UPDATE SET platform = excluded.platform, push_token = excluded.push_token,
                bundle_id = excluded.bundle_id, environment = excluded.environment, active = TRUE, updated_at = excluded.updated_at
            """).run()
    }

    /// The app's own user id and name for the device, where given.
    func rememberUser(app: String, device: String, userID: String?, userName: String?, in db: any DatabaseSession) async throws {
        guard userID != nil || userName != nil else { return }
        try await db.raw("""
            UPDATE cutie_devices SET user_id = COALESCE(\(bind: userID), user_id), user_name = COALESCE(\(bind: userName), user_name)
            WHERE app_id = \(bind: app) AND device_id = \(bind: device)
            """).run()
    }

    /// An activity ping: one row per app, day and hashed device id, counting pings.
    struct Ping: Sendable {
        var app: String
        var day: String
        var hashedDeviceID: String
        var language: String?
        var country: String?
        var appVersion: String?
        var osVersion: String?
        var deviceModel: String?
    }

    func recordActivity(_ ping: Ping, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO cutie_activity (app_id, day, hashed_device_id, language, country, app_version, os_version, device_model, pings, first_at, last_at)
            VALUES (\(bind: ping.app), \(bind: ping.day), \(bind: ping.hashedDeviceID), \(bind: ping.language), \(bind: ping.country),
                    \(bind: ping.appVersion), \(bind: ping.osVersion), \(bind: ping.deviceModel), 1, \(bind: now), \(bind: now))
            ON CONFLICT (app_id, day, hashed_device_id) DO UPDATE SET pings = cutie_activity.pings + 1, last_at = excluded.last_at,
                language = COALESCE(excluded.language, cutie_activity.language), country = COALESCE(excluded.country, cutie_activity.country),
                app_version = COALESCE(excluded.app_version, cutie_activity.app_version)
            """).run()
    }
}

import Foundation
import PurseDatabase
import PurseServer
import SQLKit

/// What a device keeps beside its conversations: its push token, the user it names, and the
/// opt-in activity pings. Each method runs in the session it is given.
struct DeviceStore: Sendable {
    /// Stops pushes to a device.
    func deactivatePushTokens(app: String, device: String, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE cutie_push_tokens SET active = FALSE, updated_at = \(bind: now)
            WHERE app_id = \(bind: app) AND device_id = \(bind: device)
            """).run()
    }

    /// A device's APNs token. A token belongs to one device: a phone that changed hands stops
    /// getting the old owner's replies.
    func registerPushToken(app: String, device: String, platform: String, token: String, bundleID: String, environment: String,
                           now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE cutie_push_tokens SET active = FALSE, updated_at = \(bind: now)
            WHERE app_id = \(bind: app) AND push_token = \(bind: token) AND device_id <> \(bind: device)
            """).run()
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

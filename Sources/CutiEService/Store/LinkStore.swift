import CutiEVocabulary
import Foundation
import PurseDatabase
import PurseServer
import SQLKit

/// Link tokens and the device groups they join: every statement device linking runs. Tokens
/// are kept as their SHA-256 only. Each method runs in the session it is given.
struct LinkStore: Sendable {
    /// A link token's stored state; `expired` is the pending state after `expires_at`.
    typealias State = LinkTokenStatus

    struct Token: Sendable {
        var appID: String
        var deviceID: String
        var groupID: String
        var state: State
        var expiresAt: Int64
        var confirmedDeviceID: String?
        var confirmedAt: Int64?
        /// The confirming device's own name, if it gave one.
        var confirmedDeviceName: String?
    }

    struct Member: Sendable {
        var deviceID: String
        var deviceName: String?
        var createdAt: Int64
        var linkedAt: Int64?
        var lastSeenAt: Int64
    }

    func createToken(hash: String, app: String, device: String, group: String, now: Int64, expires: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO cutie_link_tokens (token_hash, app_id, device_id, group_id, status, created_at, expires_at)
            VALUES (\(bind: hash), \(bind: app), \(bind: device), \(bind: group), \(bind: State.pending.rawValue), \(bind: now), \(bind: expires))
            """).run()
    }

    /// How many devices share the group.
    func groupSize(_ group: String, in db: any DatabaseSession) async throws -> Int {
        try await db.raw("SELECT COUNT(*) AS devices FROM cutie_devices WHERE group_id = \(bind: group)").first()?
            .decode(column: "devices", as: Int.self) ?? 0
    }

    /// A token by its hash, with the name of the device that confirmed it.
    func token(hash: String, in db: any DatabaseSession) async throws -> Token? {
        guard let row = try await db.raw("""
            SELECT l.app_id, l.device_id, l.group_id, l.status, l.expires_at, l.confirmed_device_id, l.confirmed_at, d.device_name
            FROM cutie_link_tokens l LEFT JOIN cutie_devices d ON d.app_id = l.app_id AND d.device_id = l.confirmed_device_id
            WHERE l.token_hash = \(bind: hash)
            """).first() else { return nil }
        let typed = try row.decode(column: "status", as: State.self, of: "cutie_link_tokens")
        return Token(appID: try row.decode(column: "app_id", as: String.self), deviceID: try row.decode(column: "device_id", as: String.self),
                     groupID: try row.decode(column: "group_id", as: String.self), state: typed,
                     expiresAt: try row.decode(column: "expires_at", as: Int64.self),
                     confirmedDeviceID: try row.decode(column: "confirmed_device_id", as: String?.self),
                     confirmedAt: try row.decode(column: "confirmed_at", as: Int64?.self),
                     confirmedDeviceName: try row.decode(column: "device_name", as: String?.self))
    }

    /// Spends a pending token for `device`: single use even when two devices confirm at once,
    /// since only one update finds it pending. False when it was spent already.
    func confirm(hash: String, by device: String, now: Int64, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            UPDATE cutie_link_tokens SET status = \(bind: State.confirmed.rawValue), confirmed_device_id = \(bind: device), confirmed_at = \(bind: now)
            WHERE token_hash = \(bind: hash) AND status = \(bind: State.pending.rawValue) RETURNING token_hash
            """).first() != nil
    }

    /// Moves a device into `group`, its own conversations with it (they join the shared inbox).
    func join(app: String, device: String, from oldGroup: String, to group: String, name: String?, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE cutie_devices SET group_id = \(bind: group), linked_at = \(bind: now), device_name = COALESCE(\(bind: name), device_name)
            WHERE app_id = \(bind: app) AND device_id = \(bind: device)
            """).run()
        try await db.raw("""
            UPDATE cutie_conversations SET group_id = \(bind: group)
            WHERE app_id = \(bind: app) AND device_id = \(bind: device) AND group_id = \(bind: oldGroup)
            """).run()
    }

    /// The devices of a group, oldest first.
    func members(app: String, group: String, in db: any DatabaseSession) async throws -> [Member] {
        try await db.raw("""
            SELECT device_id, device_name, created_at, linked_at, last_seen_at FROM cutie_devices
            WHERE app_id = \(bind: app) AND group_id = \(bind: group) ORDER BY created_at, device_id
            """).all().map { row in
            Member(deviceID: try row.decode(column: "device_id", as: String.self), deviceName: try row.decode(column: "device_name", as: String?.self),
                   createdAt: try row.decode(column: "created_at", as: Int64.self), linkedAt: try row.decode(column: "linked_at", as: Int64?.self),
                   lastSeenAt: try row.decode(column: "last_seen_at", as: Int64.self))
        }
    }

    /// The identities of `group` that `device` names: by the identity's own id (as lists show
    /// it), or by the id a member device sends (an app unlinking a device by its SDK device id).
    /// Only members of the group are ever found.
    func members(app: String, named device: String, group: String, in db: any DatabaseSession) async throws -> [String] {
        try await db.raw("""
            SELECT device_id FROM cutie_devices
            WHERE app_id = \(bind: app) AND group_id = \(bind: group) AND (device_id = \(bind: device) OR client_device_id = \(bind: device))
            """).all().map { try $0.decode(column: "device_id", as: String.self) }
    }

    /// Gives a device an inbox of its own again (a new group); the shared conversations stay.
    func unlink(app: String, device: String, now: Int64, in db: any DatabaseSession) async throws {
        let fresh = RandomID.make("grp")
        try await db.raw("INSERT INTO cutie_groups (id, app_id, created_at) VALUES (\(bind: fresh), \(bind: app), \(bind: now))").run()
        try await db.raw("""
            UPDATE cutie_devices SET group_id = \(bind: fresh), linked_at = NULL WHERE app_id = \(bind: app) AND device_id = \(bind: device)
            """).run()
    }
}

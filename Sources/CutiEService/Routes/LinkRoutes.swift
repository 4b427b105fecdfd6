import Crypto
import Foundation
import Hummingbird
import NIOCore
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// Device linking: a device makes a short-lived, single-use link token (shown as a QR code);
/// another device of the same app confirms it and joins the first one's group, so both see one
/// inbox. Tokens are stored only as their SHA-256.
struct LinkRoutes: Sendable {
    let routes: SDKRoutes
    var environment: ServerEnvironment { routes.environment }

    static let notFound = APIError.notFound("Link token not found")

    struct Initiated: Codable {
        var link_token: String
        var expires_at: Int64
        var expires_in: Int
        var has_existing_group: Bool
    }

    struct Confirm: Decodable {
        var link_token: String
        var device_name: String?
    }

    /// The Cuti-E SDK's `LinkConfirmResponse`.
    struct Confirmed: Codable {
        var success: Bool
        var group_id: String
        var message: String
    }

    /// The SDK's `LinkStatusResponse`: the token asked about, its group, and once confirmed the
    /// device that confirmed it (`device_id`, `target_device_name`) and when.
    struct Status: Codable {
        var status: String
        var link_token: String
        var group_id: String
        var expires_at: Int64
        var device_id: String?
        var target_device_name: String?
        var confirmed_at: Int64?
    }

    /// The SDK's `LinkedDevice`: `joined_at` when the device joined the group (linked, or made
    /// it), `is_primary` the device that made it.
    struct LinkedDevice: Codable {
        var device_id: String
        var device_name: String
        var is_current: Bool
        var is_primary: Bool
        var joined_at: Int64
        var created_at: Int64
        var linked_at: Int64?
        var last_seen_at: Int64
    }

    /// The SDK's `LinkedDevicesResponse`: `linked` when the group has another device.
    struct DeviceList: Codable {
        var linked: Bool
        var group_id: String
        var devices: [LinkedDevice]
    }

    /// A device's name as lists show it: its own, else one made from its id.
    static func displayName(_ name: String?, deviceID: String) -> String {
        if let name, !name.trimmingCharacters(in: .whitespaces).isEmpty { return name }
        return "Device " + deviceID.suffix(4).uppercased()
    }

    static func hash(_ token: String) -> String { Hex.encode(SHA256.hash(data: Data(token.utf8))) }

    func mount(on v1: RouterGroup<PurseRequestContext>) {
        v1.post("sdk/link/initiate", use: routes.signed { _, _, caller in
            let token = "lnk_" + Base64URL.encode(RandomID.bytes(24))
            let now = environment.now().epochMillis
            let expires = now + Int64(routes.configuration.linkSeconds) * 1000
            let grouped = try await environment.database.transaction { db in
                try await db.raw("""
                    INSERT INTO cutie_link_tokens (token_hash, app_id, device_id, group_id, status, created_at, expires_at)
                    VALUES (\(bind: Self.hash(token)), \(bind: caller.appID), \(bind: caller.deviceID), \(bind: caller.groupID), 'pending', \(bind: now), \(bind: expires))
                    """).run()
                return try await db.raw("SELECT COUNT(*) AS devices FROM cutie_devices WHERE group_id = \(bind: caller.groupID)").first()?
                    .decode(column: "devices", as: Int.self) ?? 1
            }
            return try Response.json(Initiated(link_token: token, expires_at: expires, expires_in: routes.configuration.linkSeconds,
                                               has_existing_group: grouped > 1), status: .created)
        })
        v1.post("sdk/link/confirm", use: routes.signed { _, body, caller in
            let input = try JSONBody.decode(Confirm.self, from: body)
            if let name = input.device_name { try Limits.text(name, field: "device_name", max: 100) }
            guard input.link_token.hasPrefix("lnk_"), input.link_token.utf8.count <= 100 else { throw Self.notFound }
            let now = environment.now().epochMillis
            let group = try await environment.database.transaction { db in
                guard let row = try await db.raw("""
                    SELECT app_id, device_id, group_id, status, expires_at FROM cutie_link_tokens WHERE token_hash = \(bind: Self.hash(input.link_token))
                    """).first(), try row.decode(column: "app_id", as: String.self) == caller.appID else {
                    // Another app's token is not this app's business: as unknown as a made-up one.
                    throw Self.notFound
                }
                guard try row.decode(column: "status", as: String.self) == "pending" else { throw APIError.conflict("Link token was already used") }
                guard try row.decode(column: "expires_at", as: Int64.self) > now else { throw APIError(.gone, "Link token expired") }
                let group = try row.decode(column: "group_id", as: String.self)
                guard try row.decode(column: "device_id", as: String.self) != caller.deviceID else {
                    throw APIError.badRequest("A device cannot confirm its own link token: scan it with the other device")
                }
                guard group != caller.groupID else { throw APIError.conflict("This device is already linked to that group") }
                // Single use even when two devices confirm at once: only one update finds it pending.
                guard try await db.raw("""
                    UPDATE cutie_link_tokens SET status = 'confirmed', confirmed_device_id = \(bind: caller.deviceID), confirmed_at = \(bind: now)
                    WHERE token_hash = \(bind: Self.hash(input.link_token)) AND status = 'pending' RETURNING token_hash
                    """).first() != nil else { throw APIError.conflict("Link token was already used") }
                try await db.raw("""
                    UPDATE cutie_devices SET group_id = \(bind: group), linked_at = \(bind: now), device_name = COALESCE(\(bind: input.device_name), device_name)
                    WHERE app_id = \(bind: caller.appID) AND device_id = \(bind: caller.deviceID)
                    """).run()
                // The device's own conversations join the shared inbox.
                try await db.raw("""
                    UPDATE cutie_conversations SET group_id = \(bind: group)
                    WHERE app_id = \(bind: caller.appID) AND device_id = \(bind: caller.deviceID) AND group_id = \(bind: caller.groupID)
                    """).run()
                return group
            }
            return try Response.json(Confirmed(success: true, group_id: group, message: "Device linked"))
        })
        v1.get("sdk/link/status/{token}", use: routes.signed { request, _, caller in
            let token = request.uri.path.split(separator: "/").last.map(String.init) ?? ""
            guard token.hasPrefix("lnk_"), token.utf8.count <= 100 else { throw Self.notFound }
            let status = try await environment.database.read { db -> Status in
                guard let row = try await db.raw("""
                    SELECT l.app_id, l.device_id, l.group_id, l.status, l.expires_at, l.confirmed_device_id, l.confirmed_at, d.device_name
                    FROM cutie_link_tokens l LEFT JOIN cutie_devices d ON d.app_id = l.app_id AND d.device_id = l.confirmed_device_id
                    WHERE l.token_hash = \(bind: Self.hash(token))
                    """).first(), try row.decode(column: "app_id", as: String.self) == caller.appID,
                    try row.decode(column: "group_id", as: String.self) == caller.groupID
                    || (try row.decode(column: "device_id", as: String.self)) == caller.deviceID else {
                    throw Self.notFound
                }
                let expires = try row.decode(column: "expires_at", as: Int64.self)
                let state = try row.decode(column: "status", as: String.self)
                let confirmedBy = try row.decode(column: "confirmed_device_id", as: String?.self)
                return Status(status: state == "pending" && expires <= environment.now().epochMillis ? "expired" : state, link_token: token,
                              group_id: try row.decode(column: "group_id", as: String.self), expires_at: expires, device_id: confirmedBy,
                              target_device_name: try confirmedBy.map { Self.displayName(try row.decode(column: "device_name", as: String?.self), deviceID: $0) },
                              confirmed_at: try row.decode(column: "confirmed_at", as: Int64?.self))
            }
            return try Response.json(status)
        })
        v1.get("sdk/link/devices", use: routes.signed { _, _, caller in
            var devices = try await environment.database.read { db in
                try await db.raw("""
                    SELECT device_id, device_name, created_at, linked_at, last_seen_at FROM cutie_devices
                    WHERE app_id = \(bind: caller.appID) AND group_id = \(bind: caller.groupID) ORDER BY created_at, device_id
                    """).all().map { row in
                    let id = try row.decode(column: "device_id", as: String.self)
                    let created = try row.decode(column: "created_at", as: Int64.self), linked = try row.decode(column: "linked_at", as: Int64?.self)
                    return LinkedDevice(device_id: id, device_name: Self.displayName(try row.decode(column: "device_name", as: String?.self), deviceID: id),
                                        is_current: id == caller.deviceID, is_primary: false, joined_at: linked ?? created, created_at: created,
                                        linked_at: linked, last_seen_at: try row.decode(column: "last_seen_at", as: Int64.self))
                }
            }
            // The group's maker: the first device that did not join by a link.
            if let primary = devices.firstIndex(where: { $0.linked_at == nil }) ?? devices.indices.first { devices[primary].is_primary = true }
            return try Response.json(DeviceList(linked: devices.count > 1, group_id: caller.groupID, devices: devices))
        })
        v1.delete("sdk/link/devices/{id}", use: routes.signed { request, _, caller in
            let target = request.uri.path.split(separator: "/").last.map(String.init) ?? ""
            let now = environment.now().epochMillis
            try await environment.database.transaction { db in
                guard DeviceAuthenticator.isDeviceID(target), try await db.raw("""
                    SELECT 1 AS found FROM cutie_devices WHERE app_id = \(bind: caller.appID) AND device_id = \(bind: target) AND group_id = \(bind: caller.groupID)
                    """).first() != nil else { throw APIError.notFound("Device not found") }
                let members = try await db.raw("SELECT COUNT(*) AS devices FROM cutie_devices WHERE group_id = \(bind: caller.groupID)").first()?
                    .decode(column: "devices", as: Int.self) ?? 1
                guard members > 1 else { throw APIError.conflict("The device is not linked to any other") }
                // The unlinked device starts an inbox of its own; the shared conversations stay with the group.
                let fresh = RandomID.make("grp")
                try await db.raw("INSERT INTO cutie_groups (id, app_id, created_at) VALUES (\(bind: fresh), \(bind: caller.appID), \(bind: now))").run()
                try await db.raw("""
                    UPDATE cutie_devices SET group_id = \(bind: fresh), linked_at = NULL WHERE app_id = \(bind: caller.appID) AND device_id = \(bind: target)
                    """).run()
            }
            return try Response.json(Unlinked(success: true, message: "Device unlinked"))
        })
    }

    /// The SDK's `UnlinkDeviceResponse`.
    struct Unlinked: Codable {
        var success: Bool
        var message: String
    }
}

import Crypto
import CutiEVocabulary
import Foundation
import Hummingbird
import NIOCore
import PurseDatabase
import PurseFormats
import PurseServer

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
        var status: LinkStore.State
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


    func mount(on v1: RouterGroup<PurseRequestContext>) {
        let store = LinkStore()
        v1.post("sdk/link/initiate", use: routes.signed { _, _, caller in
            let token = "lnk_" + Base64URL.encode(RandomID.bytes(24))
            let now = environment.now().epochMillis
            let expires = now + Int64(routes.configuration.linkSeconds) * 1000
            let grouped = try await environment.database.transaction { db in
                try await store.createToken(hash: SecretDigest.hex(token), app: caller.appID, device: caller.deviceID, group: caller.groupID,
                                            now: now, expires: expires, in: db)
                return try await store.groupSize(caller.groupID, in: db)
            }
            return try Response.json(Initiated(link_token: token, expires_at: expires, expires_in: routes.configuration.linkSeconds,
                                               has_existing_group: grouped > 1), status: .created)
        })
        v1.post("sdk/link/confirm", use: routes.signed { _, body, caller in
            let input = try JSONBody.decode(Confirm.self, from: body)
            if let name = input.device_name { try Limits.text(name, field: "device_name", max: 100) }
            guard input.link_token.hasPrefix("lnk_"), input.link_token.utf8.count <= 100 else { throw Self.notFound }
            let now = environment.now().epochMillis
            let hash = SecretDigest.hex(input.link_token)
            let group = try await environment.database.transaction { db in
                // Another app's token is not this app's business: as unknown as a made-up one.
                guard let token = try await store.token(hash: hash, in: db), token.appID == caller.appID else { throw Self.notFound }
                guard token.state == .pending else { throw APIError.conflict("Link token was already used") }
                guard token.expiresAt > now else { throw APIError(.gone, "Link token expired") }
                guard token.deviceID != caller.deviceID else {
                    throw APIError.badRequest("A device cannot confirm its own link token: scan it with the other device")
                }
                guard token.groupID != caller.groupID else { throw APIError.conflict("This device is already linked to that group") }
                guard try await store.confirm(hash: hash, by: caller.deviceID, now: now, in: db) else { throw APIError.conflict("Link token was already used") }
                try await store.join(app: caller.appID, device: caller.deviceID, from: caller.groupID, to: token.groupID, name: input.device_name, now: now, in: db)
                return token.groupID
            }
            return try Response.json(Confirmed(success: true, group_id: group, message: "Device linked"))
        })
        v1.get("sdk/link/status/{token}", use: routes.signed { request, _, caller in
            let token = request.uri.path.split(separator: "/").last.map(String.init) ?? ""
            guard token.hasPrefix("lnk_"), token.utf8.count <= 100 else { throw Self.notFound }
            guard let found = try await environment.database.read({ db in try await store.token(hash: SecretDigest.hex(token), in: db) }),
                  found.appID == caller.appID, found.groupID == caller.groupID || found.deviceID == caller.deviceID else {
                throw Self.notFound
            }
            let state: LinkStore.State = found.state == .pending && found.expiresAt <= environment.now().epochMillis ? .expired : found.state
            return try Response.json(Status(
                status: state, link_token: token, group_id: found.groupID, expires_at: found.expiresAt, device_id: found.confirmedDeviceID,
                target_device_name: found.confirmedDeviceID.map { Self.displayName(found.confirmedDeviceName, deviceID: $0) },
                confirmed_at: found.confirmedAt))
        })
        v1.get("sdk/link/devices", use: routes.signed { _, _, caller in
            var devices = try await environment.database.read { db in
                try await store.members(app: caller.appID, group: caller.groupID, in: db)
            }.map { member in
                LinkedDevice(device_id: member.deviceID, device_name: Self.displayName(member.deviceName, deviceID: member.deviceID),
                             is_current: member.deviceID == caller.deviceID, is_primary: false, joined_at: member.linkedAt ?? member.createdAt,
                             created_at: member.createdAt, linked_at: member.linkedAt, last_seen_at: member.lastSeenAt)
            }
            // The group's maker: the first device that did not join by a link.
            if let primary = devices.firstIndex(where: { $0.linked_at == nil }) ?? devices.indices.first { devices[primary].is_primary = true }
            return try Response.json(DeviceList(linked: devices.count > 1, group_id: caller.groupID, devices: devices))
        })
        v1.delete("sdk/link/devices/{id}", use: routes.signed { request, _, caller in
            let target = request.uri.path.split(separator: "/").last.map(String.init) ?? ""
            let now = environment.now().epochMillis
            try await environment.database.transaction { db in
                guard DeviceAuthenticator.isDeviceID(target) else { throw APIError.notFound("Device not found") }
                let named = try await store.members(app: caller.appID, named: target, group: caller.groupID, in: db)
                guard !named.isEmpty else { throw APIError.notFound("Device not found") }
                guard try await store.groupSize(caller.groupID, in: db) > named.count else { throw APIError.conflict("The device is not linked to any other") }
                // The unlinked device starts an inbox of its own; the shared conversations stay with the group.
                for identity in named { try await store.unlink(app: caller.appID, device: identity, now: now, in: db) }
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

import Crypto
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// What keeps scripted devices from spending an app's feedback: the app id is public, so anyone
/// can register devices with it and open conversations.
///
/// - New devices per client address and app: a bucket of ``CutiEConfiguration/newDevicesPerAddressHour``
///   refilled over an hour (a device proving its current token is not new, and never draws).
/// - A device id the app knows, registering again without its token (the Cuti-E SDK does after
///   every 401 — a lost token, an app that requires App Attest on a device that cannot attest),
///   draws from a bucket of its own per address (``reregistrationsPerHour``), never from the
///   address's new-device budget: one stuck device cannot lock a new install on its network out,
///   and nobody on another network can spend the device's own bucket.
/// - New conversations per device: a bucket of ``CutiEConfiguration/conversationsPerDeviceDay``
///   refilled over a day.
/// - On a tier with a monthly limit, one client address receives at most
///   ``CutiEConfiguration/addressQuotaPercent`` of the month's feedback (counted with the app's
///   own count, in the same transaction), so the rest stays for the app's other users.
///
/// The buckets hold across replicas (``SharedRateLimiter``); an empty one answers 429 with
/// `Retry-After`. Many addresses together can still spend a quota; an app that admits only
/// attested devices (`require_app_attest`) stops that, since a script cannot attest a key.
struct DeviceLimits: Sendable {
    let newDevices: SharedRateLimiter?
    let reregistrations: SharedRateLimiter?
    let conversations: SharedRateLimiter?
    /// Registrations without a token of a device id the app knows, per address, an hour.
    static let reregistrationsPerHour = 3
    let addressQuotaPercent: Int

    init(configuration: CutiEConfiguration, database: Database) {
        newDevices = configuration.newDevicesPerAddressHour > 0
            ? SharedRateLimiter(name: "cutie.devices.address", perSecond: Double(configuration.newDevicesPerAddressHour) / 3600,
                                burst: configuration.newDevicesPerAddressHour, database: database) : nil
        reregistrations = configuration.newDevicesPerAddressHour > 0
            ? SharedRateLimiter(name: "cutie.devices.again", perSecond: Double(Self.reregistrationsPerHour) / 3600,
                                burst: Self.reregistrationsPerHour, database: database) : nil
        conversations = configuration.conversationsPerDeviceDay > 0
            ? SharedRateLimiter(name: "cutie.conversations.device", perSecond: Double(configuration.conversationsPerDeviceDay) / 86_400,
                                burst: configuration.conversationsPerDeviceDay, database: database) : nil
        addressQuotaPercent = configuration.addressQuotaPercent
    }

    /// Draws for a new device of `app` from `address`.
    func admitNewDevice(app: String, address: String?, now: Date) async throws {
        guard let newDevices, let address else { return }
        if let wait = try await newDevices.take(app + "/" + address, now: now) {
            throw APIError.tooManyRequests("Too many new devices from this network; try again in \(wait) s", retryAfter: wait)
        }
    }

    /// Draws for a device id the app knows registering again without its token, from `address`.
    func admitReregistration(app: String, clientID: String, address: String?, now: Date) async throws {
        guard let reregistrations, let address else { return }
        if let wait = try await reregistrations.take(app + "/" + clientID + "/" + address, now: now) {
            throw APIError.tooManyRequests("This device has registered too often; try again in \(wait) s", retryAfter: wait)
        }
    }

    /// Draws for a new conversation from a device, in the transaction that stores it: a retry
    /// answered from the request's idempotency record draws nothing more.
    func admitConversation(_ caller: DeviceCaller, now: Date, in db: any DatabaseSession) async throws {
        guard let conversations else { return }
        if let wait = try await conversations.take(caller.appID + "/" + caller.deviceID, now: now, in: db) {
            throw APIError.tooManyRequests("This device has started too many conversations today; try again in \(wait) s", retryAfter: wait)
        }
    }

    /// The most one address may receive of a monthly `limit` (at least one).
    func addressShare(of limit: Int64) -> Int64? { Self.addressShare(of: limit, percent: addressQuotaPercent) }

    /// `percent` of a monthly `limit` (at least one); nil when the share is off (0 or 100).
    static func addressShare(of limit: Int64, percent: Int) -> Int64? {
        guard percent > 0, percent < 100 else { return nil }
        return max(1, limit * Int64(percent) / 100)
    }

    /// An address as it is kept: hashed with the app id, so the table lists no addresses.
    static func addressKey(_ address: String, app: String) -> String {
        Hex.encode(SHA256.hash(data: Data((app + "\u{0}" + address).utf8))).prefix(32).description
    }
}

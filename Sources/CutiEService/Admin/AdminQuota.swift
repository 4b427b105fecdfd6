import CutiEVocabulary
import Foundation
import Logging
import PurseDatabase
import PurseServer

/// The month's quota as support sees and manages it: who spent it (devices and networks, most
/// first), blocks on a device or a network, and conversations given back to the month.
///
/// Without App Attest an app cannot tell a script from its users: a device is whatever registers,
/// and a network is what the address says. What this can do is show where the month went, stop a
/// device or a network from opening more, and undo what they spent. What it cannot do is stop
/// someone with many addresses from registering new devices; that takes `require_app_attest`.
struct AdminQuota: Sendable {
    let environment: ServerEnvironment
    let configuration: CutiEConfiguration

    struct Usage: Encodable {
        var app_id: String
        var period: String
        var tier: String
        /// The month's limit; nil on an unlimited tier.
        var limit: Int64?
        var received: Int64
        /// The most one network may spend of a limited month (attested devices aside).
        var address_share: Int64?
        var devices: [QuotaStore.Spender]
        var addresses: [QuotaStore.Spender]
    }

    struct BlockBody: Decodable {
        /// `device` or `address`.
        var kind: String
        /// A device's id as conversations show it, or a network as the usage lists it.
        var id: String
        /// Give the month's conversations of the blocked device or network back to the quota.
        var give_back: Bool?
    }

    struct Blocked: Encodable {
        var blocked: Bool
        var given_back: Int64
    }

    struct GiveBack: Decodable { var conversations: Int64 }
    struct GivenBack: Encodable { var given_back: Int64; var received: Int64 }

    func usage(app: String) async throws -> Usage {
        let now = environment.now()
        let period = SubscriptionRoutes.period(of: now)
        return try await environment.database.read { db in
            guard try await CutiEApp.load(app, in: db) != nil else { throw APIError.notFound("No app \(app)") }
            let (tier, _) = try await SubscriptionRoutes.tier(app: app, now: now, in: db)
            let received = try await SubscriptionStore().received(app: app, period: period.key, in: db)
            let (devices, addresses) = try await QuotaStore().spenders(app: app, start: period.start.epochMillis, end: period.end.epochMillis, limit: 20, in: db)
            let share = tier.monthlyLimit.flatMap { DeviceLimits.addressShare(of: $0, percent: configuration.addressQuotaPercent) }
            return Usage(app_id: app, period: period.key, tier: tier.rawValue, limit: tier.monthlyLimit, received: received, address_share: share,
                         devices: devices, addresses: addresses)
        }
    }

    func block(app: String, _ body: BlockBody, admin: Admin) async throws -> Blocked {
        guard let kind = QuotaStore.BlockKind(rawValue: body.kind) else { throw APIError.badRequest("kind must be device or address") }
        try Limits.text(body.id, field: "id", max: 100)
        let now = environment.now()
        let period = SubscriptionRoutes.period(of: now)
        return try await environment.database.transaction { db in
            guard try await CutiEApp.load(app, in: db) != nil else { throw APIError.notFound("No app \(app)") }
            let store = QuotaStore()
            let blocked = try await store.block(app: app, kind: kind, value: body.id, by: admin.id, now: now.epochMillis, in: db)
            var given: Int64 = 0
            if body.give_back == true {
                let spent = try await store.conversations(app: app, kind: kind, value: body.id, start: period.start.epochMillis, end: period.end.epochMillis, in: db)
                given = try await store.giveBack(app: app, period: period.key, count: spent, addressKey: kind == .address ? body.id : nil, in: db)
            }
            environment.logger.notice("Cuti-E block", metadata: ["app_id": "\(app)", "kind": "\(kind.rawValue)", "admin": "\(admin.id)", "given_back": "\(given)"])
            return Blocked(blocked: blocked, given_back: given)
        }
    }

    func unblock(app: String, kind: String, id: String) async throws {
        guard let kind = QuotaStore.BlockKind(rawValue: kind) else { throw APIError.badRequest("kind must be device or address") }
        let removed = try await environment.database.transaction { db in try await QuotaStore().unblock(app: app, kind: kind, value: id, in: db) }
        guard removed else { throw APIError.notFound("No such block") }
    }

    func giveBack(app: String, conversations: Int64) async throws -> GivenBack {
        guard (1...1_000_000).contains(conversations) else { throw APIError.badRequest("conversations must be 1 to 1000000") }
        let period = SubscriptionRoutes.period(of: environment.now()).key
        return try await environment.database.transaction { db in
            guard try await CutiEApp.load(app, in: db) != nil else { throw APIError.notFound("No app \(app)") }
            let given = try await QuotaStore().giveBack(app: app, period: period, count: conversations, addressKey: nil, in: db)
            return GivenBack(given_back: given, received: try await SubscriptionStore().received(app: app, period: period, in: db))
        }
    }
}

import CutiEVocabulary
import Foundation
import Hummingbird
import Logging
import NIOCore
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// Subscriptions verified server-side: the SDK sends every verified StoreKit transaction
/// (`POST /v1/subscription/verify`), the App Store sends Server Notifications V2
/// (`POST /v1/appstore/notifications`) for renewals, grace periods, expirations and refunds, and
/// `GET /v1/usage` tells the app its tier and how much of its monthly feedback it has received.
/// Over the limit, new conversations are refused (existing ones go on).
struct SubscriptionRoutes: Sendable {
    let routes: SDKRoutes
    var environment: ServerEnvironment { routes.environment }
    var configuration: CutiEConfiguration { routes.configuration }

    struct Verify: Decodable {
        var platform: String
        var signed_transaction: String
        var product_id: String
    }

    struct Subscription: Codable {
        var tier: CutiETier
        var status: PlanStatus
        var product_id: String?
        var expires_at: Int64?
        var grace_period_expires_at: Int64?
    }

    struct Usage: Codable {
        var tier: CutiETier
        var status: PlanStatus
        var period: String
        var period_start: Int64
        var period_end: Int64
        var feedback_received: Int64
        /// nil: unlimited.
        var limit: Int64?
        var remaining: Int64?
    }

    struct NotificationBody: Decodable { var signedPayload: String }
    struct Received: Codable { var received: Bool; var duplicate: Bool }

    func mount(on v1: RouterGroup<PurseRequestContext>) {
        v1.post("subscription/verify", use: routes.signed { request, body, caller in
            let input = try JSONBody.decode(Verify.self, from: body)
            guard ["ios", "macos"].contains(input.platform) else { throw APIError.badRequest("platform must be ios or macos") }
            guard CutiETier(productID: input.product_id) != nil else {
                throw APIError.badRequest("product_id must be com.cutie.starter|pro|business.monthly|yearly")
            }
            let now = environment.now()
            let transaction = try await verifiedTransaction(input.signed_transaction, at: now)
            guard transaction.productId == input.product_id else { throw APIError.badRequest("StoreKit: the transaction is for \(transaction.productId), not \(input.product_id)") }
            let subscription = try await environment.database.transaction { db in
                guard let app = try await CutiEApp.load(caller.appID, in: db) else { throw DeviceAuthenticator.unauthorized }
                try Self.check(transaction, for: app)
                return try await Self.record(transaction, appID: app.id, now: now, in: db)
            }
            return try Response.json(subscription)
        })
        v1.get("usage", use: routes.signed { request, _, caller in
            try request.requireOnlyQuery([])
            return try Response.json(try await environment.database.read { db in try await Self.usage(app: caller.appID, now: environment.now(), in: db) })
        })
        v1.post("appstore/notifications") { request, context in
            var request = request
            let body = try await request.decodeJSON(as: NotificationBody.self, context: context)
            return try Response.json(try await notification(body.signedPayload))
        }
    }

    func verifiedTransaction(_ jws: String, at date: Date) async throws -> StoreKitTransaction {
        do {
            let payload = try await StoreKitVerifier(roots: configuration.storeKitRoots).verify(jws, at: date)
            return try JSONDecoder().decode(StoreKitTransaction.self, from: payload)
        } catch let error as StoreKitVerifier.Failure {
            environment.logger.notice("StoreKit transaction refused", metadata: ["check": "\(error)"])
            throw APIError.badRequest("StoreKit: \(error)")
        } catch {
            throw APIError.badRequest("StoreKit: the transaction payload is not a StoreKit transaction")
        }
    }

    /// The transaction is this app's, from the App Store environment its builds use.
    static func check(_ transaction: StoreKitTransaction, for app: CutiEApp) throws {
        guard transaction.bundleId == app.bundleID else { throw APIError.badRequest("StoreKit: the transaction is for bundle \(transaction.bundleId), not this app's") }
        let expected = app.apnsEnvironment == "production" ? "Production" : "Sandbox"
        guard transaction.environment == expected else {
            throw APIError.badRequest("StoreKit: the transaction is from the \(transaction.environment) environment; this app takes \(expected)")
        }
    }

    /// Stores a transaction (once) and sets the app's subscription from it.
    static func record(_ transaction: StoreKitTransaction, appID: String, now: Date, status override: PlanStatus? = nil, graceUntil: Int64? = nil,
                       in db: any DatabaseSession) async throws -> Subscription {
        guard let tier = CutiETier(productID: transaction.productId) else {
            throw APIError.badRequest("StoreKit: \(transaction.productId) is not a Cuti-E subscription")
        }
        let store = SubscriptionStore()
        try await store.recordTransaction(transaction, app: appID, now: now.epochMillis, in: db)
        let status: PlanStatus
        if let override {
            status = override
        } else if transaction.revocationDate != nil {
            status = .revoked
        } else if let expires = transaction.expiresDate, expires <= now.epochMillis {
            status = .expired
        } else {
            status = .active
        }
        try await store.setSubscription(app: appID, from: transaction, tier: tier, status: status, graceUntil: graceUntil, now: now.epochMillis, in: db)
        return Subscription(tier: tier, status: status, product_id: transaction.productId, expires_at: transaction.expiresDate,
                            grace_period_expires_at: graceUntil)
    }

    // MARK: App Store Server Notifications V2

    func notification(_ signedPayload: String) async throws -> Received {
        let now = environment.now()
        let verifier = StoreKitVerifier(roots: configuration.storeKitRoots)
        let decoded: AppStoreNotification
        var transaction: StoreKitTransaction?
        var renewal: StoreKitRenewalInfo?
        do {
            decoded = try JSONDecoder().decode(AppStoreNotification.self, from: try await verifier.verify(signedPayload, at: now))
            if let signed = decoded.data?.signedTransactionInfo {
                transaction = try JSONDecoder().decode(StoreKitTransaction.self, from: try await verifier.verify(signed, at: now))
            }
            if let signed = decoded.data?.signedRenewalInfo {
                renewal = try JSONDecoder().decode(StoreKitRenewalInfo.self, from: try await verifier.verify(signed, at: now))
            }
        } catch let error as StoreKitVerifier.Failure {
            environment.logger.notice("App Store notification refused", metadata: ["check": "\(error)"])
            throw APIError.badRequest("App Store notification: \(error)")
        } catch {
            throw APIError.badRequest("App Store notification: the payload is not a notification V2")
        }
        guard decoded.notificationUUID.utf8.count <= 64 else { throw APIError.badRequest("App Store notification: notificationUUID is too long") }
        let original = transaction?.originalTransactionId ?? renewal?.originalTransactionId
        let (transactionInfo, renewalInfo) = (transaction, renewal)
        return try await environment.database.transaction { db in
            let (transaction, renewal) = (transactionInfo, renewalInfo)
            let app = try await Self.app(for: decoded, originalTransactionID: original, in: db)
            let first = try await SubscriptionStore().recordNotification(uuid: decoded.notificationUUID, type: decoded.notificationType, subtype: decoded.subtype,
                                                                         originalTransaction: original, app: app?.id, now: now.epochMillis, in: db)
            guard first else { return Received(received: true, duplicate: true) }
            guard let app, let transaction else { return Received(received: true, duplicate: false) }
            try Self.check(transaction, for: app)
            switch (decoded.notificationType, decoded.subtype) {
            case ("DID_FAIL_TO_RENEW", "GRACE_PERIOD"):
                _ = try await Self.record(transaction, appID: app.id, now: now, status: .grace_period, graceUntil: renewal?.gracePeriodExpiresDate, in: db)
            case ("DID_FAIL_TO_RENEW", _), ("EXPIRED", _), ("GRACE_PERIOD_EXPIRED", _):
                _ = try await Self.record(transaction, appID: app.id, now: now, status: .expired, in: db)
            case ("REFUND", _), ("REVOKE", _):
                _ = try await Self.record(transaction, appID: app.id, now: now, status: .revoked, in: db)
            case ("SUBSCRIBED", _), ("DID_RENEW", _), ("OFFER_REDEEMED", _), ("DID_CHANGE_RENEWAL_PREF", _), ("REFUND_REVERSED", _):
                _ = try await Self.record(transaction, appID: app.id, now: now, in: db)
            default:
                break  // recorded, nothing to change (renewal status changes, price increases, tests)
            }
            return Received(received: true, duplicate: false)
        }
    }

    /// The app a notification is about: the one holding its original transaction, else the one
    /// with its bundle id.
    static func app(for notification: AppStoreNotification, originalTransactionID: String?, in db: any DatabaseSession) async throws -> CutiEApp? {
        let store = SubscriptionStore()
        if let originalTransactionID, let app = try await store.app(holding: originalTransactionID, in: db) {
            return try await CutiEApp.load(app, in: db)
        }
        guard let bundle = notification.data?.bundleId, let app = try await store.app(bundleID: bundle, in: db) else { return nil }
        return try await CutiEApp.load(app, in: db)
    }

    // MARK: Usage

    /// The calendar month (UTC) a time falls in: its key and bounds.
    static func period(of date: Date) -> (key: String, start: Date, end: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month], from: date)
        let start = calendar.date(from: parts)!
        let end = calendar.date(byAdding: .month, value: 1, to: start)!
        return (String(format: "%04d-%02d", parts.year!, parts.month!), start, end)
    }

    /// The tier an app has now: its subscription's while active (or in its grace period).
    static func tier(app: String, now: Date, in db: any DatabaseSession) async throws -> (tier: CutiETier, status: PlanStatus) {
        guard let stored = try await SubscriptionStore().subscription(of: app, in: db) else { return (.free, .none) }
        let millis = now.epochMillis
        switch stored.status {
        case .active:
            if let expires = stored.expiresAt, expires <= millis { return (.free, .expired) }
            return (stored.tier, .active)
        case .grace_period:
            if let until = stored.graceExpiresAt, until <= millis { return (.free, .expired) }
            return (stored.tier, .grace_period)
        case .none, .expired, .revoked:
            return (.free, stored.status)
        }
    }

    static func usage(app: String, now: Date, in db: any DatabaseSession) async throws -> Usage {
        let (tier, status) = try await tier(app: app, now: now, in: db)
        let period = period(of: now)
        let received = try await SubscriptionStore().received(app: app, period: period.key, in: db)
        return Usage(tier: tier, status: status, period: period.key, period_start: period.start.epochMillis, period_end: period.end.epochMillis,
                     feedback_received: received, limit: tier.monthlyLimit, remaining: tier.monthlyLimit.map { max(0, $0 - received) })
    }

    /// Counts one new conversation against the app's monthly limit, or refuses it: one
    /// conditional update, so the limit holds however many arrive at once. On a limited tier the
    /// client address's share (``DeviceLimits/addressShare(of:)``) is counted the same way first,
    /// in the same transaction.
    static func countFeedback(app: String, address: String? = nil, limits: DeviceLimits? = nil, now: Date, in db: any DatabaseSession) async throws {
        let store = SubscriptionStore()
        let (tier, _) = try await tier(app: app, now: now, in: db)
        let period = period(of: now).key
        if let limit = tier.monthlyLimit, let address, let share = limits?.addressShare(of: limit) {
            let key = DeviceLimits.addressKey(address, app: app)
            guard try await store.count(app: app, period: period, address: key, below: share, in: db) else {
                throw APIError(.forbidden, "Feedback from this network has reached its share (\(share)) of this app's \(limit) conversations for \(period): "
                    + "try again next month (existing conversations keep working)")
            }
            if Int.random(in: 0..<500) == 0 {
                try await store.pruneAddressCounts(before: period, in: db)
            }
        }
        guard try await store.count(app: app, period: period, below: tier.monthlyLimit, in: db) else {
            throw APIError(.forbidden, "This app has received its \(tier.monthlyLimit ?? 0) feedback conversations for \(period) on the \(tier.rawValue) tier: "
                + "upgrade the Cuti-E subscription for more (existing conversations keep working)")
        }
    }
}

/// The sandbox's StoreKit (development only), as Xcode's StoreKit testing is for an app: it signs
/// transactions and App Store Server Notifications with the development signer.
struct StoreKitSandbox: Sendable {
    let signer: StoreKitDevelopmentSigner
    let environment: ServerEnvironment

    struct Purchase: Decodable {
        var bundle_id: String
        var product_id: String
        var original_transaction_id: String?
        var days: Int?
        var revoked: Bool?
    }

    struct Notify: Decodable {
        var notification_type: String
        var subtype: String?
        var bundle_id: String
        var product_id: String
        var original_transaction_id: String
        var days: Int?
        var grace_days: Int?
    }

    struct Signed: Codable { var signed_transaction: String; var transaction_id: String; var original_transaction_id: String }
    struct SignedNotification: Codable { var signedPayload: String; var notification_uuid: String }

    static func check(bundleID: String, productID: String, original: String?, days: Int?) throws {
        guard (1...155).contains(bundleID.utf8.count) else { throw APIError.badRequest("bundle_id must be 1 to 155 characters") }
        guard CutiETier(productID: productID) != nil else { throw APIError.badRequest("product_id must be a Cuti-E subscription") }
        if let original, !(1...40).contains(original.utf8.count) { throw APIError.badRequest("original_transaction_id must be 1 to 40 characters") }
        if let days, !(1...3660).contains(days) { throw APIError.badRequest("days must be 1 to 3660") }
    }

    func transaction(_ input: Purchase) -> StoreKitTransaction {
        let now = environment.now().epochMillis
        let id = String(Int64.random(in: 2_000_000_000_000_000...2_999_999_999_999_999))
        let days = Int64(input.days ?? (input.product_id.hasSuffix(".yearly") ? 365 : 30))
        return StoreKitTransaction(transactionId: id, originalTransactionId: input.original_transaction_id ?? id, bundleId: input.bundle_id,
                                   productId: input.product_id, purchaseDate: now, expiresDate: now + days * 86_400_000,
                                   revocationDate: input.revoked == true ? now : nil, type: "Auto-Renewable Subscription", environment: "Sandbox", signedDate: now)
    }

    func mount(on router: Router<PurseRequestContext>) {
        router.post("sandbox/storekit/transactions") { request, context in
            var request = request
            let input = try await request.decodeJSON(as: Purchase.self, context: context)
            try Self.check(bundleID: input.bundle_id, productID: input.product_id, original: input.original_transaction_id, days: input.days)
            let transaction = transaction(input)
            return try Response.json(Signed(signed_transaction: try signer.sign(transaction), transaction_id: transaction.transactionId,
                                            original_transaction_id: transaction.originalTransactionId))
        }
        router.post("sandbox/storekit/notifications") { request, context in
            var request = request
            let input = try await request.decodeJSON(as: Notify.self, context: context)
            try Self.check(bundleID: input.bundle_id, productID: input.product_id, original: input.original_transaction_id, days: input.days)
            guard (1...40).contains(input.notification_type.utf8.count), (input.subtype?.utf8.count ?? 1) <= 40, (input.subtype?.utf8.count ?? 1) >= 1 else {
                throw APIError.badRequest("notification_type and subtype must be 1 to 40 characters")
            }
            if let grace = input.grace_days, !(1...60).contains(grace) { throw APIError.badRequest("grace_days must be 1 to 60") }
            var transaction = transaction(Purchase(bundle_id: input.bundle_id, product_id: input.product_id,
                                                   original_transaction_id: input.original_transaction_id, days: input.days))
            let now = environment.now().epochMillis
            if input.notification_type == "REFUND" || input.notification_type == "REVOKE" { transaction.revocationDate = now }
            let renewal = StoreKitRenewalInfo(originalTransactionId: input.original_transaction_id, productId: input.product_id, autoRenewStatus: 1,
                                              gracePeriodExpiresDate: input.grace_days.map { now + Int64($0) * 86_400_000 }, environment: "Sandbox", signedDate: now)
            let uuid = UUID().uuidString.lowercased()
            let notification = AppStoreNotification(
                notificationType: input.notification_type, subtype: input.subtype, notificationUUID: uuid,
                data: .init(bundleId: input.bundle_id, environment: "Sandbox", signedTransactionInfo: try signer.sign(transaction),
                            signedRenewalInfo: try signer.sign(renewal), status: 1),
                version: "2.0", signedDate: now)
            return try Response.json(SignedNotification(signedPayload: try signer.sign(notification), notification_uuid: uuid))
        }
    }
}

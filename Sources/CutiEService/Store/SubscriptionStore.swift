import CutiEVocabulary
import Foundation
import PurseDatabase
import PurseServer
import SQLKit

/// An app's Cuti-E subscription as the App Store reports it (transactions, notifications, the
/// current subscription) and its monthly feedback counts. Each method runs in the session it is
/// given; a count is one conditional update, so a limit holds however many arrive at once.
struct SubscriptionStore: Sendable {
    /// The subscription row an app's tier is read from.
    struct Stored: Sendable {
        var tier: CutiETier
        var status: PlanStatus
        var expiresAt: Int64?
        var graceExpiresAt: Int64?
    }

    /// Stores a transaction once; a later copy only brings its revocation.
    func recordTransaction(_ transaction: StoreKitTransaction, app: String, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO cutie_appstore_transactions (transaction_id, original_transaction_id, app_id, product_id, purchase_date, expires_date,
                revocation_date, environment, received_at)
            VALUES (\(bind: transaction.transactionId), \(bind: transaction.originalTransactionId), \(bind: app), \(bind: transaction.productId),
                    \(bind: transaction.purchaseDate), \(bind: transaction.expiresDate), \(bind: transaction.revocationDate), \(bind: transaction.environment),
                    \(bind: now))
            ON CONFLICT (transaction_id) DO UPDATE SET revocation_date = excluded.revocation_date
            """).run()
    }

    /// Sets the app's subscription from a transaction.
    func setSubscription(app: String, from transaction: StoreKitTransaction, tier: CutiETier, status: PlanStatus, graceUntil: Int64?, now: Int64,
                         in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO cutie_subscriptions (app_id, original_transaction_id, product_id, tier, status, expires_at, grace_expires_at, environment, updated_at)
            VALUES (\(bind: app), \(bind: transaction.originalTransactionId), \(bind: transaction.productId), \(bind: tier.rawValue), \(bind: status.rawValue),
                    \(bind: transaction.expiresDate), \(bind: graceUntil), \(bind: transaction.environment), \(bind: now))
            ON CONFLICT (app_id) DO UPDATE SET original_transaction_id = excluded.original_transaction_id, product_id = excluded.product_id,
                tier = excluded.tier, status = excluded.status, expires_at = excluded.expires_at, grace_expires_at = excluded.grace_expires_at,
                environment = excluded.environment, updated_at = excluded.updated_at
            """).run()
    }

    func subscription(of app: String, in db: any DatabaseSession) async throws -> Stored? {
        guard let row = try await db.raw("SELECT tier, status, expires_at, grace_expires_at FROM cutie_subscriptions WHERE app_id = \(bind: app)").first() else {
            return nil
        }
        return Stored(tier: try row.decode(column: "tier", as: CutiETier.self, of: "cutie_subscriptions"),
                      status: try row.decode(column: "status", as: PlanStatus.self, of: "cutie_subscriptions"),
                      expiresAt: try row.decode(column: "expires_at", as: Int64?.self), graceExpiresAt: try row.decode(column: "grace_expires_at", as: Int64?.self))
    }

    /// Records a notification by its UUID; false for a redelivery.
    func recordNotification(uuid: String, type: String, subtype: String?, originalTransaction: String?, app: String?, now: Int64,
                            in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            INSERT INTO cutie_appstore_notifications (notification_uuid, notification_type, subtype, original_transaction_id, app_id, received_at)
            VALUES (\(bind: uuid), \(bind: type), \(bind: subtype), \(bind: originalTransaction), \(bind: app), \(bind: now))
            ON CONFLICT (notification_uuid) DO NOTHING RETURNING notification_uuid
            """).first() != nil
    }

    /// The app that holds an original transaction.
    func app(holding originalTransaction: String, in db: any DatabaseSession) async throws -> String? {
        try await db.raw("SELECT app_id FROM cutie_appstore_transactions WHERE original_transaction_id = \(bind: originalTransaction) LIMIT 1").first()?
            .decode(column: "app_id", as: String.self)
    }

    /// The oldest app with a bundle id.
    func app(bundleID: String, in db: any DatabaseSession) async throws -> String? {
        try await db.raw("SELECT id FROM cutie_apps WHERE bundle_id = \(bind: bundleID) ORDER BY created_at LIMIT 1").first()?.decode(column: "id", as: String.self)
    }

    /// Conversations an app received in a period.
    func received(app: String, period: String, in db: any DatabaseSession) async throws -> Int64 {
        try await db.raw("SELECT received FROM cutie_usage WHERE app_id = \(bind: app) AND period = \(bind: period)").first()
            .map { try $0.decode(column: "received", as: Int64.self) } ?? 0
    }

    /// Counts one conversation for the app in the period, below `limit` when there is one; false
    /// when the limit is reached.
    func count(app: String, period: String, below limit: Int64?, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("INSERT INTO cutie_usage (app_id, period, received) VALUES (\(bind: app), \(bind: period), 0) ON CONFLICT (app_id, period) DO NOTHING").run()
        if let limit {
            return try await db.raw("""
                UPDATE cutie_usage SET received = received + 1 WHERE app_id = \(bind: app) AND period = \(bind: period) AND received < \(bind: limit)
                RETURNING received
                """).first() != nil
        }
        return try await db.raw("UPDATE cutie_usage SET received = received + 1 WHERE app_id = \(bind: app) AND period = \(bind: period) RETURNING received").first() != nil
    }

    /// Counts one conversation for a client address's share of the app's period; false when the
    /// share is reached.
    func count(app: String, period: String, address key: String, below share: Int64, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            INSERT INTO cutie_address_usage (app_id, period, address_key, received) VALUES (\(bind: app), \(bind: period), \(bind: key), 0)
            ON CONFLICT (app_id, period, address_key) DO NOTHING
            """).run()
        return try await db.raw("""
            UPDATE cutie_address_usage SET received = received + 1
            WHERE app_id = \(bind: app) AND period = \(bind: period) AND address_key = \(bind: key) AND received < \(bind: share)
            RETURNING received
            """).first() != nil
    }

    /// Drops the address counts of periods before `period`.
    func pruneAddressCounts(before period: String, in db: any DatabaseSession) async throws {
        try await db.raw("DELETE FROM cutie_address_usage WHERE period < \(bind: period)").run()
    }
}

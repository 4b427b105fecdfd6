import Foundation
import HTTPTypes
import Observation
import PurseHTTP

/// A Cuti-E subscription product as the store lists it.
public struct CutiEProduct: Sendable, Equatable, Identifiable, Codable {
    public var id: String
    public var displayName: String
    public var displayPrice: String
    public var tier: CutiETier

    public init(id: String, displayName: String, displayPrice: String, tier: CutiETier) {
        self.id = id
        self.displayName = displayName
        self.displayPrice = displayPrice
        self.tier = tier
    }
}

/// What a store (StoreKit, or a test store) tells the manager.
public enum StorePurchaseResult: Sendable, Equatable {
    /// A verified transaction: its signed JWS (StoreKit's `jwsRepresentation`) for the backend.
    case purchased(signedTransaction: String, productID: String)
    case cancelled
    case pending
}

/// The store the manager sells through: StoreKit 2 on Apple platforms, a sandbox store elsewhere.
public protocol SubscriptionStore: Sendable {
    func products(for ids: [String]) async throws -> [CutiEProduct]
    func purchase(productID: String) async throws -> StorePurchaseResult
    /// The signed transactions of the subscriptions the user holds now.
    func currentEntitlements() async throws -> [(signedTransaction: String, productID: String)]
}

/// `CutiESubscriptionManager`: the app's Cuti-E tier. It lists the products, buys and restores
/// them through the store, and sends every verified transaction to the backend, which decides
/// the tier (`POST /v1/subscription/verify`, then `GET /v1/usage`).
@MainActor
@Observable
public final class CutiESubscriptionManager {
    public enum SubscriptionStatus: Equatable, Sendable {
        case none
        case active(expiresAt: Date?)
        case expired
        case gracePeriod(expiresAt: Date?)
    }

    public private(set) var currentTier: CutiETier = .free
    public private(set) var subscriptionStatus: SubscriptionStatus = .none
    public private(set) var products: [CutiEProduct] = []
    public private(set) var isLoading = false
    public private(set) var errorMessage: String?
    /// This month's feedback and the tier's limit (nil: unlimited).
    public private(set) var feedbackReceived: Int64 = 0
    public private(set) var feedbackLimit: Int64?

    @ObservationIgnored let cutie: CutiE
    @ObservationIgnored let store: any SubscriptionStore

    public init(cutie: CutiE = .shared, store: (any SubscriptionStore)? = nil) {
        self.cutie = cutie
        self.store = store ?? Self.defaultStore()
    }

    static func defaultStore() -> any SubscriptionStore {
        #if canImport(StoreKit)
        StoreKitSubscriptionStore()
        #else
        UnavailableSubscriptionStore()
        #endif
    }

    public func loadProducts() async {
        await run {
            self.products = try await self.store.products(for: CutiETier.productIDs).sorted { ($0.tier, $0.id) < ($1.tier, $1.id) }
        }
    }

    /// Buys a product; a verified purchase is sent to the backend and the tier updated.
    public func purchase(_ product: CutiEProduct) async {
        await run {
            switch try await self.store.purchase(productID: product.id) {
            case .purchased(let signed, let id):
                try await self.send(signed, productID: id)
            case .cancelled, .pending:
                break
            }
        }
    }

    /// Sends the store's current entitlements to the backend again (a new device, a reinstall).
    public func restorePurchases() async {
        await run {
            for entitlement in try await self.store.currentEntitlements() {
                try await self.send(entitlement.signedTransaction, productID: entitlement.productID)
            }
            try await self.refresh()
        }
    }

    /// Reads the tier and this month's usage from the backend.
    public func updateSubscriptionStatus() async {
        await run { try await self.refresh() }
    }

    func send(_ signedTransaction: String, productID: String) async throws {
        let answer = try await cutie.verifySubscription(signedTransaction: signedTransaction, productID: productID)
        apply(tier: answer.tier, status: answer.status, expiresAt: answer.expires_at, graceExpiresAt: answer.grace_period_expires_at)
        try await refresh()
    }

    func refresh() async throws {
        let usage = try await cutie.getUsage()
        feedbackReceived = usage.feedback_received
        feedbackLimit = usage.limit
        currentTier = usage.tier
        switch usage.status {
        case .none: subscriptionStatus = .none
        case .expired, .revoked: subscriptionStatus = .expired
        case .active, .grace_period: break  // the dates come with the verified subscription
        }
    }

    func apply(tier: CutiETier, status: PlanStatus, expiresAt: Int64?, graceExpiresAt: Int64?) {
        let date = { (millis: Int64?) in millis.map { Date(timeIntervalSince1970: Double($0) / 1000) } }
        switch status {
        case .active: subscriptionStatus = .active(expiresAt: date(expiresAt))
        case .grace_period: subscriptionStatus = .gracePeriod(expiresAt: date(graceExpiresAt))
        case .expired, .revoked: subscriptionStatus = .expired
        case .none: subscriptionStatus = .none
        }
        currentTier = subscriptionStatus == .expired ? .free : tier
    }

    func run(_ body: () async throws -> Void) async {
        isLoading = true
        errorMessage = nil
        defer { isLoading = false }
        do {
            try await body()
        } catch {
            errorMessage = CutiEError.from(error).description
        }
    }
}

/// Where no store exists (Linux without a sandbox): products cannot be bought.
struct UnavailableSubscriptionStore: SubscriptionStore {
    func products(for ids: [String]) async throws -> [CutiEProduct] { [] }
    func purchase(productID: String) async throws -> StorePurchaseResult { throw CutiEError.serverError(501, "No store on this platform") }
    func currentEntitlements() async throws -> [(signedTransaction: String, productID: String)] { [] }
}

/// The sandbox's StoreKit (`/sandbox/storekit` of `purse serve`): purchases signed by its
/// development signer, as Xcode's StoreKit testing signs them for an app under test.
public actor SandboxSubscriptionStore: SubscriptionStore {
    let baseURL: URL
    let transport: any HTTPTransport
    let bundleID: String
    private var owned: [String: (signedTransaction: String, productID: String)] = [:]

    public init(baseURL: URL, transport: any HTTPTransport, bundleID: String) {
        self.baseURL = baseURL
        self.transport = transport
        self.bundleID = bundleID
    }

    public func products(for ids: [String]) async throws -> [CutiEProduct] {
        let prices: [CutiETier: (Int, Int)] = [.starter: (999, 9_999), .pro: (2_999, 29_999), .business: (9_999, 99_999)]
        return ids.compactMap { id in
            guard let tier = CutiETier(productID: id), let price = prices[tier] else { return nil }
            let yearly = id.hasSuffix(".yearly")
            let cents = yearly ? price.1 : price.0
            return CutiEProduct(id: id, displayName: "Cuti-E \(tier.rawValue.capitalized) (\(yearly ? "yearly" : "monthly"))",
                                displayPrice: String(format: "$%d.%02d", cents / 100, cents % 100), tier: tier)
        }
    }

    struct Purchase: Encodable { var bundle_id: String; var product_id: String }
    struct Signed: Decodable { var signed_transaction: String; var original_transaction_id: String }

    public func purchase(productID: String) async throws -> StorePurchaseResult {
        let body = try JSONEncoder().encode(Purchase(bundle_id: bundleID, product_id: productID))
        let response = try await transport.send(TransportRequest(method: .post, url: baseURL.appendingPathComponent("sandbox/storekit/transactions"),
                                                                 headerFields: [.contentType: "application/json"], body: body))
        guard response.status == 200, let signed = try? JSONDecoder().decode(Signed.self, from: response.body) else {
            throw CutiEError.serverError(Int(response.status.code), "The sandbox store refused the purchase")
        }
        owned[productID] = (signed.signed_transaction, productID)
        return .purchased(signedTransaction: signed.signed_transaction, productID: productID)
    }

    public func currentEntitlements() async throws -> [(signedTransaction: String, productID: String)] { Array(owned.values) }
}

#if canImport(StoreKit)
import StoreKit

/// StoreKit 2: products, purchases and entitlements, each transaction verified by StoreKit
/// before its JWS goes to the backend (which verifies it again).
struct StoreKitSubscriptionStore: SubscriptionStore {
    func products(for ids: [String]) async throws -> [CutiEProduct] {
        try await Product.products(for: ids).compactMap { product in
            CutiETier(productID: product.id).map { CutiEProduct(id: product.id, displayName: product.displayName, displayPrice: product.displayPrice, tier: $0) }
        }
    }

    func purchase(productID: String) async throws -> StorePurchaseResult {
        guard let product = try await Product.products(for: [productID]).first else { throw CutiEError.serverError(404, "No such product") }
        switch try await product.purchase() {
        case .success(let verification):
            guard case .verified(let transaction) = verification else { throw CutiEError.decodingError("The App Store could not verify the purchase") }
            await transaction.finish()
            return .purchased(signedTransaction: verification.jwsRepresentation, productID: transaction.productID)
        case .userCancelled: return .cancelled
        case .pending: return .pending
        @unknown default: return .cancelled
        }
    }

    func currentEntitlements() async throws -> [(signedTransaction: String, productID: String)] {
        var entitlements: [(signedTransaction: String, productID: String)] = []
        for await result in Transaction.currentEntitlements {
            if case .verified(let transaction) = result, CutiETier(productID: transaction.productID) != nil {
                entitlements.append((result.jwsRepresentation, transaction.productID))
            }
        }
        return entitlements
    }
}
#endif

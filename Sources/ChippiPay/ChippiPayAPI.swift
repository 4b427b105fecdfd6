import Foundation
import HTTPTypes
@_exported import ChippiPayVocabulary
import Logging
import PurseFormats
import PurseKit
import PurseHTTP
import Starknet

/// A service in the catalogue (`GET /v1/skus`).
public struct ChippiSKU: Codable, Sendable, Hashable, Identifiable {
    public struct Reference: Codable, Sendable, Hashable {
        public var label: String
        public var pattern: String
        public var example: String
    }

    public var id: String
    public var name: String
    public var provider: String
    /// `phone_topup`, `bill` or `gift_card`.
    public var category: String
    public var currency: String
    /// The fixed price in MXN ("50"), or nil when the user chooses between `minAmount` and `maxAmount`.
    public var amount: String?
    public var minAmount: String?
    public var maxAmount: String?
    public var reference: Reference

    enum CodingKeys: String, CodingKey {
        case id, name, provider, category, currency, amount, minAmount = "min_amount", maxAmount = "max_amount", reference
    }

    /// Whether `text` is what this service delivers to (a 10-digit phone, a CFE number, an e-mail).
    public func accepts(reference text: String) -> Bool {
        text.range(of: reference.pattern, options: .regularExpression) != nil
    }
}

/// The STRK a purchase needs (`GET /v1/quote`).
public struct ChippiQuote: Codable, Sendable, Hashable {
    public var skuId: String
    public var amount: String
    public var currency: String
    public var rateMXNPerSTRK: String
    /// STRK as decimal text ("2.5").
    public var strkAmount: String
    public var strkAmountFri: String
    /// Where the vault withdrawal must go.
    public var paymentAddress: String
    public var vaultAddress: String
    public var gasFee: String
    /// Unix seconds.
    public var expiresAt: Int64

    enum CodingKeys: String, CodingKey {
        case skuId = "sku_id", amount, currency, rateMXNPerSTRK = "rate_mxn_per_strk", strkAmount = "strk_amount", strkAmountFri = "strk_amount_fri"
        case paymentAddress = "payment_address", vaultAddress = "vault_address", gasFee = "gas_fee", expiresAt = "expires_at"
    }

    /// The STRK needed, in fri.
    public var fri: UInt256? { UInt256(strkAmountFri) }
}

/// A purchase (`/v1/sku-transactions`).
public struct SKUTransaction: Codable, Sendable, Hashable, Identifiable {
    public typealias Status = PurchaseStatus

    public var transactionId: PurchaseID
    public var status: Status
    public var skuId: String
    public var reference: String
    public var amount: String
    public var currency: String
    public var strkAmount: String
    public var walletId: WalletID
    public var vaultTransactionHash: String
    public var failureReason: String?
    public var refundTransactionHash: String?
    /// Unix milliseconds.
    public var createdAt: Int64
    public var updatedAt: Int64

    public var id: PurchaseID { transactionId }

    enum CodingKeys: String, CodingKey {
        case transactionId = "transaction_id", status, skuId = "sku_id", reference, amount, currency, strkAmount = "strk_amount", walletId = "wallet_id"
        case vaultTransactionHash = "vault_transaction_hash", failureReason = "failure_reason", refundTransactionHash = "refund_transaction_hash"
        case createdAt = "created_at", updatedAt = "updated_at"
    }
}

/// The seed's error diagram: what the user is told, and whether trying again can help.
public struct ChippiPayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What the user is told, broadly. A struct with static members, so a kind added later
    /// breaks no caller's `switch` (which ends in `default`).
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No connection: "Check your internet connection" (retry).
        public static let offline = Kind(rawValue: "offline")
        /// 401: "API credentials invalid" (reconfigure the keys).
        public static let credentials = Kind(rawValue: "credentials")
        /// 404 from a path the provider does not serve: "Service temporarily unavailable" (logged
        /// with the details).
        public static let unavailable = Kind(rawValue: "unavailable")
        /// 404 for a thing asked for by id: no such purchase, product or wallet (the message says which).
        public static let notFound = Kind(rawValue: "notFound")
        /// 429 after the automatic retries.
        public static let rateLimited = Kind(rawValue: "rateLimited")
        /// 5xx: "ChippiPay service error" (retry).
        public static let service = Kind(rawValue: "service")
        /// "Request timed out" (retry).
        public static let timeout = Kind(rawValue: "timeout")
        /// The provider refused the request (400, 409, 422): its own words.
        public static let refused = Kind(rawValue: "refused")
        public static let invalidResponse = Kind(rawValue: "invalidResponse")
        public static let cancelled = Kind(rawValue: "cancelled")
    }

    public let kind: Kind
    /// What the user sees.
    public let message: String
    /// What the server or transport said (for the log).
    public let details: String

    /// Whether trying again as it is can help: the transport's ``PurseError/isTransient`` for the
    /// failure this error was made from.
    public let isTransient: Bool
    public var description: String { message }
    /// For a payment the provider refused and is refunding (`code: payment_refused`): the failed
    /// purchase it recorded, whose `refund_transaction_hash` tells when the STRK went back.
    public let refundingPurchase: PurchaseID?

    public init(kind: Kind, message: String, details: String = "", isTransient: Bool = false, refundingPurchase: PurchaseID? = nil) {
        self.kind = kind
        self.message = message
        self.details = details
        self.isTransient = isTransient
        self.refundingPurchase = refundingPurchase
    }

    init(_ error: PurseError) {
        let (kind, message): (Kind, String) = switch error.kind {
        case .offline: (.offline, "Check your internet connection")
        case .unauthorized: (.credentials, "API credentials invalid")
        case .notFound: (.unavailable, "Service temporarily unavailable")
        case .rateLimited: (.rateLimited, "Too many requests; try again in a moment")
        case .timeout: (.timeout, "Request timed out")
        case .cancelled: (.cancelled, "Cancelled")
        case .invalidResponse: (.invalidResponse, "ChippiPay service error")
        default: (error.status ?? 0) >= 500 ? (.service, "ChippiPay service error") : (.refused, error.message)
        }
        struct Refused: Decodable { var code: String?; var transaction_id: String? }
        let refused = error.decodeBody(as: Refused.self)
        let refunding = refused?.code == "payment_refused" ? refused?.transaction_id.map(PurchaseID.init(rawValue:)) : nil
        self.init(kind: kind, message: message, details: error.message, isTransient: error.isTransient, refundingPurchase: refunding)
    }
}

/// How an app proves itself to the ChippiPay provider.
///
/// ``user(token:)`` is the form for an app in users' hands: it holds the merchant's publishable
/// key only, and each call carries the signed-in user's short-lived token, with which the
/// provider shows and does only what belongs to that user's wallet. ``merchantKeys`` is the
/// seed's form, both merchant keys in the app's `SecureStore`: whoever unpacks the app holds the
/// merchant's secret key, and with it every user's purchases and wallets. It is for a
/// merchant's own backend and for tests, never for a shipped app.
public struct ChippiCredentials: Sendable {
    enum Form: Sendable {
        case user(@Sendable () async throws -> String?)
        case merchantKeys
    }

    let form: Form

    /// User mode: the publishable key from the `SecureStore` (``ChippiPayAPI/configure(apiKey:)``)
    /// and `token()` on every call: a token the merchant's backend minted for the user
    /// (`POST /v1/user-tokens`), a JWT of the merchant's own sign-in provider, or a session of
    /// the Purse server when the merchant signs its users in there. Nil: nobody is signed in.
    public static func user(token: @escaping @Sendable () async throws -> String?) -> ChippiCredentials {
        ChippiCredentials(form: .user(token))
    }

    /// The seed's form: the merchant's key pair from the `SecureStore`. Unsafe in a shipped app.
    public static let merchantKeys = ChippiCredentials(form: .merchantKeys)

    /// Whether calls carry a user's token rather than the merchant's secret key.
    public var isUserMode: Bool {
        if case .user = form { return true }
        return false
    }
}

/// The ChippiPay provider's REST API (the seed's `ChippiPayAPI`): the publishable key and the
/// user's token (or, in the seed's form, the merchant's key pair) on every request, JSON both
/// ways, 429 retried with backoff honouring `Retry-After`, every POST that moves money with an
/// `Idempotency-Key`.
public struct ChippiPayAPI: Sendable {
    public enum Environment: Sendable, Hashable {
        /// The sandbox provider inside `purse serve` on this machine.
        case sandbox
        case production
        case custom(URL)

        public var baseURL: URL {
            switch self {
            case .sandbox: URL(string: "http://127.0.0.1:8080")!
            case .production: URL(string: "https://api.chipipay.com")!
            case .custom(let url): url
            }
        }
    }

    /// SecureStore items holding the merchant's keys.
    public static let publicKeyItem = "chippipay.api_key"
    public static let secretKeyItem = "chippipay.secret_key"

    public let environment: Environment
    public let credentials: ChippiCredentials
    let client: APIClient
    let store: any SecureStore
    /// Where failed calls are logged with the provider's details (never a key); the user sees
    /// ``ChippiPayError/message``.
    let logger: Logger

    /// - Parameter deadline: the most a call may take, its retries included (20 seconds: a hung
    ///   provider surfaces as a timeout in seconds, not minutes); each try waits at most 10.
    ///   `credentials`: ``ChippiCredentials/user(token:)`` in an app; the seed's
    ///   ``ChippiCredentials/merchantKeys`` only where the merchant's secret may be.
    public init(environment: Environment, credentials: ChippiCredentials, store: any SecureStore, transport: any HTTPTransport,
                retry: RetryPolicy = RetryPolicy(maxAttempts: 4), deadline: Duration = .seconds(20), sleeper: Sleeper = .live,
                logger: Logger = Logger(label: "chippipay")) {
        self.environment = environment
        self.credentials = credentials
        self.store = store
        self.logger = logger
        client = APIClient(session: ClientSession(baseURL: environment.baseURL), transport: transport, retry: retry,
                           timeout: min(.seconds(10), deadline), deadline: deadline, sleeper: sleeper,
                           defaultHeaderFields: [.userAgent: "ChippiPay-Swift/1.0"])
    }

    /// Saves the merchant's publishable key in the SecureStore, and forgets any secret key an
    /// earlier configuration kept: all user mode needs.
    public func configure(apiKey: String) async throws {
        guard apiKey.hasPrefix("pk_") else {
            throw ChippiPayError(kind: .credentials, message: "API credentials invalid", details: "the publishable key is pk_…")
        }
        try await store.setString(apiKey, for: Self.publicKeyItem)
        try await store.remove(Self.secretKeyItem)
    }

    /// Saves the merchant's key pair in the SecureStore (the seed's form; see
    /// ``ChippiCredentials/merchantKeys``).
    public func configure(apiKey: String, secretKey: String) async throws {
        guard apiKey.hasPrefix("pk_"), secretKey.hasPrefix("sk_") else {
            throw ChippiPayError(kind: .credentials, message: "API credentials invalid", details: "keys are pk_… and sk_…")
        }
        try await store.setString(apiKey, for: Self.publicKeyItem)
        try await store.setString(secretKey, for: Self.secretKeyItem)
    }

    func headerFields() async throws -> HTTPFields {
        guard let apiKey = try await store.string(for: Self.publicKeyItem) else {
            throw ChippiPayError(kind: .credentials, message: "API credentials invalid", details: "no ChippiPay publishable key is configured")
        }
        switch credentials.form {
        case .user(let token):
            guard let token = try await token(), !token.isEmpty else {
                throw ChippiPayError(kind: .credentials, message: "Sign in first", details: "no user token: nobody is signed in")
            }
            return [.apiKey: apiKey, .authorization: "Bearer \(token)"]
        case .merchantKeys:
            guard let secret = try await store.string(for: Self.secretKeyItem) else {
                throw ChippiPayError(kind: .credentials, message: "API credentials invalid", details: "no ChippiPay secret key is configured")
            }
            return [.apiKey: apiKey, .authorization: "Bearer \(secret)"]
        }
    }

    /// What a 404 means for a call.
    enum Missing {
        /// The path is the service's own: a 404 means the service is not there.
        case service
        /// The thing the call names by id is not there: this message.
        case thing(String)
        /// One of the things the body names (a product, a wallet): the provider's words say which.
        case named
    }

    func send<Response: Decodable & Sendable>(_ method: HTTPRequest.Method, _ path: String, query: [URLQueryItem] = [], body: (any Encodable & Sendable)? = nil,
                                              idempotencyKey: String? = nil, notFound: Missing = .service) async throws -> Response {
        let headerFields = try await headerFields()
        do {
            return try await client.send(method, path, query: query, body: body, headerFields: headerFields, idempotencyKey: idempotencyKey, authenticated: false)
        } catch let error as PurseError {
            let failure: ChippiPayError = switch (error.kind, notFound) {
            case (.notFound, .thing(let message)): ChippiPayError(kind: .notFound, message: message, details: error.message)
            case (.notFound, .named): ChippiPayError(kind: .notFound, message: error.message, details: error.message)
            default: ChippiPayError(error)
            }
            if failure.kind != .cancelled {
                logger.error("ChippiPay call failed", metadata: ["method": "\(method)", "path": "\(path)", "status": "\(error.status.map(String.init) ?? "-")",
                                                                 "kind": "\(failure.kind)", "details": "\(failure.details)"])
            }
            throw failure
        }
    }

    // MARK: The seed's methods

    struct SKUList: Decodable, Sendable { var skus: [ChippiSKU] }

    public func fetchSKUs(category: String? = nil) async throws -> [ChippiSKU] {
        let list: SKUList = try await send(.get, "/v1/skus", query: category.map { [URLQueryItem(name: "category", value: $0)] } ?? [])
        return list.skus
    }

    public func quote(skuId: String, amount: String? = nil) async throws -> ChippiQuote {
        var query = [URLQueryItem(name: "sku_id", value: skuId)]
        if let amount { query.append(URLQueryItem(name: "amount", value: amount)) }
        return try await send(.get, "/v1/quote", query: query, notFound: .thing("No product \(skuId)"))
    }

    struct CreateBody: Encodable, Sendable {
        var sku_id: String
        var reference: String
        var amount: Double
        var wallet_id: WalletID
        var vault_transaction_hash: String
        var metadata: [String: String]
    }

    /// `POST /v1/sku-transactions`; `idempotencyKey` makes a retry (after a lost answer, or a
    /// restart) return the same purchase.
    public func createSKUTransaction(skuId: String, reference: String, amount: Double, walletId: WalletID, vaultTransactionHash: String,
                                     metadata: [String: String] = [:], idempotencyKey: String) async throws -> SKUTransaction {
        try await send(.post, "/v1/sku-transactions", body: CreateBody(sku_id: skuId, reference: reference, amount: amount, wallet_id: walletId,
                                                                         vault_transaction_hash: vaultTransactionHash, metadata: metadata),
                       idempotencyKey: idempotencyKey, notFound: .named)
    }

    public func getSKUTransaction(_ id: PurchaseID) async throws -> SKUTransaction {
        guard id.rawValue.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
            throw ChippiPayError(kind: .refused, message: "Not a transaction id: \(id)")
        }
        return try await send(.get, "/v1/sku-transactions/\(id)", notFound: .thing("No purchase \(id)"))
    }

    struct TransactionPage: Decodable, Sendable {
        var data: [SKUTransaction]
        var has_more: Bool
    }

    /// One page of purchases, newest first; `startingAfter` is the last id of the previous page.
    public func listSKUTransactions(walletId: WalletID? = nil, limit: Int = 20, startingAfter: PurchaseID? = nil) async throws -> (transactions: [SKUTransaction], hasMore: Bool) {
        var query = [URLQueryItem(name: "limit", value: String(limit))]
        if let walletId { query.append(URLQueryItem(name: "wallet_id", value: walletId.rawValue)) }
        if let startingAfter { query.append(URLQueryItem(name: "starting_after", value: startingAfter.rawValue)) }
        let page: TransactionPage = try await send(.get, "/v1/sku-transactions", query: query)
        return (page.data, page.has_more)
    }

    public struct PreparedWallet: Decodable, Sendable, Hashable {
        public var walletId: WalletID
        public var externalUserId: String
        public var accountClassHash: String

        enum CodingKeys: String, CodingKey { case walletId = "wallet_id", externalUserId = "external_user_id", accountClassHash = "account_class_hash" }
    }

    struct PrepareBody: Encodable, Sendable {
        var auth_token: String?
        var external_user_id: String
        var metadata: [String: String]
    }

    /// `authToken` may be nil in user mode, where the call's own token names the user.
    public func prepareWalletCreation(authToken: String?, externalUserId: String, metadata: [String: String] = ["source": "ios_app"]) async throws -> PreparedWallet {
        try await send(.post, "/v1/chipi-wallets/prepare-creation", body: PrepareBody(auth_token: authToken, external_user_id: externalUserId, metadata: metadata))
    }

    struct SaveBody: Encodable, Sendable {
        var wallet_id: WalletID
        var public_key: String
        var encrypted_private_key: String
        var auth_token: String?
    }

    /// A saved wallet (`GET /v1/chipi-wallets/{id}`).
    public struct Wallet: Decodable, Sendable, Hashable {
        public var walletId: WalletID
        public var externalUserId: String
        public var publicKey: String?
        public var address: String?
        /// The private key sealed with the user's password (``WalletKeyBackup``).
        public var encryptedPrivateKey: String?
        public var status: WalletStatus
        public var deployTransactionHash: String?
        /// Unix milliseconds.
        public var createdAt: Int64?
        /// What the app sent when it prepared the wallet (`source`, `email`).
        public var metadata: [String: JSONValue]?

        enum CodingKeys: String, CodingKey {
            case walletId = "wallet_id", externalUserId = "external_user_id", publicKey = "public_key", address
            case encryptedPrivateKey = "encrypted_private_key", status, deployTransactionHash = "deploy_transaction_hash", createdAt = "created_at", metadata
        }
    }

    public func getWallet(_ id: WalletID) async throws -> Wallet {
        guard id.rawValue.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { throw ChippiPayError(kind: .refused, message: "Not a wallet id: \(id)") }
        return try await send(.get, "/v1/chipi-wallets/\(id)", notFound: .thing("No wallet \(id)"))
    }

    struct PayerBody: Encodable, Sendable {
        var address: String
        var signature: [String]
    }

    struct LinkedPayer: Decodable, Sendable {
        var wallet_id: String
        var address: String
    }

    /// Links `address` to the wallet as an account its purchases may be paid from
    /// (`POST /v1/chipi-wallets/{id}/payers`), with the account's signature over ``PayerLink``.
    /// Linking an account twice is not an error.
    public func linkPayer(walletId: WalletID, address: Felt, signature: [Felt]) async throws {
        guard walletId.rawValue.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { throw ChippiPayError(kind: .refused, message: "Not a wallet id: \(walletId)") }
        let _: LinkedPayer = try await send(.post, "/v1/chipi-wallets/\(walletId)/payers",
                                            body: PayerBody(address: address.description, signature: signature.map(\.description)), notFound: .named)
    }

    struct Success: Decodable, Sendable { var success: Bool }

    public func saveWallet(walletId: WalletID, publicKey: String, encryptedPrivateKey: String, authToken: String?) async throws {
        let answer: Success = try await send(.post, "/v1/chipi-wallets", body: SaveBody(wallet_id: walletId, public_key: publicKey,
                                                                                          encrypted_private_key: encryptedPrivateKey, auth_token: authToken), notFound: .named)
        guard answer.success else { throw ChippiPayError(kind: .invalidResponse, message: "ChippiPay service error", details: "saving the wallet did not succeed") }
    }
}

/// Someone who submits a user's calls and pays their gas: SNIP-9 outside executions.
public protocol Paymaster: Sendable {
    /// The outside execution the paymaster will submit for `calls` from `account`.
    func buildOutsideExecution(account: Felt, calls: [Call]) async throws -> OutsideExecution
    /// Submits it with the account's signature; returns the relayed transaction's hash.
    func executeOutside(account: Felt, execution: OutsideExecution, signature: [Felt]) async throws -> Felt
}

extension ChippiPayAPI: Paymaster {
    struct BuildBody: Encodable, Sendable {
        var account: Felt
        var calls: [Call]
    }

    struct Built: Decodable, Sendable { var outside_execution: OutsideExecution }

    struct ExecuteBody: Encodable, Sendable {
        var account: Felt
        var outside_execution: OutsideExecution
        var signature: [Felt]
    }

    struct Executed: Decodable, Sendable { var transaction_hash: Felt }

    public func buildOutsideExecution(account: Felt, calls: [Call]) async throws -> OutsideExecution {
        let built: Built = try await send(.post, "/v1/paymaster/build", body: BuildBody(account: account, calls: calls))
        return built.outside_execution
    }

    public func executeOutside(account: Felt, execution: OutsideExecution, signature: [Felt]) async throws -> Felt {
        // The provider relays an (account, nonce) once and answers every repeat with the same hash,
        // so the request is safe to retry: the key lets the client retry it on 429, 5xx and timeouts.
        let executed: Executed = try await send(.post, "/v1/paymaster/execute",
                                                body: ExecuteBody(account: account, outside_execution: execution, signature: signature),
                                                idempotencyKey: "relay-\(account)-\(execution.nonce)")
        return executed.transaction_hash
    }
}

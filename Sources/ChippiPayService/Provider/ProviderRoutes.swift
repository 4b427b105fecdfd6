import ChippiPayVocabulary
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import Logging
import NIOCore
import NIOFoundationCompat
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit
import Starknet

/// The provider's refusals, each `{"error": …}` with the status the seed's error diagram expects.
enum ProviderError {
    static let unauthorized = APIError(.unauthorized, "Invalid API credentials", headers: [.wwwAuthenticate: #"Bearer realm="chipipay""#])
    static func rateLimited(_ seconds: Int) -> APIError { .tooManyRequests("Too many requests; retry after \(seconds) s", retryAfter: seconds) }
    static func invalid(_ message: String) -> APIError { APIError(.badRequest, message) }
    static func unverified(_ message: String) -> APIError { APIError(.unprocessableContent, message) }
}

/// The provider API under `/v1`: the catalogue and quotes, and purchases paid by a vault
/// withdrawal verified on Starknet.
struct ProviderRoutes: Sendable {
    let environment: ServerEnvironment
    let configuration: ChippiProviderConfiguration
    let payments: VaultPayments
    let limiter: SharedRateLimiter
    let keyCache: MerchantKeyCache
    let issuers: IssuerKeys

    static let fulfilmentJob = "chippi.fulfil"
    static let webhookJob = "chippi.webhook"

    func mount(on router: Router<PurseRequestContext>) {
        let v1 = router.group("v1")
        v1.get("skus") { request, _ in
            _ = try await caller(request, area: .catalogue)
            try request.requireOnlyQuery(["category"])
            let category = request.uri.queryParameters.get("category") ?? ""
            guard let answer = Self.catalogue[category], !(category.isEmpty && request.uri.queryParameters.get("category") != nil) else {
                throw ProviderError.invalid("category must be one of \(SKU.Category.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return Response.jsonData(answer)
        }
        v1.get("quote") { request, _ in
            _ = try await caller(request, area: .catalogue)
            try request.requireOnlyQuery(["sku_id", "amount"])
            let sku = try Self.sku(request.uri.queryParameters.get("sku_id"))
            let centavos = try Self.amount(text: request.uri.queryParameters.get("amount"), for: sku)
            let now = environment.now()
            return try Response.json(QuoteBody(
                sku_id: sku.id, amount: Money.pesos(centavos), currency: SKU.currency, rate_mxn_per_strk: configuration.rate.mxnPerSTRK,
                strk_amount: STRKAmount.format(configuration.rate.fri(forCentavos: centavos)),
                strk_amount_fri: configuration.rate.fri(forCentavos: centavos).description,
                payment_address: payments.paymentAddress.description, vault_address: configuration.vaultAddress.description,
                gas_fee: "0", expires_at: now.addingTimeInterval(TimeInterval(configuration.quoteSeconds)).epochMillis / 1000))
        }
        v1.post("sku-transactions") { request, context in
            var request = request
            let caller = try await caller(request, area: .purchases)
            let body = try await request.collectJSONBody(context: context)
            return try await purchase(request, body: body, caller: caller)
        }
        v1.get("sku-transactions/{id}") { request, context in
            let caller = try await caller(request, area: .purchases)
            let id = PurchaseID(try context.parameters.require("id"))
            let purchase = try await environment.database.read { db -> Purchase? in
                guard let purchase = try await Purchase.load(id, merchant: caller.merchant.id, in: db) else { return nil }
                guard caller.user == nil else { return try await userWallet(of: caller, in: db) == purchase.walletID ? purchase : nil }
                return purchase
            }
            // Another user's purchase is as absent as one that never was.
            guard let purchase else { throw APIError.notFound("Transaction not found") }
            return try Response.json(purchase.body)
        }
        v1.get("sku-transactions") { request, _ in
            let caller = try await caller(request, area: .purchases)
            try request.requireOnlyQuery(["limit", "wallet_id", "starting_after"])
            let query = request.uri.queryParameters
            let limit = try Self.limit(query.get("limit"))
            let asked = query.get("wallet_id").map(WalletID.init(rawValue:))
            let cursor = query.get("starting_after").map(PurchaseID.init(rawValue:))
            let page = try await environment.database.read { db -> [Purchase] in
                // A user lists its own wallet's purchases, whether or not it names the wallet.
                var walletID = asked
                if caller.user != nil {
                    guard let own = try await userWallet(of: caller, in: db) else { return [] }
                    guard asked == nil || asked == own else { throw APIError.notFound("Wallet \(asked?.rawValue.prefix(64) ?? "") not found") }
                    walletID = own
                }
                var after: Purchase?
                if let cursor {
                    guard let found = try await Purchase.load(cursor, merchant: caller.merchant.id, in: db),
                          caller.user == nil || found.walletID == walletID else {
                        throw ProviderError.invalid("starting_after must be a transaction_id from an earlier page")
                    }
                    after = found
                }
                return try await Purchase.list(merchant: caller.merchant.id, wallet: walletID, after: after, limit: limit + 1, in: db)
            }
            return try Response.json(PurchaseList(data: page.prefix(limit).map(\.body), has_more: page.count > limit))
        }
        // A short-lived token for one app user, minted by the merchant's backend with its secret
        // key: the app sends it with the publishable key and sees only that user's wallet.
        v1.post("user-tokens") { request, context in
            var request = request
            let merchant = try await merchant(request, area: .wallets)
            let input = try JSONBody.decode(UserTokenRequest.self, from: try await request.collectJSONBody(context: context))
            guard (1...128).contains(input.external_user_id.utf8.count) else { throw ProviderError.invalid("external_user_id must be 1 to 128 bytes") }
            let lifetime = input.expires_in ?? Self.userTokenLifetime.standard
            guard (60...Self.userTokenLifetime.maximum).contains(lifetime) else {
                throw ProviderError.invalid("expires_in must be 60 to \(Self.userTokenLifetime.maximum) seconds")
            }
            let (token, claims) = try await environment.tokens.issue(for: UserID(input.external_user_id), purpose: Self.userTokenPurpose(merchant: merchant.id),
                                                                     lifetime: TimeInterval(lifetime))
            return try Response.json(UserTokenBody(token: token, external_user_id: input.external_user_id,
                                                   expires_at: Int64(claims.exp.value.timeIntervalSince1970)), status: .created)
        }
        WalletRoutes(routes: self).mount(on: v1)
        PaymasterRoutes(routes: self).mount(on: v1)
        v1.get("webhook-deliveries") { request, _ in
            let merchant = try await merchant(request, area: .purchases)
            try request.requireOnlyQuery(["limit"])
            let limit = try Self.limit(request.uri.queryParameters.get("limit"))
            let deliveries = try await environment.database.read { db in try await WebhookDelivery.list(merchant: merchant.id, limit: limit, in: db) }
            return try Response.json(DeliveryList(data: deliveries))
        }
    }

    /// The request's caller, after the rate limit: an active merchant whose keys may use `area`
    /// (401 with the reason otherwise, as the seed's provider answers) and, in user mode, the app
    /// user its token names. The merchant's secret key is limited per key; a user per user, so
    /// one user's burst never slows the merchant's other users.
    func caller(_ request: Request, area: Merchant.Area) async throws -> Caller {
        let credential = try MerchantKeys.credential(of: request)
        let secretHash: String? = switch credential {
        case .secret(_, let secret): SecretDigest.hex(secret)
        case .user: nil
        }
        let cacheKey = credential.publicKey + ":" + (secretHash ?? "user")
        let merchant: Merchant
        if let known = keyCache.merchant(for: cacheKey) {
            merchant = known
        } else {
            merchant = try await environment.database.read { db in
                try await MerchantKeys.authenticate(publicKey: credential.publicKey, secretHash: secretHash, sealer: environment.sealer, in: db)
            }
            keyCache.remember(merchant, for: cacheKey)
        }
        guard merchant.active else { throw APIError(.unauthorized, "Merchant account is not active") }
        guard merchant.permissions.contains(area) else { throw APIError(.unauthorized, "This merchant's keys may not use \(area.rawValue)") }
        var user: String?
        if case .user(_, let token) = credential {
            do {
                user = try await appUser(of: token, merchant: merchant)
            } catch {
                throw APIError(.unauthorized, "The bearer token is not a valid token of this merchant's users",
                               headers: [.wwwAuthenticate: #"Bearer realm="chipipay", error="invalid_token""#])
            }
        }
        let bucket = user.map { merchant.publicKey + "#user:" + $0 } ?? merchant.publicKey
        if let wait = try await limiter.take(bucket, now: environment.now()) { throw ProviderError.rateLimited(wait) }
        return Caller(merchant: merchant, user: user)
    }

    /// The merchant of a request that needs its secret key: 403 for a user token, which never
    /// reaches what spans the merchant's users.
    func merchant(_ request: Request, area: Merchant.Area) async throws -> Merchant {
        let caller = try await caller(request, area: area)
        guard caller.user == nil else { throw Caller.merchantOnly }
        return caller.merchant
    }

    /// The wallet of a user-mode caller's user (nil: none yet, or a secret-key caller).
    func userWallet(of caller: Caller, in db: any DatabaseSession) async throws -> WalletID? {
        guard let user = caller.user else { return nil }
        return try await WalletStore().wallet(ofUser: user, merchant: caller.merchant.id, in: db)?.id
    }

    /// The app user `token` names, for `merchant`: a user token this provider minted for it
    /// (`POST /v1/user-tokens`), a JWT of the merchant's own issuer (HS256 with its secret, or a
    /// key from its JWKS) when it configured one, or else a session of this server's `/auth`
    /// whose user still exists. Signed, unexpired; the subject is the app's `external_user_id`.
    func appUser(of token: String, merchant: Merchant) async throws -> String {
        guard JWTHeader.isAcceptable(token) else { throw TokenError.invalid }
        if let minted = try? await environment.tokens.verify(token, purpose: Self.userTokenPurpose(merchant: merchant.id)) {
            return minted.sub.value
        }
        if let secret = merchant.authHS256Secret {
            let keys = JWTKeyCollection()
            await keys.add(hmac: HMACKey(from: Array(secret.utf8)), digestAlgorithm: .sha256)
            return try await keys.verify(token, as: AppUserClaims.self).sub.value
        }
        if let url = merchant.authJWKSURL.flatMap(URL.init(string:)) {
            return try await issuers.verify(token, jwks: url).sub.value
        }
        let claims = try await environment.tokens.verify(token, purpose: TokenService.sessionPurpose)
        // A session outlives nothing: the user must still exist here.
        guard try await environment.accounts.find(id: claims.userID) != nil else { throw TokenError.invalid }
        return claims.sub.value
    }

    /// The purpose of the user tokens minted for `merchant`: one merchant's tokens are nothing
    /// to another's keys, and no token of this server's other kinds passes for one.
    static func userTokenPurpose(merchant: String) -> String { "chippi_user:" + merchant }

    /// The longest and the default life of a minted user token.
    static let userTokenLifetime: (maximum: Int, standard: Int) = (3600, 900)

    struct UserTokenRequest: Decodable {
        var external_user_id: String
        var expires_in: Int?
    }

    struct UserTokenBody: Encodable {
        var token: String
        var external_user_id: String
        /// Unix seconds.
        var expires_at: Int64
    }

    /// The catalogue's answers, encoded once: all of it, and each category.
    static let catalogue: [String: Data] = {
        var answers = ["": try! JSONEncoder.chippi.encode(SKUList(skus: SKUCatalogue.all.map(SKUBody.init)))]
        for category in SKU.Category.allCases {
            answers[category.rawValue] = try! JSONEncoder.chippi.encode(SKUList(skus: SKUCatalogue.all.filter { $0.category == category }.map(SKUBody.init)))
        }
        return answers
    }()

    static func sku(_ id: String?) throws -> SKU {
        guard let id, !id.isEmpty else { throw ProviderError.invalid("sku_id is required") }
        guard let sku = SKUCatalogue.byID[id] else { throw APIError.notFound("SKU \(id.prefix(64)) not found") }
        return sku
    }

    /// The amount in centavos: the SKU's fixed price when none is given, else within its limits.
    static func amount(text: String?, for sku: SKU) throws -> Int64 {
        guard let text else {
            guard let fixed = sku.fixed else { throw ProviderError.invalid("amount is required for \(sku.id) (\(Money.pesos(sku.minimum)) to \(Money.pesos(sku.maximum)) MXN)") }
            return fixed
        }
        guard let centavos = Money.centavos(text) else { throw ProviderError.invalid("amount must be MXN with at most two decimals, such as 50 or 123.45") }
        return try check(centavos, for: sku)
    }

    static func check(_ centavos: Int64, for sku: SKU) throws -> Int64 {
        guard sku.accepts(centavos: centavos) else {
            if let fixed = sku.fixed { throw ProviderError.invalid("amount for \(sku.id) must be \(Money.pesos(fixed)) MXN") }
            throw ProviderError.invalid("amount for \(sku.id) must be \(Money.pesos(sku.minimum)) to \(Money.pesos(sku.maximum)) MXN")
        }
        return centavos
    }

    static func limit(_ text: String?) throws -> Int {
        guard let text else { return 20 }
        guard let limit = Int(text), (1...100).contains(limit) else { throw ProviderError.invalid("limit must be 1 to 100") }
        return limit
    }

    // MARK: Purchases

    struct PurchaseRequest: Decodable {
        var sku_id: String
        var reference: String
        var amount: Double
        var wallet_id: WalletID
        var vault_transaction_hash: String
        var metadata: JSONValue?
    }

    /// `POST /v1/sku-transactions`: checks the request, replays a finished retry, verifies the
    /// vault payment on chain (outside any transaction: it reads the node), then records the
    /// purchase and its fulfilment job once per Idempotency-Key and once per vault transaction.
    func purchase(_ request: Request, body: ByteBuffer, caller: Caller) async throws -> Response {
        let merchant = caller.merchant
        let call = try environment.idempotentCall(request, body: body, user: caller.idempotencyOwner)
        let input = try JSONBody.decode(PurchaseRequest.self, from: body)
        let sku = try Self.sku(input.sku_id)
        guard sku.accepts(reference: input.reference) else {
            throw ProviderError.invalid("reference must be a \(sku.reference.label) (pattern \(sku.reference.pattern))")
        }
        guard let centavos = Money.centavos(input.amount) else { throw ProviderError.invalid("amount must be MXN with at most two decimals, such as 50.0") }
        _ = try Self.check(centavos, for: sku)
        guard let vaultHash = Felt(input.vault_transaction_hash), !vaultHash.isZero else {
            throw ProviderError.invalid("vault_transaction_hash must be a Starknet transaction hash (0x-hex)")
        }
        let metadata = input.metadata ?? .object([:])
        guard metadata.objectValue != nil else { throw ProviderError.invalid("metadata must be an object") }
        let metadataText = String(decoding: try JSONEncoder().encode(metadata), as: UTF8.self)
        guard metadataText.utf8.count <= 4096 else { throw ProviderError.invalid("metadata must be at most 4 KB of JSON") }

        if case .replay(let answer) = try await environment.begin(call) { return answer }
        let store = WalletStore()
        let wallet = try await environment.database.read { db in try await store.wallet(input.wallet_id, merchant: merchant.id, in: db) }
        // A user pays from its own wallet only; another's is as absent as one that never was.
        guard let wallet, caller.reaches(wallet.externalUserID) else { throw APIError.notFound("Wallet \(input.wallet_id.rawValue.prefix(64)) not found") }
        // A purchase is paid by its own wallet: its account, or an account linked to it with that
        // account's signature. A payment seen on chain cannot be claimed by another merchant or
        // another of this merchant's users, and a wallet only prepared pays for nothing.
        guard wallet.status == .active, let walletAddress = wallet.address.flatMap({ Felt($0) }) else {
            throw APIError.conflict("Wallet \(input.wallet_id.rawValue.prefix(64)) is not active yet: finish creating it before paying from it")
        }
        let required = configuration.rate.fri(forCentavos: centavos)
        let payment = try await payments.verify(vaultHash)
        // An account other than the wallet's own pays only once it is linked to the wallet.
        var linked = payment.payer == walletAddress
        if !linked {
            linked = try await environment.database.read { db in try await store.isLinkedPayer(payment.payer.description, of: input.wallet_id, in: db) }
        }
        // A payment claimed by a wallet that did not make it is refused and left alone: recording
        // anything would let whoever sees a payment on chain spoil its owner's purchase.
        guard linked else {
            throw ProviderError.unverified("The vault transaction was paid by \(payment.payer), not by wallet \(input.wallet_id.rawValue.prefix(64)) "
                + "(its account \(walletAddress), or one linked with POST /v1/chipi-wallets/{id}/payers)")
        }
        // The wallet's own payment that is short (too little, or a quote the rate has moved past)
        // is refused — and refunded: it is recorded as a purchase that fails with its whole payment
        // sent back, once (a vault transaction pays for one record only), by the fulfilment job.
        let refusal = payment.amount < required
            ? "The vault transaction paid \(STRKAmount.format(payment.amount)) STRK; the purchase needs \(STRKAmount.format(required)) STRK"
            : nil

        let now = environment.now()
        defer { if configuration.fulfilmentSeconds == 0 { environment.jobs.wakeup.signal() } }
        return try await environment.commit(call) { db in
            let id = PurchaseID(RandomID.make("chipi_tx"))
            var purchase = Purchase(id: id, merchantID: merchant.id, walletID: input.wallet_id, skuID: sku.id, reference: input.reference,
                                    centavos: centavos, strk: required, paid: payment.amount, payer: payment.payer, vaultHash: vaultHash,
                                    status: .pending, failureReason: nil, refundHash: nil, metadata: metadataText,
                                    created: now.epochMillis, updated: now.epochMillis)
            purchase.refusal = refusal
            guard try await purchase.insert(in: db) else {
                throw APIError.conflict("vault_transaction_hash has already paid for another purchase")
            }
            // A payment whose return to its payer has begun (unclaimed past the window) buys nothing.
            guard try await IncomingPaymentStore().claim(vaultHash, payer: payment.payer, amount: payment.amount, now: now.epochMillis, in: db) else {
                throw APIError(.unprocessableContent, "The vault transaction was not claimed within \(Self.describe(seconds: configuration.unclaimedReturnSeconds)) "
                               + "and goes back to \(payment.payer); pay again to buy", code: "payment_returned")
            }
            // Fulfilment refunds what it cannot deliver: it never gives up with the money held
            // (about a month of attempts, every 10 minutes at most; each failure is logged with its
            // reason and counted in purse_jobs_failed_total, and the purchase stays pending).
            try await environment.jobs.enqueue(kind: Self.fulfilmentJob, payload: FulfilmentJob(transactionID: id),
                                               runAt: refusal == nil ? now.addingTimeInterval(configuration.fulfilmentSeconds) : now,
                                               maxAttempts: Self.fulfilmentAttempts, in: db)
            if let refusal {
                // 422 as before, naming the record whose refund the client can follow.
                let body = RefusedPayment(error: refusal, code: "payment_refused", transaction_id: id, refund: "pending",
                                          refund_amount: STRKAmount.format(payment.amount))
                return IdempotentEffect((), status: .unprocessableContent, body: try JSONEncoder.chippi.encode(body))
            }
            return IdempotentEffect((), status: .created, body: try JSONEncoder.chippi.encode(purchase.body))
        }.response
    }

    /// The answer to a refused payment: why, and the failed purchase whose refund follows
    /// (`GET /v1/sku-transactions/{transaction_id}` shows `refund_transaction_hash` once sent).
    struct RefusedPayment: Encodable {
        var error: String
        var code: String
        var transaction_id: PurchaseID
        var refund: String
        var refund_amount: String
    }

    /// "24 h", "90 min", "45 s".
    static func describe(seconds: Int) -> String {
        seconds % 3600 == 0 ? "\(seconds / 3600) h" : seconds % 60 == 0 ? "\(seconds / 60) min" : "\(seconds) s"
    }

    static let fulfilmentAttempts = 5_000
    static let fulfilmentBackoff = JobBackoff(base: 2, maximum: 600)

    // MARK: Wire types

    struct SKUBody: Encodable {
        struct ReferenceBody: Encodable {
            var label: String
            var pattern: String
            var example: String
        }

        var id: String
        var name: String
        var provider: String
        var category: String
        var currency: String
        var amount: String?
        var min_amount: String?
        var max_amount: String?
        var reference: ReferenceBody

        init(_ sku: SKU) {
            id = sku.id
            name = sku.name
            provider = sku.provider
            category = sku.category.rawValue
            currency = SKU.currency
            amount = sku.fixed.map(Money.pesos)
            min_amount = sku.fixed == nil ? Money.pesos(sku.minimum) : nil
            max_amount = sku.fixed == nil ? Money.pesos(sku.maximum) : nil
            reference = ReferenceBody(label: sku.reference.label, pattern: sku.reference.pattern, example: sku.reference.example)
        }
    }

    struct SKUList: Encodable { var skus: [SKUBody] }

    struct QuoteBody: Encodable {
        var sku_id: String
        var amount: String
        var currency: String
        var rate_mxn_per_strk: String
        var strk_amount: String
        var strk_amount_fri: String
        var payment_address: String
        var vault_address: String
        var gas_fee: String
        /// Unix seconds.
        var expires_at: Int64
    }

    struct PurchaseList: Encodable {
        var data: [Purchase.Body]
        var has_more: Bool
    }

    struct DeliveryList: Encodable { var data: [WebhookDelivery] }
}

/// A fulfilment job's payload.
struct FulfilmentJob: Codable { var transactionID: PurchaseID }

extension JSONEncoder {
    /// The provider's answers: keys sorted, slashes as they are.
    static var chippi: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

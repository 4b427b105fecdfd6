import Foundation
import HTTPTypes
import PurseKit
import PurseHTTP

/// The Nexus Data API as the app calls it.
public struct NexusClient: Sendable {
    public let api: APIClient

    public init(api: APIClient) { self.api = api }

    public func authenticationOptions(intent: ChallengeIntent = .transaction) async throws -> AuthenticationOptions {
        try await api.send(.get, "/biometric/auth/options", query: [URLQueryItem(name: "intent", value: intent.rawValue)])
    }

    /// Sends the signed assertion.
    /// - Throws: ``PurseError`` `domain("verification_failed")` with the server's message when it
    ///   refused the proof; network errors as they are.
    public func verify(_ assertion: Assertion) async throws -> VerificationResult {
        do {
            return try await api.send(.post, "/biometric/auth/verify", body: assertion)
        } catch let error as PurseError where error.status == 400 || error.status == 401 {
            struct Refusal: Decodable { var verified: Bool; var message: String }
            if let refusal = error.decodeBody(as: Refusal.self), !refusal.verified {
                throw PurseError.domain("verification_failed", message: refusal.message, body: error.body)
            }
            throw error
        }
    }

    public func registrationOptions() async throws -> CreationOptions {
        try await api.send(.post, "/biometric/register/options")
    }

    public func register(_ registration: Registration) async throws -> EnrolledCredential {
        struct Answer: Decodable { var credential: EnrolledCredential }
        do {
            let answer: Answer = try await api.send(.post, "/biometric/register/verify", body: registration)
            return answer.credential
        } catch let error as PurseError where (400..<500).contains(error.status ?? 0) && error.kind != .unauthorized {
            throw PurseError.domain("registration_failed", message: error.message, body: error.body)
        }
    }

    public func credentials() async throws -> [EnrolledCredential] {
        struct List: Decodable { var credentials: [EnrolledCredential] }
        let list: List = try await api.send(.get, "/biometric/credentials")
        return list.credentials
    }

    /// Buys the order.
    /// - Parameter idempotencyKey: One per order; reuse it when retrying the same order.
    /// - Throws: ``PurseError``; refusals carry the server's `code` as the domain code
    ///   (`insufficient_balance`, `incorrect_pin`, `pin_locked`, `token_expired` …).
    public func topup(_ order: TopupOrder, authorization: TopupAuthorization, idempotencyKey: String) async throws -> TopupReceipt {
        struct Body: Encodable {
            var amount: Int
            var productCode: String
            var recipientPhone: String
            var verificationToken: String?
            var pin: String?
            var supplierSlug: String?
            var useCashback: Bool
        }
        var body = Body(amount: order.amount, productCode: order.productCode, recipientPhone: order.recipientPhone,
                        supplierSlug: order.supplierSlug, useCashback: order.useCashback)
        switch authorization {
        case .verificationToken(let token): body.verificationToken = token
        case .pin(let pin): body.pin = pin
        }
        struct Answer: Decodable { var data: TopupReceipt }
        do {
            let answer: Answer = try await api.send(.post, "/user/topup", body: body, idempotencyKey: idempotencyKey)
            return answer.data
        } catch let error as PurseError {
            throw Self.domainError(error)
        }
    }

    public func products() async throws -> [Product] {
        struct List: Decodable { var products: [Product] }
        let list: List = try await api.send(.get, "/products", authenticated: false)
        return list.products
    }

    public func balance() async throws -> WalletBalance {
        try await api.send(.get, "/user/balance")
    }

    public func transactions(limit: Int = 20, cursor: String? = nil) async throws -> TransactionPage {
        var query = [URLQueryItem(name: "limit", value: String(limit))]
        if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
        return try await api.send(.get, "/user/transactions", query: query)
    }

    /// One transaction: a top-up's `status` is `pending` until the supplier confirms it
    /// (`completed`) or refuses it (`failed`, refunded, with `failureReason`).
    public func transaction(id: TransactionID) async throws -> WalletTransaction {
        struct Answer: Decodable { var data: WalletTransaction }
        let raw = id.rawValue
        let path = "/user/transactions/" + (raw.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "_-"))) ?? raw)
        let answer: Answer = try await api.send(.get, path)
        return answer.data
    }

    /// Polls a pending top-up until it is `completed` or `failed`.
    /// - Throws: ``PurseError/timeout`` when it is still pending after the poller's checks (it
    ///   will settle later: the history shows it).
    public func awaitDelivery(of transactionID: TransactionID, poller: Poller = Poller(interval: .seconds(2), maxAttempts: 20)) async throws -> WalletTransaction {
        try await poller.poll {
            let transaction = try await transaction(id: transactionID)
            return transaction.status == .pending ? .pending : .done(transaction)
        }
    }

    /// Sets the PIN, or changes it with the current one.
    public func setPin(_ pin: String, currentPin: String? = nil) async throws {
        struct Body: Encodable { var pin: String; var currentPin: String? }
        do {
            let _: EmptyResponse = try await api.send(.put, "/user/pin", body: Body(pin: pin, currentPin: currentPin))
        } catch let error as PurseError {
            throw Self.domainError(error)
        }
    }

    /// Sandbox only: credits the wallet.
    public func fund(amount: Int, idempotencyKey: String = IdempotencyKey.make()) async throws -> Int {
        struct Answer: Decodable { struct Data: Decodable { var balance: Int }; var data: Data }
        let answer: Answer = try await api.send(.post, "/sandbox/nexus/fund", body: ["amount": amount], idempotencyKey: idempotencyKey)
        return answer.data.balance
    }

    /// Maps the wallet routes' `{"success": false, "code", "message"}` to a domain error.
    static func domainError(_ error: PurseError) -> PurseError {
        struct Failure: Decodable { var success: Bool; var code: String; var message: String }
        guard let status = error.status, (400..<500).contains(status), status != 429,
              let failure = error.decodeBody(as: Failure.self), !failure.success else { return error }
        return PurseError.domain(failure.code, message: failure.message, body: error.body)
    }
}

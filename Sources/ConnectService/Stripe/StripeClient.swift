import Foundation
import HTTPTypes
import PurseHTTP
import PurseHTTPNIO

/// A real client of Stripe's API (or of the built-in sandbox: only the base URL differs).
///
/// Form-encoded bodies with bracket syntax, `Authorization: Bearer sk_…`, a pinned
/// `Stripe-Version`, an `Idempotency-Key` on every POST, Stripe's error JSON mapped to
/// ``StripeClient/Failure``. The secret key never leaves the server.
public struct StripeClient: Sendable {
    public static let apiVersion = "2024-06-20"

    /// A Stripe API error.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var status: Int
        public var type: String
        public var code: String?
        public var message: String
        public var param: String?
        /// Stripe's `Request-Id`, for support and logs.
        public var requestID: String?
        /// For card errors: why the bank declined.
        public var declineCode: String?

        public init(status: Int, type: String, code: String?, message: String, param: String?, requestID: String?) {
            self.status = status
            self.type = type
            self.code = code
            self.message = message
            self.param = param
            self.requestID = requestID
        }

        public var description: String { "Stripe \(status) \(type)\(code.map { "/\($0)" } ?? ""): \(message)" }

        /// Stripe's answer when the platform has not completed its Connect profile.
        public var isPlatformProfileIncomplete: Bool {
            message.localizedCaseInsensitiveContains("platform-profile") || message.localizedCaseInsensitiveContains("platform profile")
                || code == "platform_profile_incomplete"
        }
    }

    public let baseURL: String
    let secretKey: String
    let send: @Sendable (TransportRequest) async throws -> TransportResponse

    /// - Parameters:
    ///   - baseURL: `https://api.stripe.com`, or the sandbox's `http://HOST:PORT/sandbox/stripe`.
    ///   - secretKey: `sk_live_…` / `sk_test_…`.
    ///   - send: The HTTP exchange, injectable so tests can record or answer requests;
    ///     AsyncHTTPClient by default.
    public init(baseURL: String, secretKey: String, send: (@Sendable (TransportRequest) async throws -> TransportResponse)? = nil) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.secretKey = secretKey
        self.send = send ?? StripeClient.exchange(over: AsyncHTTPClientTransport(maxResponseBytes: 4 << 20))
    }

    /// A client whose requests go over `transport` (the built-in sandbox's ``InProcessTransport``, say).
    public init(baseURL: String, secretKey: String, transport: any HTTPTransport) {
        self.init(baseURL: baseURL, secretKey: secretKey, send: StripeClient.exchange(over: transport))
    }

    /// `POST /v1/accounts`: an Express account with card payments and transfers requested.
    public func createAccount(email: String?, userID: String, country: String = "US", idempotencyKey: String) async throws -> StripeAccount {
        var params: [(String, StripeParam)] = [("type", "express"), ("country", .string(country))]
        if let email { params.append(("email", .string(email))) }
        params.append(("capabilities", ["card_payments": ["requested": true], "transfers": ["requested": true]]))
        params.append(("metadata", ["purse_user_id": .string(userID)]))
        return try await request(.post, "/v1/accounts", params: params, idempotencyKey: idempotencyKey)
    }

    /// `POST /v1/account_links` for `account_onboarding`.
    public func createAccountLink(account: String, refreshURL: String, returnURL: String, idempotencyKey: String) async throws -> StripeAccountLink {
        try await request(.post, "/v1/account_links", params: [
            ("account", .string(account)), ("refresh_url", .string(refreshURL)), ("return_url", .string(returnURL)),
            ("type", "account_onboarding"),
        ], idempotencyKey: idempotencyKey)
    }

    /// `POST /v1/payment_intents`: a confirmed destination charge — the platform keeps
    /// `applicationFee`, the rest goes to `destination`.
    public enum PaymentSource: Sendable, Equatable {
        /// A PaymentMethod id made by Stripe.js or the iOS SDK (`pm_…`).
        case paymentMethod(String)
        /// A raw test card number (test mode only; what the sandbox's test cards use).
        case testCard(String)
    }

    public func createDestinationCharge(
        amount: Int, currency: String, applicationFee: Int, destination: String, source: PaymentSource,
        metadata: [(String, StripeParam)], idempotencyKey: String
    ) async throws -> StripePaymentIntent {
        var params: [(String, StripeParam)] = [
            ("amount", .int(amount)), ("currency", .string(currency)), ("application_fee_amount", .int(applicationFee)),
            ("transfer_data", ["destination": .string(destination)]),
        ]
        switch source {
        case .paymentMethod(let id): params.append(("payment_method", .string(id)))
        case .testCard(let number): params.append(("payment_method_data", ["type": "card", "card": ["number": .string(number)]]))
        }
        params += [("confirm", true), ("automatic_payment_methods", ["enabled": true, "allow_redirects": "never"]), ("metadata", .object(metadata))]
        return try await request(.post, "/v1/payment_intents", params: params, idempotencyKey: idempotencyKey)
    }

    /// `GET /v1/accounts/{id}`.
    public func retrieveAccount(_ id: String) async throws -> StripeAccount {
        guard id.hasPrefix("acct_"), id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else {
            throw Failure(status: 400, type: "invalid_request_error", code: "resource_missing", message: "No such account: '\(id)'", param: "account", requestID: nil)
        }
        return try await request(.get, "/v1/accounts/\(id)", params: [], idempotencyKey: nil)
    }

    /// Builds the exact HTTP request for an API call (public for request-shape tests).
    /// - Throws: ``Failure`` when the base URL and path make no URL.
    public func makeRequest(_ method: HTTPRequest.Method, _ path: String, params: [(String, StripeParam)], idempotencyKey: String?) throws -> TransportRequest {
        var headerFields: HTTPFields = [
            .authorization: "Bearer \(secretKey)",
            .stripeVersion: Self.apiVersion,
            .userAgent: "Purse/0.1 StripeClient",
            .accept: "application/json",
        ]
        var url = baseURL + path
        var body: Data?
        let encoded = StripeForm.encode(params)
        if method == .get {
            if !encoded.isEmpty { url += "?" + encoded }
        } else {
            headerFields[.contentType] = "application/x-www-form-urlencoded"
            body = Data(encoded.utf8)
            if let idempotencyKey { headerFields[.idempotencyKey] = idempotencyKey }
        }
        guard let target = URL(string: url) else {
            throw Failure(status: 400, type: "invalid_request_error", code: nil, message: "Not a URL: \(url)", param: nil, requestID: nil)
        }
        return TransportRequest(method: method, url: target, headerFields: headerFields, body: body, timeout: .seconds(30))
    }

    func request<T: Decodable>(_ method: HTTPRequest.Method, _ path: String, params: [(String, StripeParam)], idempotencyKey: String?) async throws -> T {
        let response = try await send(try makeRequest(method, path, params: params, idempotencyKey: idempotencyKey))
        let requestID = response.headerFields[.requestID]
        guard response.status.kind == .successful else {
            if let body = try? JSONDecoder().decode(StripeErrorBody.self, from: response.body) {
                var failure = Failure(status: response.status.code, type: body.error.type, code: body.error.code, message: body.error.message,
                                      param: body.error.param, requestID: requestID)
                failure.declineCode = body.error.decline_code
                throw failure
            }
            throw Failure(status: response.status.code, type: "api_error", code: nil, message: "Unexpected response from Stripe", param: nil, requestID: requestID)
        }
        do {
            return try JSONDecoder().decode(T.self, from: response.body)
        } catch {
            throw Failure(status: response.status.code, type: "api_error", code: nil, message: "Unreadable response from Stripe: \(error)", param: nil, requestID: requestID)
        }
    }

    /// The exchange over `transport` (AsyncHTTPClient to Stripe, or the sandbox in this process):
    /// fails fast when Stripe is unreachable (the caller decides about retries), 30 s timeout.
    static func exchange(over transport: any HTTPTransport) -> @Sendable (TransportRequest) async throws -> TransportResponse { { request in
        do {
            return try await transport.send(request)
        } catch {
            throw Failure(status: 503, type: "api_connection_error", code: nil, message: "Could not reach Stripe: \(error)", param: nil, requestID: nil)
        }
    } }
}

extension HTTPField.Name {
    /// The API version a Stripe request asks for.
    static let stripeVersion = HTTPField.Name("Stripe-Version")!
    /// The id Stripe gives each answer, for support and logs.
    static let requestID = HTTPField.Name("Request-Id")!
    /// The signature of a webhook event (``WebhookSignature``).
    static let stripeSignature = HTTPField.Name("Stripe-Signature")!
}

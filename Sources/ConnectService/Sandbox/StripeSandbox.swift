import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import PurseDatabase
import PurseFormats
import PurseHTTP
import PurseHTTPNIO
import PurseServer
import SQLKit

/// A Stripe-compatible subset served under `/sandbox/stripe`: `POST /v1/accounts`,
/// `GET /v1/accounts/{id}`, `POST /v1/account_links` with Stripe's JSON, ids, errors, auth check
/// and idempotency; a hosted onboarding page at the link URL; signed `account.updated` webhooks
/// delivered through the job queue (retried with backoff).
struct StripeSandbox: Sendable {
    static let webhookJob = "stripe_sandbox.webhook"
    let configuration: ConnectConfiguration
    let environment: ServerEnvironment
    var publicURL: String { environment.configuration.effectivePublicURL }

    struct WebhookJob: Codable {
        var url: String
        var payload: String
    }

    func mount(on router: Router<PurseRequestContext>) {
        let api = router.group("sandbox/stripe/v1")
        api.post("accounts") { request, context in
            try await stripeCall(request, context) { params, db in try await createAccount(params, db: db) }
        }
        api.get("accounts/{id}") { request, context in
            try authorize(request)
            let id = try context.parameters.require("id")
            guard let account = try await environment.database.read({ db in try await load(id, in: db) }) else {
                throw Self.error(404, "invalid_request_error", "resource_missing", "No such account: '\(id)'", param: "account")
            }
            return try Self.json(account)
        }
        api.post("payment_intents") { request, context in
            try await stripeCall(request, context) { params, db in try await createPaymentIntent(params, db: db) }
        }
        api.post("account_links") { request, context in
            try await stripeCall(request, context) { params, db in try await createLink(params, db: db) }
        }
        router.get("sandbox/stripe/connect/onboarding/{token}") { _, context in
            try await onboardingPage(token: try context.parameters.require("token"))
        }
        router.post("sandbox/stripe/connect/onboarding/{token}") { request, context in
            var request = request
            let body = try await request.collectLimitedBody(context: context)
            return try await submitOnboarding(token: try context.parameters.require("token"), form: String(buffer: body))
        }
    }

    // MARK: Stripe API surface

    func authorize(_ request: Request) throws {
        let header = request.headers[.authorization] ?? ""
        guard header == "Bearer \(configuration.stripeSecretKey)" else {
            let shown = header.hasPrefix("Bearer ") ? String(header.dropFirst(7).prefix(8)) + "***" : "none"
            throw Self.error(401, "invalid_request_error", nil, "Invalid API Key provided: \(shown)")
        }
    }

    /// Auth, form decoding and Stripe's idempotency for a POST.
    func stripeCall(_ request: Request, _ context: PurseRequestContext,
                    _ body: @escaping @Sendable ([String: String], any DatabaseSession) async throws -> Data) async throws -> Response {
        try authorize(request)
        var request = request
        let raw = String(buffer: try await request.collectLimitedBody(context: context))
        let params = Dictionary(StripeForm.decode(raw), uniquingKeysWith: { _, last in last })
        let key = request.headers[.idempotencyKey]
        let hash = Hex.encode(SHA256.hash(data: Data((request.uri.path + "\n" + raw).utf8)))
        let data: Data = try await environment.database.transaction { db in
            if let key {
                if let row = try await db.raw("SELECT request_hash, body FROM stripe_sandbox_idempotency WHERE key = \(bind: key)").first() {
                    guard try row.decode(column: "request_hash", as: String.self) == hash else {
                        throw Self.error(400, "idempotency_error", nil,
                                         "Keys for idempotent requests can only be used with the same parameters they were first used with.")
                    }
                    return Data(try row.decode(column: "body", as: String.self).utf8)
                }
            }
            let data = try await body(params, db)
            if let key {
                try await db.raw("""
                    INSERT INTO stripe_sandbox_idempotency (key, request_hash, status_code, body, created_at)
                    VALUES (\(bind: key), \(bind: hash), 200, \(bind: String(decoding: data, as: UTF8.self)), \(bind: environment.now().epochMillis))
                    """).run()
            }
            return data
        }
        return .jsonData(data, headers: [.requestID: "req_" + RandomID.hex(bytes: 7)])
    }

    func createAccount(_ params: [String: String], db: any DatabaseSession) async throws -> Data {
        guard configuration.sandboxPlatformProfileComplete else {
            throw Self.error(400, "invalid_request_error", "platform_profile_incomplete",
                             "You must complete your platform profile to use Connect and create new connected accounts. See https://dashboard.stripe.com/settings/connect/platform-profile.")
        }
        guard params["type"] == "express" else {
            throw Self.error(400, "invalid_request_error", "parameter_invalid_empty", "The sandbox supports only type=express accounts.", param: "type")
        }
        let now = Int(environment.now().timeIntervalSince1970)
        var metadata: [String: String] = [:]
        for (key, value) in params where key.hasPrefix("metadata[") && key.hasSuffix("]") {
            metadata[String(key.dropFirst("metadata[".count).dropLast())] = value
        }
        let account = StripeAccount(
            id: "acct_1" + Self.alphanumeric(15), business_profile: .init(), business_type: nil,
            capabilities: .init(card_payments: params["capabilities[card_payments][requested]"] == "true" ? "inactive" : nil,
                                transfers: params["capabilities[transfers][requested]"] == "true" ? "inactive" : nil),
            charges_enabled: false, country: params["country"] ?? "US", created: now, default_currency: "usd", details_submitted: false,
            email: params["email"], payouts_enabled: false, type: "express",
            requirements: .init(currently_due: Self.initialRequirements, eventually_due: Self.initialRequirements, past_due: [], disabled_reason: "requirements.past_due"),
            metadata: metadata
        )
        try await save(account, created: true, in: db)
        return try JSONCoding.encoder.encode(account)
    }

    func createLink(_ params: [String: String], db: any DatabaseSession) async throws -> Data {
        guard let accountID = params["account"], try await load(accountID, in: db) != nil else {
            throw Self.error(400, "invalid_request_error", "resource_missing", "No such account: '\(params["account"] ?? "")'", param: "account")
        }
        for name in ["refresh_url", "return_url"] {
            guard let value = params[name], let url = URL(string: value), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw Self.error(400, "invalid_request_error", "url_invalid", "Not a valid URL", param: name)
            }
        }
        guard ["account_onboarding", "account_update"].contains(params["type"] ?? "") else {
            throw Self.error(400, "invalid_request_error", "parameter_invalid_empty", "Invalid type: must be one of account_onboarding or account_update", param: "type")
        }
        let token = Self.alphanumeric(24)
        let now = Int(environment.now().timeIntervalSince1970)
        try await db.raw("""
            INSERT INTO stripe_sandbox_links (token, account_id, refresh_url, return_url, expires_at)
            VALUES (\(bind: token), \(bind: accountID), \(bind: params["refresh_url"]!), \(bind: params["return_url"]!), \(bind: Int64(now + 300)))
            """).run()
        let link = StripeAccountLink(created: now, expires_at: now + 300, url: "\(publicURL)/sandbox/stripe/connect/onboarding/\(token)")
        return try JSONCoding.encoder.encode(link)
    }

    /// Test cards, as Stripe documents them: 4242… and `pm_card_visa` succeed, 4000 0000 0000 0002 and
    /// `pm_card_chargeDeclined` are declined.
    func createPaymentIntent(_ params: [String: String], db: any DatabaseSession) async throws -> Data {
        guard let amount = params["amount"].flatMap(Int.init), amount >= 50 else {
            throw Self.error(400, "invalid_request_error", "amount_too_small", "Amount must be at least 50 cents", param: "amount")
        }
        guard let currency = params["currency"], currency.count == 3 else {
            throw Self.error(400, "invalid_request_error", "parameter_missing", "Missing required param: currency.", param: "currency")
        }
        let fee = params["application_fee_amount"].flatMap(Int.init)
        if let fee, fee < 0 || fee > amount {
            throw Self.error(400, "invalid_request_error", "parameter_invalid_integer", "application_fee_amount must be between 0 and amount", param: "application_fee_amount")
        }
        var destination: String?
        if let id = params["transfer_data[destination]"] {
            guard let account = try await load(id, in: db), account.charges_enabled else {
                throw Self.error(400, "invalid_request_error", "account_invalid",
                                 "The destination account \(id) cannot receive charges (its onboarding is not complete).", param: "transfer_data[destination]")
            }
            destination = account.id
        }
        let method = params["payment_method"] ?? params["payment_method_data[card][number]"].map { "card_" + $0 }
        switch method {
        case "pm_card_visa", "card_4242424242424242":
            break
        case "pm_card_chargeDeclined", "card_4000000000000002":
            var body = StripeErrorBody(error: .init(type: "card_error", code: "card_declined", message: "Your card was declined.", param: nil, request_log_url: nil))
            body.error.decline_code = "generic_decline"
            throw APIError(HTTPResponse.Status(code: 402), body: body)
        default:
            throw Self.error(400, "invalid_request_error", "resource_missing", "No such PaymentMethod: '\(method ?? "")'", param: "payment_method")
        }
        var metadata: [String: String] = [:]
        for (key, value) in params where key.hasPrefix("metadata[") && key.hasSuffix("]") {
            metadata[String(key.dropFirst("metadata[".count).dropLast())] = value
        }
        let intent = StripePaymentIntent(
            id: "pi_3" + Self.alphanumeric(21), amount: amount, currency: currency.lowercased(), application_fee_amount: fee,
            transfer_data: destination.map { .init(destination: $0) }, status: params["confirm"] == "true" ? .succeeded : .requiresConfirmation,
            payment_method: params["payment_method"] ?? "pm_" + Self.alphanumeric(24), created: Int(environment.now().timeIntervalSince1970),
            metadata: metadata
        )
        let data = try JSONCoding.encoder.encode(intent)
        try await db.raw("""
            INSERT INTO stripe_sandbox_payment_intents (id, body, created_at)
            VALUES (\(bind: intent.id), \(bind: String(decoding: data, as: UTF8.self)), \(bind: environment.now().epochMillis))
            """).run()
        return data
    }

    // MARK: Hosted onboarding

    struct Link {
        var accountID: String
        var refreshURL: String
        var returnURL: String
        var expiresAt: Int64
        var usedAt: Int64?
    }

    func link(_ token: String, in db: any DatabaseSession) async throws -> Link? {
        guard let row = try await db.raw("SELECT * FROM stripe_sandbox_links WHERE token = \(bind: token)").first() else { return nil }
        return Link(accountID: try row.decode(column: "account_id", as: String.self), refreshURL: try row.decode(column: "refresh_url", as: String.self),
                    returnURL: try row.decode(column: "return_url", as: String.self), expiresAt: try row.decode(column: "expires_at", as: Int64.self),
                    usedAt: try row.decode(column: "used_at", as: Int64?.self))
    }

    func isUsable(_ link: Link) -> Bool {
        link.usedAt == nil && link.expiresAt > Int64(environment.now().timeIntervalSince1970)
    }

    func onboardingPage(token: String) async throws -> Response {
        guard let link = try await environment.database.read({ db in try await link(token, in: db) }) else {
            return .html(ConnectController.landing("Link not found", "This onboarding link does not exist."), status: .notFound)
        }
        guard isUsable(link) else { return Response(status: .seeOther, headers: [.location: link.refreshURL]) }
        let account = try await environment.database.read { db in try await load(link.accountID, in: db) }
        return .html(SandboxOnboardingPage.render(token: token, email: account?.email ?? ""))
    }

    func submitOnboarding(token: String, form: String) async throws -> Response {
        let fields = Dictionary(StripeForm.decode(form), uniquingKeysWith: { _, last in last })
        let now = environment.now()
        let found = try await environment.database.transaction { db -> (String, [String]?)? in
            guard let link = try await link(token, in: db), var account = try await load(link.accountID, in: db) else { return nil }
            guard isUsable(link) else { return (link.refreshURL, nil) }
            try await db.raw("UPDATE stripe_sandbox_links SET used_at = \(bind: now.epochMillis) WHERE token = \(bind: token)").run()
            let problems = SandboxOnboardingPage.problems(in: fields)
            if fields["action"] != "leave_due", !problems.isEmpty { return (link.refreshURL, problems) }
            account.business_type = fields["business_type"] == "company" ? "company" : "individual"
            account.business_profile.name = fields["business_name"].flatMap { $0.isEmpty ? nil : $0 }
            account.business_profile.url = fields["business_url"].flatMap { $0.isEmpty ? nil : $0 }
            account.business_profile.mcc = "7922"  // theatrical producers, ticket agencies
            if let email = fields["email"], !email.isEmpty { account.email = email }
            account.details_submitted = true
            if fields["action"] == "leave_due" {
                account.requirements = .init(currently_due: ["external_account"], eventually_due: ["external_account"], past_due: ["external_account"],
                                             disabled_reason: "requirements.past_due")
                account.charges_enabled = false
                account.payouts_enabled = false
                account.capabilities = .init(card_payments: "inactive", transfers: "inactive")
            } else {
                account.requirements = .init(currently_due: [], eventually_due: [], past_due: [], disabled_reason: nil)
                account.charges_enabled = true
                account.payouts_enabled = true
                account.capabilities = .init(card_payments: "active", transfers: "active")
            }
            try await save(account, created: false, in: db)
            let event = StripeEvent(id: "evt_1" + Self.alphanumeric(23), api_version: StripeClient.apiVersion,
                                    created: Int(now.timeIntervalSince1970), type: "account.updated", livemode: false, data: .init(object: account))
            let payload = String(decoding: try JSONCoding.encoder.encode(event), as: UTF8.self)
            try await environment.jobs.enqueue(kind: Self.webhookJob, payload: WebhookJob(url: configuration.webhookURL, payload: payload),
                                               runAt: now, maxAttempts: 10, in: db)
            return (link.returnURL, [])
        }
        guard let outcome = found else {
            return .html(ConnectController.landing("Link not found", "This onboarding link does not exist."), status: .notFound)
        }
        if let problems = outcome.1, !problems.isEmpty {
            return .html(SandboxOnboardingPage.render(token: token, email: fields["email"] ?? "", problems: problems), status: .badRequest)
        }
        return Response(status: .seeOther, headers: [.location: outcome.0])
    }

    // MARK: Webhook delivery

    /// Posts a queued event, signed as Stripe signs it; a non-2xx answer is retried by the queue.
    func deliver(_ job: Job) async throws {
        let webhook = try job.decode(WebhookJob.self)
        let payload = Data(webhook.payload.utf8)
        guard let url = URL(string: webhook.url) else { throw SandboxDeliveryError(status: 0) }
        let response = try await AsyncHTTPClientTransport(maxResponseBytes: 1 << 20).send(TransportRequest(
            method: .post, url: url,
            headerFields: [
                .contentType: "application/json; charset=utf-8", .userAgent: "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
                .stripeSignature: WebhookSignature.header(payload: payload, secret: configuration.webhookSecret,
                                                            timestamp: Int(environment.now().timeIntervalSince1970)),
            ],
            body: payload, timeout: .seconds(10)
        ))
        guard response.status.kind == .successful else {
            throw SandboxDeliveryError(status: response.status.code)
        }
    }

    // MARK: Storage and helpers

    func load(_ id: String, in db: any DatabaseSession) async throws -> StripeAccount? {
        guard let row = try await db.raw("SELECT body FROM stripe_sandbox_accounts WHERE id = \(bind: id)").first() else { return nil }
        return try JSONDecoder().decode(StripeAccount.self, from: Data(try row.decode(column: "body", as: String.self).utf8))
    }

    func save(_ account: StripeAccount, created: Bool, in db: any DatabaseSession) async throws {
        let body = String(decoding: try JSONCoding.encoder.encode(account), as: UTF8.self)
        if created {
            try await db.raw("INSERT INTO stripe_sandbox_accounts (id, body, created_at) VALUES (\(bind: account.id), \(bind: body), \(bind: environment.now().epochMillis))").run()
        } else {
            try await db.raw("UPDATE stripe_sandbox_accounts SET body = \(bind: body) WHERE id = \(bind: account.id)").run()
        }
    }

    static let initialRequirements = [
        "business_profile.mcc", "business_profile.url", "business_type", "external_account", "individual.address.city",
        "individual.address.line1", "individual.address.postal_code", "individual.address.state", "individual.dob.day",
        "individual.dob.month", "individual.dob.year", "individual.email", "individual.first_name", "individual.last_name",
        "individual.phone", "individual.ssn_last_4", "tos_acceptance.date", "tos_acceptance.ip",
    ]

    static func alphanumeric(_ count: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        return String(RandomID.bytes(count).map { alphabet[Int($0) % alphabet.count] })
    }

    static func error(_ status: Int, _ type: String, _ code: String?, _ message: String, param: String? = nil) -> APIError {
        APIError(HTTPResponse.Status(code: status),
                 body: StripeErrorBody(error: .init(type: type, code: code, message: message, param: param, request_log_url: nil)))
    }

    static func json(_ account: StripeAccount) throws -> Response {
        .jsonData(try JSONCoding.encoder.encode(account), headers: [.requestID: "req_" + RandomID.hex(bytes: 7)])
    }
}

struct SandboxDeliveryError: Error, CustomStringConvertible {
    var status: Int
    var description: String { "webhook endpoint answered HTTP \(status)" }
}

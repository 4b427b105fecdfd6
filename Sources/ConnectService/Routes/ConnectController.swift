import Foundation
import PurseFormats
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PurseDatabase
import PurseServer
import SQLKit

/// The four Maly endpoints and the webhook, exactly as the seed specifies them.
struct ConnectController: Sendable {
    let configuration: ConnectConfiguration
    let environment: ServerEnvironment
    let stripe: StripeClient
    let store = ConnectStore()

    struct Status: Codable {
        var hasAccount: Bool
        var onboardingComplete: Bool
    }

    struct VerifiedStatus: Codable {
        var hasAccount: Bool
        var onboardingComplete: Bool
        var chargesEnabled: Bool
        var payoutsEnabled: Bool
        var detailsSubmitted: Bool
    }

    func mount(on router: Router<PurseRequestContext>) {
        let connect = router.group("api/stripe/connect").add(middleware: RequireAuthentication(unknownUser: APIError(.notFound, "User not found")))
        connect.post("create-account") { _, context in
            try await Self.answering("Failed to create Stripe Connect account", logger: context.logger) {
                try await createAccount(user: try context.requireUser().id, logger: context.logger)
            }
        }
        connect.post("create-account-link") { request, context in
            try await Self.answering("Failed to create account link", logger: context.logger) {
                try await createAccountLink(user: try context.requireUser().id, origin: request.headers[.origin], logger: context.logger)
            }
        }
        connect.get("account-status") { _, context in
            try await Self.answering("Failed to get account status", logger: context.logger) {
                try await accountStatus(user: try context.requireUser().id)
            }
        }
        connect.post("verify-account") { _, context in
            try await Self.answering("Failed to verify account", logger: context.logger) {
                try await verifyAccount(user: try context.requireUser().id, logger: context.logger)
            }
        }
        router.post("api/webhooks/stripe/connect") { request, context in
            var request = request
            let body = try await request.collectJSONBody(context: context)
            return try await webhook(body: Data(body.readableBytesView), signature: request.headers[.stripeSignature], logger: context.logger)
        }
        router.get("stripe/connect/success") { _, _ in Response.html(Self.landing("Onboarding submitted", "You can return to the Maly app; your payout status updates in a moment.")) }
        router.get("stripe/connect/reauth") { _, _ in Response.html(Self.landing("Onboarding link expired", "Return to the Maly app and start onboarding again to get a fresh link.")) }
    }

    /// Runs a route's work; a failure that is not already one of the seed's answers (the
    /// database, an unexpected reply) is logged and answered with the seed's 500 `message`.
    static func answering(_ message: String, logger: Logger, _ work: () async throws -> Response) async throws -> Response {
        do {
            return try await work()
        } catch let error as APIError {
            throw error
        } catch {
            logger.error("\(message)", metadata: ["error": "\(error)"])
            throw APIError(.internalServerError, message)
        }
    }

    // MARK: 1. create-account

    func createAccount(user: UserID, logger: Logger) async throws -> Response {
        let (found, existing) = try await environment.database.read { db in
            (try await environment.accounts.find(id: user, in: db), try await store.account(of: user, in: db))
        }
        guard let found else { throw APIError(.notFound, "User not found") }
        guard existing == nil else { throw APIError(.badRequest, "User already has a Stripe Connect account") }
        let account: StripeAccount
        do {
            // One key per user: a retried or concurrent creation gets the same Stripe account back.
            account = try await stripe.createAccount(email: found.email, userID: user.rawValue, idempotencyKey: "purse-create-account-\(user.rawValue)")
        } catch let failure as StripeClient.Failure {
            logger.error("stripe account creation failed", metadata: ["stripe.status": "\(failure.status)", "stripe.type": "\(failure.type)",
                                                                      "stripe.request_id": "\(failure.requestID ?? "-")"])
            if failure.isPlatformProfileIncomplete {
                throw APIError(.badRequest, "Platform configuration incomplete. Please contact support to complete Stripe platform setup.",
                               details: "The Stripe Connect platform profile needs to be configured before creating Express accounts.")
            }
            throw APIError(.internalServerError, "Failed to create Stripe Connect account")
        }
        let now = environment.now()
        try await environment.database.transaction { db in try await store.insertAccount(of: user, account, now: now, in: db) }
        struct Answer: Encodable { var account: SeedAccountView }
        return try .json(Answer(account: SeedAccountView(account: account)))
    }

    // MARK: 2. create-account-link

    /// `http(s)://host[:port]` only; in production, one of the configured origins.
    func validOrigin(_ raw: String?) throws -> String {
        guard let raw, !raw.isEmpty else { throw APIError(.badRequest, "Origin header is required") }
        guard let url = URL(string: raw), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = url.host, !host.isEmpty, url.path.isEmpty || url.path == "/", url.query == nil, url.user == nil else {
            throw APIError(.badRequest, "Origin header must be http(s)://host[:port]")
        }
        let origin = "\(scheme)://\(host)\(url.port.map { ":\($0)" } ?? "")"
        if let allowed = configuration.allowedOrigins, !allowed.contains(origin) {
            throw APIError(.badRequest, "Origin \(origin) is not allowed")
        }
        return origin
    }

    func createAccountLink(user: UserID, origin rawOrigin: String?, logger: Logger) async throws -> Response {
        let origin = try validOrigin(rawOrigin)
        guard let existing = try await environment.database.read({ db in try await store.account(of: user, in: db) }) else {
            throw APIError(.badRequest, "User does not have a Stripe Connect account")
        }
        do {
            let link = try await stripe.createAccountLink(
                account: existing.stripeAccountID, refreshURL: "\(origin)/stripe/connect/reauth", returnURL: "\(origin)/stripe/connect/success",
                idempotencyKey: "purse-link-\(RandomID.hex(bytes: 12))"
            )
            struct Answer: Encodable { var url: String }
            return try .json(Answer(url: link.url))
        } catch let failure as StripeClient.Failure {
            logger.error("stripe account link failed", metadata: ["stripe.status": "\(failure.status)", "stripe.request_id": "\(failure.requestID ?? "-")"])
            throw APIError(.internalServerError, "Failed to create account link")
        }
    }

    // MARK: 3. account-status

    func accountStatus(user: UserID) async throws -> Response {
        let existing = try await environment.database.read { db in try await store.account(of: user, in: db) }
        return try .json(Status(hasAccount: existing != nil, onboardingComplete: existing?.onboardingComplete ?? false))
    }

    // MARK: 4. verify-account

    func verifyAccount(user: UserID, logger: Logger) async throws -> Response {
        guard let existing = try await environment.database.read({ db in try await store.account(of: user, in: db) }) else {
            throw APIError(.badRequest, "User does not have a Stripe Connect account")
        }
        let account: StripeAccount
        do {
            account = try await stripe.retrieveAccount(existing.stripeAccountID)
        } catch let failure as StripeClient.Failure {
            logger.error("stripe account retrieval failed", metadata: ["stripe.status": "\(failure.status)", "stripe.request_id": "\(failure.requestID ?? "-")"])
            throw APIError(.internalServerError, "Failed to verify account")
        }
        let now = environment.now()
        try await environment.database.transaction { db in try await store.update(with: AccountState(account), now: now, in: db) }
        return try .json(VerifiedStatus(
            hasAccount: true, onboardingComplete: account.onboardingComplete, chargesEnabled: account.charges_enabled,
            payoutsEnabled: account.payouts_enabled, detailsSubmitted: account.details_submitted
        ))
    }

    /// What the completion rule reads of an account — all a webhook needs to carry.
    struct AccountState: Decodable {
        struct Requirements: Decodable { var currently_due: [String]? }
        var id: String
        var charges_enabled: Bool
        var payouts_enabled: Bool
        var details_submitted: Bool
        var requirements: Requirements?

        init(_ account: StripeAccount) {
            id = account.id
            charges_enabled = account.charges_enabled
            payouts_enabled = account.payouts_enabled
            details_submitted = account.details_submitted
            requirements = Requirements(currently_due: account.requirements?.currently_due)
        }

        var onboardingComplete: Bool {
            StripeAccount.onboardingComplete(detailsSubmitted: details_submitted, currentlyDue: requirements?.currently_due, chargesEnabled: charges_enabled)
        }
    }

    // MARK: Webhook

    struct EventEnvelope: Decodable {
        var id: String
        var type: String
        var created: Int?
    }

    func webhook(body: Data, signature: String?, logger: Logger) async throws -> Response {
        do {
            try WebhookSignature.verify(header: signature, payload: body, secret: configuration.webhookSecret, now: environment.now(),
                                        tolerance: configuration.webhookTolerance)
        } catch let failure as WebhookSignature.Failure {
            logger.warning("stripe webhook refused", metadata: ["reason": "\(failure.description)"])
            throw APIError(.badRequest, "Webhook signature verification failed",
                           details: failure == .missingHeader ? "Missing Stripe-Signature header" : failure.description)
        }
        guard let envelope = try? JSONDecoder().decode(EventEnvelope.self, from: body) else {
            throw APIError(.badRequest, "Webhook payload is not a Stripe event")
        }
        // A correctly signed event is always acknowledged and recorded (Stripe retries refused
        // ones for days); only an account.updated whose object carries what the completion rule
        // reads changes anything.
        struct AccountEvent: Decodable {
            struct Payload: Decodable { var object: AccountState }
            var data: Payload
        }
        let account: AccountState? = envelope.type == "account.updated" ? try? JSONDecoder().decode(AccountEvent.self, from: body).data.object : nil
        if envelope.type == "account.updated", account == nil {
            logger.warning("account.updated without the fields onboarding needs; recorded, not applied", metadata: ["event": "\(envelope.id)"])
        }
        let now = environment.now()
        let firstTime = try await environment.database.transaction { db -> Bool in
            guard try await store.recordEvent(id: envelope.id, type: envelope.type, now: now, in: db) else { return false }
            if let account { try await store.update(with: account, eventCreated: Int64(envelope.created ?? 0), now: now, in: db) }
            return true
        }
        struct Ack: Encodable { var received = true; var duplicate: Bool? }
        return try .json(Ack(duplicate: firstTime ? nil : true))
    }

    static func landing(_ title: String, _ text: String) -> String {
        """
        <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Maly · \(HTML.escape(title))</title><style>body{font-family:system-ui,sans-serif;max-width:30rem;margin:3rem auto;padding:0 1rem}</style>
        </head><body><h1>\(HTML.escape(title))</h1><p>\(HTML.escape(text))</p></body></html>
        """
    }
}

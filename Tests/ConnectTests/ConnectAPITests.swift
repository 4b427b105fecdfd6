import Synchronization
import ConnectService
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PurseDatabase
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import PurseServer
import PurseTestSupport
import SQLKit
@testable import StripeConnect
import Testing

@Suite("Maly: Connect API, sandbox and webhooks")
struct ConnectAPITests {
    @Test func everyEndpointNeedsAuthentication() async throws {
        try await ConnectHarness.withServer { h in
            for (method, path) in [(HTTPRequest.Method.post, "create-account"), (.post, "create-account-link"), (.get, "account-status"), (.post, "verify-account")] {
                let response = try await h.client.json(method, "/api/stripe/connect/\(path)")
                #expect(response.status == .unauthorized)
                #expect(response.text == #"{"error":"Authentication required"}"#)
            }
        }
    }

    @Test func createAccountReturnsTheSeedsAccountObject() async throws {
        try await ConnectHarness.withServer { h in
            let (token, _, _) = try await h.host()
            let none = try await h.client.json(.get, "/api/stripe/connect/account-status", token: token)
            #expect(none.text == #"{"hasAccount":false,"onboardingComplete":false}"#)

            let created = try await h.client.json(.post, "/api/stripe/connect/create-account", token: token)
            #expect(created.status == .ok)
            let account = try #require(created.object["account"] as? [String: Any])
            #expect(Set(account.keys) == ["id", "object", "business_profile", "business_type", "capabilities", "charges_enabled", "country",
                                          "created", "default_currency", "details_submitted", "email", "payouts_enabled", "type"])
            #expect((account["id"] as? String)?.hasPrefix("acct_") == true)
            #expect(account["object"] as? String == "account" && account["type"] as? String == "express")
            #expect(account["capabilities"] as? [String: String] == ["card_payments": "inactive", "transfers": "inactive"])
            #expect(Set((account["business_profile"] as? [String: Any])?.keys ?? [:].keys) ==
                    ["mcc", "name", "product_description", "support_address", "support_email", "support_phone", "support_url", "url"])
            #expect(account["charges_enabled"] as? Bool == false && account["default_currency"] as? String == "usd")

            let again = try await h.client.json(.post, "/api/stripe/connect/create-account", token: token)
            #expect(again.status == .badRequest)
            #expect(again.text == #"{"error":"User already has a Stripe Connect account"}"#)
            let status = try await h.client.json(.get, "/api/stripe/connect/account-status", token: token)
            #expect(status.text == #"{"hasAccount":true,"onboardingComplete":false}"#)
        }
    }

    @Test func unknownUserIs404() async throws {
        try await ConnectHarness.withServer { h in
            let ghost = try await h.server.environment.tokens.issue(for: UserID("usr_ghost"), purpose: TokenService.sessionPurpose, lifetime: 60).token
            let response = try await h.client.json(.post, "/api/stripe/connect/create-account", token: ghost)
            #expect(response.status == .notFound)
            #expect(response.text == #"{"error":"User not found"}"#)
        }
    }

    @Test func platformProfileNotConfiguredIsTheSeedsError() async throws {
        try await ConnectHarness.withServer(environment: ["STRIPE_SANDBOX_PLATFORM_PROFILE": "incomplete"]) { h in
            let (token, service, _) = try await h.host()
            let response = try await h.client.json(.post, "/api/stripe/connect/create-account", token: token)
            #expect(response.status == .badRequest)
            #expect(response.object["error"] as? String == "Platform configuration incomplete. Please contact support to complete Stripe platform setup.")
            #expect(response.object["details"] as? String == "The Stripe Connect platform profile needs to be configured before creating Express accounts.")
            await #expect(throws: PurseError.domain("platform_configuration", message: "")) { try await service.createConnectAccount() }
        }
    }

    @Test func stripeFailuresAre500WithTheSeedsMessages() async throws {
        try await ConnectHarness.withServer(adjust: { $0.stripeBaseURL = "http://127.0.0.1:1" }) { h in
            let (token, _, _) = try await h.host()
            let response = try await h.client.json(.post, "/api/stripe/connect/create-account", token: token)
            #expect(response.status == .internalServerError)
            #expect(response.text == #"{"error":"Failed to create Stripe Connect account"}"#)
        }
    }

    @Test func accountLinkNeedsAnAccountAndAGoodOrigin() async throws {
        try await ConnectHarness.withServer { h in
            let (token, _, _) = try await h.host()
            let origin = h.base.absoluteString
            let noAccount = try await h.client.json(.post, "/api/stripe/connect/create-account-link", token: token, headers: [.origin: origin])
            #expect(noAccount.status == .badRequest)
            #expect(noAccount.text == #"{"error":"User does not have a Stripe Connect account"}"#)
            _ = try await h.client.json(.post, "/api/stripe/connect/create-account", token: token)
            let missing = try await h.client.json(.post, "/api/stripe/connect/create-account-link", token: token)
            #expect(missing.status == .badRequest && missing.object["error"] as? String == "Origin header is required")
            for bad in ["javascript:alert(1)", "https://example.com/path", "ftp://example.com", "not a url", "https://user@example.com"] {
                let response = try await h.client.json(.post, "/api/stripe/connect/create-account-link", token: token, headers: [.origin: bad])
                #expect(response.status == .badRequest, "\(bad)")
            }
            let link = try await h.client.json(.post, "/api/stripe/connect/create-account-link", token: token, headers: [.origin: origin])
            #expect(link.status == .ok)
            let url = try #require((link.object["url"] as? String).flatMap(URL.init(string:)))
            #expect(url.path.hasPrefix("/sandbox/stripe/connect/onboarding/"))
        }
    }

    @Test func onboardingCompletesThroughTheHostedPageAndTheWebhook() async throws {
        try await ConnectHarness.withServer { h in
            let (_, service, _) = try await h.host()
            _ = try await service.createConnectAccount()
            let url = try #require(URL(string: try await service.createAccountLink().url))
            let page = try await h.client.execute(uri: url.path, method: .get)
            #expect(page.status == .ok && page.text.contains("Agree and submit"))
            let (status, location) = try await h.completeOnboarding(at: url)
            #expect(status == 303)
            #expect(location == "\(h.base.absoluteString)/stripe/connect/success")
            let after = try await h.deliverWebhooksAndReadStatus(service)
            #expect(after == ConnectAccountStatus(hasAccount: true, onboardingComplete: true))
            let verified = try await service.verifyAccount()
            #expect(verified == ConnectAccountStatus(hasAccount: true, onboardingComplete: true, chargesEnabled: true, payoutsEnabled: true, detailsSubmitted: true))
            // The link is single use: opening it again goes to refresh_url, as Stripe's do.
            let reused = try await h.client.execute(uri: url.path, method: .get)
            #expect(reused.status == .seeOther && reused.headers[.location] == "\(h.base.absoluteString)/stripe/connect/reauth")
        }
    }

    /// Records what a client core sends, passing it on to AsyncHTTPClient.
    final class Recording: HTTPTransport {
        let sent = Mutex<[TransportRequest]>([])
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            sent.withLock { $0.append(request) }
            return try await AsyncHTTPClientTransport().send(request)
        }
    }

    @Test func theClientSendsTheSeedsHeadersAndReadsAllThirteenFields() async throws {
        try await ConnectHarness.withServer { h in
            let (token, _) = try await h.client.register()
            let recording = Recording()
            let api = APIClient(session: ClientSession(baseURL: h.base), transport: recording, retry: .none)
            try await api.session.setToken(token)
            let service = StripeConnectService(api: api, origin: h.base.absoluteString)
            let account = try await service.createConnectAccount().account
            #expect(account.object == "account" && account.type == "express" && account.business_type == nil)
            #expect(account.business_profile != nil)
            #expect(account.capabilities == ConnectAccount.Capabilities(card_payments: "inactive", transfers: "inactive"))
            _ = try await service.createAccountLink()
            _ = try await service.verifyAccount()
            let posts = recording.sent.withLock { $0 }.filter { $0.method == .post }
            #expect(posts.count == 3)
            #expect(posts.allSatisfy { $0.headerFields[.contentType] == "application/json" }, "\(posts.map(\.headerFields))")
        }
    }

    @Test func eventTextIsBoundedInBytes() async throws {
        try await ConnectHarness.withServer { h in
            let (token, _) = try await h.client.register()
            let long = String(repeating: "é", count: 4_001)  // 2,000+ characters, 8,002 bytes
            let response = try await h.client.json(.post, "/api/events", """
                {"title":"Gig","description":"\(long)","startsAt":"2099-01-01T20:00:00Z","price":1000}
                """, token: token)
            #expect(response.status == .badRequest && response.text.contains("description"), "\(response.text)")
            let marks = "a" + String(repeating: "\u{0301}", count: 1_000)
            let title = try await h.client.json(.post, "/api/events", """
                {"title":"\(marks)","startsAt":"2099-01-01T20:00:00Z","price":1000}
                """, token: token)
            #expect(title.status == .badRequest && title.text.contains("title"), "\(title.text)")
        }
    }

    @Test func onlyHttpsOrTheServersOwnSandboxLinksAreOpened() {
        let server = URL(string: "http://127.0.0.1:8080")!
        #expect(StripeConnectService.isOpenable("https://connect.stripe.com/setup/e/acct_1/abc", server: server))
        #expect(StripeConnectService.isOpenable("http://127.0.0.1:8080/sandbox/stripe/connect/onboarding/t", server: server))
        #expect(!StripeConnectService.isOpenable("http://connect.stripe.com/setup/e/acct_1/abc", server: server))
        #expect(!StripeConnectService.isOpenable("http://127.0.0.1:9999/sandbox/stripe/connect/onboarding/t", server: server))
        #expect(!StripeConnectService.isOpenable("http://127.0.0.1:8080/elsewhere", server: server))
        #expect(!StripeConnectService.isOpenable("javascript:alert(1)", server: server))
        #expect(!StripeConnectService.isOpenable("https://user:pw@evil.example/", server: server))
    }

    @Test func leavingRequirementsDueKeepsOnboardingIncomplete() async throws {
        try await ConnectHarness.withServer { h in
            let (_, service, _) = try await h.host()
            _ = try await service.createConnectAccount()
            let url = try #require(URL(string: try await service.createAccountLink().url))
            let (status, _) = try await h.completeOnboarding(at: url, action: "leave_due")
            #expect(status == 303)
            // The webhook arrives and is processed: details submitted, but charges not enabled.
            _ = try await h.deliverWebhooksAndReadStatus(service)
            let verified = try await service.verifyAccount()
            #expect(verified == ConnectAccountStatus(hasAccount: true, onboardingComplete: false, chargesEnabled: false, payoutsEnabled: false, detailsSubmitted: true))
            #expect(try await service.getAccountStatus().onboardingComplete == false)
        }
    }

    @Test func expiredLinksAndMissingDetailsGoBack() async throws {
        try await ConnectHarness.withServer { h in
            let (_, service, _) = try await h.host()
            _ = try await service.createConnectAccount()
            let first = try #require(URL(string: try await service.createAccountLink().url))
            let (status, _) = try await h.completeOnboarding(at: first, omit: "ssn_last_4")
            #expect(status == 400, "a form missing details is shown again")
            let second = try #require(URL(string: try await service.createAccountLink().url))
            h.server.clock.advance(by: 301)
            let expired = try await h.client.execute(uri: second.path, method: .get)
            #expect(expired.status == .seeOther && expired.headers[.location]?.hasSuffix("/stripe/connect/reauth") == true)
            let unknown = try await h.client.execute(uri: "/sandbox/stripe/connect/onboarding/nope", method: .get)
            #expect(unknown.status == .notFound)
        }
    }

    // MARK: Webhook

    func event(id: String, type: String = "account.updated", account: String, complete: Bool, created: Int = 100) -> Data {
        let due = complete ? "[]" : #"["external_account"]"#
        return Data("""
            {"id": "\(id)", "object": "event", "api_version": "2024-06-20", "created": \(created), "livemode": false, "type": "\(type)",
             "data": {"object": {"id": "\(account)", "object": "account", "business_profile": {}, "capabilities": {}, "charges_enabled": \(complete),
              "country": "US", "created": 1, "default_currency": "usd", "details_submitted": true, "email": null, "payouts_enabled": \(complete),
              "type": "express", "requirements": {"currently_due": \(due), "eventually_due": [], "past_due": []}}}}
            """.utf8)
    }

    func post(_ h: ConnectHarness, _ payload: Data, signature: String?) async throws -> LiveResponse {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let signature { headers[HTTPField.Name("Stripe-Signature")!] = signature }
        return try await h.client.execute(uri: "/api/webhooks/stripe/connect", method: .post, headers: headers, body: ByteBuffer(data: payload))
    }

    func sign(_ h: ConnectHarness, _ payload: Data, at offset: TimeInterval = 0) -> String {
        WebhookSignature.header(payload: payload, secret: h.connect.webhookSecret, timestamp: Int(h.server.clock.now.timeIntervalSince1970 + offset))
    }

    @Test func webhooksAreVerifiedDeduplicatedAndApplied() async throws {
        try await ConnectHarness.withServer { h in
            let (_, service, _) = try await h.host()
            let account = try await service.createConnectAccount().account.id
            let complete = event(id: "evt_1", account: account, complete: true)
            #expect(try await post(h, complete, signature: nil).status == .badRequest)
            #expect(try await post(h, complete, signature: "t=1,v1=deadbeef").status == .badRequest)
            var tampered = complete
            tampered[tampered.count - 2] = UInt8(ascii: " ")
            #expect(try await post(h, tampered, signature: sign(h, complete)).status == .badRequest)
            #expect(try await post(h, complete, signature: sign(h, complete, at: -301)).status == .badRequest, "stale")
            let refused = try await post(h, complete, signature: nil)
            #expect(refused.object["error"] as? String == "Webhook signature verification failed")

            let accepted = try await post(h, complete, signature: sign(h, complete))
            #expect(accepted.status == .ok)
            #expect(try await service.getAccountStatus().onboardingComplete)

            // A redelivered event has no second effect, even if its content differs.
            let replay = event(id: "evt_1", account: account, complete: false)
            let duplicate = try await post(h, replay, signature: sign(h, replay))
            #expect(duplicate.status == .ok && duplicate.object["duplicate"] as? Bool == true)
            #expect(try await service.getAccountStatus().onboardingComplete)

            // A later event that stops the conditions holding turns onboarding off again.
            let regressed = event(id: "evt_2", account: account, complete: false)
            #expect(try await post(h, regressed, signature: sign(h, regressed)).status == .ok)
            #expect(try await service.getAccountStatus().onboardingComplete == false)

            // Several v1 signatures (secret rotation): any match is enough.
            let rotated = event(id: "evt_3", account: account, complete: true)
            let header = sign(h, rotated) + ",v1=" + String(repeating: "0", count: 64)
            #expect(try await post(h, rotated, signature: header).status == .ok)
            // Stripe may deliver out of order: an older event does not undo a newer one.
            let stale = event(id: "evt_old", account: account, complete: false, created: 50)
            #expect(try await post(h, stale, signature: sign(h, stale)).status == .ok)
            #expect(try await service.getAccountStatus().onboardingComplete)
            // Unknown types are acknowledged and ignored.
            let other = event(id: "evt_4", type: "payout.paid", account: account, complete: false)
            #expect(try await post(h, other, signature: sign(h, other)).status == .ok)
            #expect(try await service.getAccountStatus().onboardingComplete)
        }
    }

    /// A correctly signed event is acknowledged and recorded whatever its object lacks: an
    /// account.updated with only the fields the completion rule reads is applied; one without
    /// them is recorded and changes nothing; neither is refused (Stripe would retry it for days).
    @Test func signedEventsAreAcknowledgedWhateverTheyLack() async throws {
        try await ConnectHarness.withServer { h in
            let (_, service, _) = try await h.host()
            let account = try await service.createConnectAccount().account.id
            let minimal = Data("""
                {"id": "evt_min", "type": "account.updated", "created": 200,
                 "data": {"object": {"id": "\(account)", "charges_enabled": true, "payouts_enabled": true, "details_submitted": true}}}
                """.utf8)
            #expect(try await post(h, minimal, signature: sign(h, minimal)).status == .ok)
            #expect(try await service.getAccountStatus().onboardingComplete)
            let partial = Data("""
                {"id": "evt_partial", "type": "account.updated", "created": 300, "data": {"object": {"id": "\(account)", "business_type": null}}}
                """.utf8)
            let recorded = try await post(h, partial, signature: sign(h, partial))
            #expect(recorded.status == .ok)
            #expect(try await service.getAccountStatus().onboardingComplete)
            let unknown = Data(#"{"id": "evt_cap", "type": "capability.updated", "data": {"object": {"id": "card_payments"}}}"#.utf8)
            #expect(try await post(h, unknown, signature: sign(h, unknown)).status == .ok)
            let types = try await h.server.environment.database.read { db in
                try await db.raw("SELECT type FROM connect_stripe_events ORDER BY id").all().map { try $0.decode(column: "type", as: String.self) }
            }
            #expect(types == ["capability.updated", "account.updated", "account.updated"])
            // Redelivered, still acknowledged.
            #expect(try await post(h, partial, signature: sign(h, partial)).object["duplicate"] as? Bool == true)
        }
    }

    @Test func sandboxSpeaksStripesErrorsAndChecksTheKey() async throws {
        try await ConnectHarness.withServer { h in
            let wrongKey = try await h.client.execute(uri: "/sandbox/stripe/v1/accounts", method: .post,
                                                      headers: [.authorization: "Bearer sk_test_wrong", .contentType: "application/x-www-form-urlencoded"],
                                                      body: ByteBuffer(string: "type=express"))
            #expect(wrongKey.status == .unauthorized)
            #expect((wrongKey.object["error"] as? [String: Any])?["type"] as? String == "invalid_request_error")
            let stripe = StripeClient(baseURL: h.connect.stripeBaseURL, secretKey: h.connect.stripeSecretKey)
            await #expect(throws: StripeClient.Failure.self) { try await stripe.retrieveAccount("acct_missing") }
            let account = try await stripe.createAccount(email: "a@example.com", userID: "usr_1", idempotencyKey: "k1")
            let replay = try await stripe.createAccount(email: "a@example.com", userID: "usr_1", idempotencyKey: "k1")
            #expect(account == replay, "Stripe idempotency: same key, same account")
            do {
                _ = try await stripe.createAccount(email: "b@example.com", userID: "usr_1", idempotencyKey: "k1")
                Issue.record("reused idempotency key accepted")
            } catch let failure as StripeClient.Failure {
                #expect(failure.type == "idempotency_error")
            }
            #expect(account.metadata?["purse_user_id"] == "usr_1")
        }
    }
}

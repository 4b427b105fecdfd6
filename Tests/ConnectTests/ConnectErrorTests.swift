import ConnectService
import Foundation
import HTTPTypes
import PurseDatabase
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// The seed's remaining error answers, each with its exact JSON.
@Suite("Maly: seed errors")
struct ConnectErrorTests {
    /// Gives the user a stored Connect account without asking Stripe (Stripe is unreachable here).
    func storeAccount(_ h: ConnectHarness, userID: String) async throws {
        try await h.server.environment.database.transaction { db in
            try await db.raw("""
                INSERT INTO connect_accounts (user_id, stripe_account_id, created_at, updated_at)
                VALUES (\(bind: userID), 'acct_1Unreachable', 0, 0)
                """).run()
        }
    }

    @Test func stripeOutagesGiveTheSeeds500s() async throws {
        try await ConnectHarness.withServer(adjust: { $0.stripeBaseURL = "http://127.0.0.1:1" }) { h in
            let (token, userID) = try await h.client.register()
            try await storeAccount(h, userID: userID)
            let link = try await h.client.json(.post, "/api/stripe/connect/create-account-link", token: token, headers: [.origin: h.base.absoluteString])
            #expect(link.status == .internalServerError)
            #expect(link.text == #"{"error":"Failed to create account link"}"#)
            let verify = try await h.client.json(.post, "/api/stripe/connect/verify-account", token: token)
            #expect(verify.status == .internalServerError)
            #expect(verify.text == #"{"error":"Failed to verify account"}"#)
            // Our own database still answers.
            let status = try await h.client.json(.get, "/api/stripe/connect/account-status", token: token)
            #expect(status.text == #"{"hasAccount":true,"onboardingComplete":false}"#)
        }
    }

    @Test func statusFailureIsTheSeeds500() async throws {
        try await ConnectHarness.withServer { h in
            let (token, _) = try await h.client.register()
            await h.server.environment.database.shutdown()
            let status = try await h.client.json(.get, "/api/stripe/connect/account-status", token: token)
            #expect(status.status == .internalServerError)
            #expect(status.text == #"{"error":"Failed to get account status"}"#)
        }
    }

    @Test func verifyWithoutAnAccountSaysSo() async throws {
        try await ConnectHarness.withServer { h in
            let (token, _) = try await h.client.register()
            let verify = try await h.client.json(.post, "/api/stripe/connect/verify-account", token: token)
            #expect(verify.status == .badRequest)
            #expect(verify.text == #"{"error":"User does not have a Stripe Connect account"}"#)
        }
    }

    /// The database failing inside create-account is the seed's 500, in the seed's words.
    @Test func createAccountFailureIsTheSeeds500() async throws {
        try await ConnectHarness.withServer { h in
            let (token, _) = try await h.client.register()
            await h.server.environment.database.shutdown()
            let created = try await h.client.json(.post, "/api/stripe/connect/create-account", token: token)
            #expect(created.status == .internalServerError)
            #expect(created.text == #"{"error":"Failed to create Stripe Connect account"}"#)
        }
    }

    @Test func configuredOriginsAreEnforced() async throws {
        try await ConnectHarness.withServer(adjust: { $0.allowedOrigins = ["https://maly.example"] }) { h in
            let (token, _, _) = try await h.host()
            _ = try await h.client.json(.post, "/api/stripe/connect/create-account", token: token)
            let refused = try await h.client.json(.post, "/api/stripe/connect/create-account-link", token: token, headers: [.origin: "https://evil.example"])
            #expect(refused.status == .badRequest)
            #expect(refused.object["error"] as? String == "Origin https://evil.example is not allowed")
            let allowed = try await h.client.json(.post, "/api/stripe/connect/create-account-link", token: token, headers: [.origin: "https://maly.example"])
            #expect(allowed.status == .ok)
        }
    }

    @Test func productionNeedsRealSecrets() throws {
        var configuration = PurseConfiguration()
        configuration.mode = .production
        configuration.dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-prod-\(UUID().uuidString)").path
        #expect(throws: ConfigurationError.self) { try ConnectConfiguration.from(configuration) }
        configuration.environment = ["STRIPE_SECRET_KEY": "sk_live_x", "STRIPE_WEBHOOK_SECRET": "whsec_x", "CONNECT_ALLOWED_ORIGINS": "https://maly.example"]
        let connect = try ConnectConfiguration.from(configuration)
        #expect(!connect.usesSandbox && connect.stripeBaseURL == "https://api.stripe.com")
    }

    @Test func openAPIDocumentsEveryConnectRoute() async throws {
        try await ConnectHarness.withServer { h in
            let served = Set(h.server.app.routes)
            let documented = Set(h.server.app.document.operations.map { "\($0.method.rawValue) \($0.path)" })
            #expect(served == documented, "undocumented \(served.subtracting(documented)), unserved \(documented.subtracting(served))")
        }
    }
}

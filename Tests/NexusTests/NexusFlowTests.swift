import PurseDatabase
import PurseFormats
import Foundation
import NIOCore
import HTTPTypes
import HummingbirdTesting
import NexusPay
import NexusService
import PurseKit
import PurseHTTP
import PurseServer
import PurseTestSupport
import Testing

@Suite("Nexus: step-up flow")
struct NexusFlowTests {
    @Test func optionsHaveTheSeedShape() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let response = try await h.client.json(.get, "/biometric/auth/options", token: user.token)
            #expect(response.status == .ok)
            let object = response.object
            #expect(Set(object.keys) == ["challenge", "rpId", "allowCredentials", "userVerification", "timeout"])
            #expect(object["rpId"] as? String == "localhost")
            #expect(object["timeout"] as? Int == 60000)
            #expect(object["userVerification"] as? String == "required")
            let challenge = try #require(object["challenge"] as? String)
            #expect((Base64URL.decode(challenge)?.count ?? 0) >= 32)
            let allowed = try #require((object["allowCredentials"] as? [[String: Any]])?.first)
            #expect(allowed["type"] as? String == "public-key")
            #expect(allowed["id"] as? String == (try await user.authenticator.credentialID()))
        }
    }

    @Test func enrolVerifyAndTopUpDebitsTheWallet() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser(funding: 5_000)
            let verify = try await h.verify(user)
            #expect(verify.status == .ok)
            #expect(verify.object["verified"] as? Bool == true)
            #expect(verify.object["expiresIn"] as? Int == 300)
            #expect(verify.object["message"] as? String == "Authentication successful")
            let token = try #require(verify.object["verificationToken"] as? String)

            let receipt = try await user.nexus.topup(NexusHarness.order, authorization: .verificationToken(token), idempotencyKey: "order-1")
            #expect(receipt.status == .completed)
            #expect(receipt.amount == 500)
            #expect(receipt.balance == 4_500)
            #expect(try await h.balance(user) == 4_500)
            #expect(try await user.nexus.balance().cashback == 5)
            let history = try await user.nexus.transactions()
            #expect(history.data.contains { $0.kind == .topup && $0.method == .biometric && $0.amount == 500 })
            #expect(history.data.count == 2, "the funding and the top-up")
            #expect(try await h.audit().isEmpty)
        }
    }

    @Test func topupResponseHasTheSeedShape() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let token = try #require(try await h.verify(user).object["verificationToken"] as? String)
            let response = try await h.client.json(.post, "/user/topup", """
                {"amount": 500, "productCode": "AIRTIME_MTN", "recipientPhone": "08012345678", "verificationToken": "\(token)", "supplierSlug": "mtn", "useCashback": false}
                """, token: user.token, headers: [.idempotencyKey: "k1"])
            #expect(response.status == .ok)
            #expect(response.object["success"] as? Bool == true)
            #expect(response.object["message"] as? String == "Topup successful")
            let data = try #require(response.object["data"] as? [String: Any])
            #expect((data["transactionId"] as? String)?.hasPrefix("tx_") == true)
            #expect(data["status"] as? String == "completed")
            #expect(data["amount"] as? Int == 500 && data["balance"] as? Int == 4_500)
            #expect((data["timestamp"] as? String)?.hasSuffix("Z") == true)
        }
    }

    @Test func unlockIntentTokensCannotBuy() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let options = try await user.nexus.authenticationOptions(intent: .unlock)
            let assertion = try await user.authenticator.makeAssertion(for: options, userVerified: true)
            let token = try await user.nexus.verify(assertion).verificationToken
            await #expect(throws: PurseError.domain("token_wrong_intent", message: "")) {
                try await user.nexus.topup(NexusHarness.order, authorization: .verificationToken(token), idempotencyKey: "x")
            }
            #expect(try await h.balance(user) == 5_000)
        }
    }

    @Test func productsAreSeeded() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.makeUser()
            let products = try await user.nexus.products()
            #expect(Set(products.filter { $0.category == "airtime" }.map(\.supplierSlug)) == ["mtn", "airtel", "glo", "9mobile"])
            #expect(products.contains { $0.category == "data" && $0.supplierSlug == "9mobile" })
            #expect(products.allSatisfy { $0.minAmount <= $0.maxAmount })
        }
    }

    @Test func credentialsCanBeListedAndRemoved() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser(funding: 0)
            let credentials = try await user.nexus.credentials()
            #expect(credentials.count == 1 && credentials[0].name == "Test phone" && credentials[0].attestationFormat == "none")
            let other = try await h.enrolledUser(funding: 0)
            let foreign = try await h.client.json(.delete, "/biometric/credentials/\(credentials[0].id)", token: other.token)
            #expect(foreign.status == .notFound)
            let removed = try await h.client.json(.delete, "/biometric/credentials/\(credentials[0].id)", token: user.token)
            #expect(removed.status == .noContent)
            let options = try await h.client.json(.get, "/biometric/auth/options", token: user.token)
            #expect(options.status == .notFound)
            #expect(options.object["code"] as? String == "no_credentials")
        }
    }

    @Test func theSameCredentialCannotBeRegisteredTwice() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.makeUser()
            let options = try await user.nexus.registrationOptions()
            #expect(options.attestation == "none")
            let registration = try await user.authenticator.makeRegistration(for: options, userVerified: true)
            _ = try await user.nexus.register(registration)
            let again = try await user.nexus.registrationOptions()
            #expect(again.excludeCredentials.map(\.id) == [registration.id])
            var replay = registration
            // Same credential, fresh challenge: rebuild client data for the new challenge.
            let fresh = try await DeviceAuthenticator(store: InMemorySecureStore(), origin: NexusHarness.origin).makeRegistration(for: again, userVerified: true)
            replay.response.clientDataJSON = fresh.response.clientDataJSON
            let response = try await h.post("/biometric/register/verify", replay, token: user.token)
            #expect(response.status == .conflict)
            #expect(response.object["verified"] as? Bool == false)
        }
    }

    @Test func everyNexusRouteNeedsASession() async throws {
        try await NexusHarness.withServer { h in
            for (method, path) in [(HTTPRequest.Method.get, "/biometric/auth/options"), (.post, "/biometric/auth/verify"), (.post, "/user/topup"),
                                   (.get, "/user/balance"), (.get, "/user/transactions"), (.put, "/user/pin"), (.post, "/biometric/register/options"),
                                   (.post, "/sandbox/nexus/fund")] {
                let response = try await h.client.json(method, path, "{}")
                #expect(response.status == .unauthorized, "\(path)")
                // The seed's shapes: {verified: false, message} for verify, {success: false, message, …} elsewhere.
                if path.hasSuffix("/verify") {
                    #expect(response.text == #"{"message":"Authentication required","verified":false}"#, "\(path)")
                } else {
                    #expect(response.text == #"{"code":"unauthorized","message":"Authentication required","success":false}"#, "\(path)")
                }
            }
        }
    }

    @Test func leniencyIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser(funding: 0)
            for amount in ["1.0", "1e2", "100.0"] {
                let response = try await h.client.json(.post, "/sandbox/nexus/fund", #"{"amount":\#(amount)}"#, token: user.token, headers: [.idempotencyKey: UUID().uuidString])
                #expect(response.status == .badRequest, "\(amount)")
                #expect((response.object["message"] as? String)?.contains("whole number") == true, "\(response.text)")
            }
            for text in [#"{"amount":1,}"#, #"{"amount":1,"amount":2}"#] {
                let response = try await h.client.json(.post, "/sandbox/nexus/fund", text, token: user.token, headers: [.idempotencyKey: UUID().uuidString])
                #expect(response.status == .badRequest, "\(text)")
            }
            let form = try await h.client.execute(uri: "/sandbox/nexus/fund", method: .post, headers: [
                .authorization: "Bearer \(user.token)", .contentType: "application/x-www-form-urlencoded", .idempotencyKey: "form-1",
            ], body: ByteBuffer(string: #"{"amount":100}"#))
            #expect(form.status == .unsupportedMediaType)
            #expect(form.body.getString(at: 0, length: form.body.readableBytes)?.contains("unsupported_media_type") == true)
            #expect(try await h.balance(user) == 0, "nothing was credited")
            // Stored text is bounded in Unicode scalars: one character with 400,000 combining marks is not a short name.
            let name = "a" + String(repeating: "\u{0301}", count: 400_000)
            let register = try await h.client.json(.post, "/auth/register", #"{"email":"marks@example.com","password":"correct horse","name":"\#(name)"}"#)
            #expect(register.status == .badRequest && register.text.contains("at most 100 characters"), "\(register.status)")
        }
    }

    @Test func theFoundationsRefusalsComeInTheSeedsShapes() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            // A malformed Idempotency-Key (the idempotency layer).
            let badKey = try await h.client.json(.post, "/sandbox/nexus/fund", #"{"amount":10}"#, token: user.token, headers: [.idempotencyKey: String(repeating: "k", count: 300)])
            #expect(badKey.status == .badRequest)
            #expect(badKey.object["success"] as? Bool == false && badKey.object["code"] as? String == "invalid_request", "\(badKey.text)")
            // The same key with another body.
            _ = try await h.client.json(.post, "/sandbox/nexus/fund", #"{"amount":10}"#, token: user.token, headers: [.idempotencyKey: "k-1"])
            let reused = try await h.client.json(.post, "/sandbox/nexus/fund", #"{"amount":11}"#, token: user.token, headers: [.idempotencyKey: "k-1"])
            #expect(reused.status == .unprocessableContent)
            #expect(reused.object["success"] as? Bool == false && reused.object["code"] as? String == "idempotency_key_reused", "\(reused.text)")
            // Malformed JSON on verify.
            let verify = try await h.client.json(.post, "/biometric/auth/verify", #"{"id":1,}"#, token: user.token)
            #expect(verify.status == .badRequest)
            #expect(verify.object["verified"] as? Bool == false && verify.object["message"] is String, "\(verify.text)")
            // A served path with a method it does not serve: 405 and Allow, in the seed's shapes.
            let wrongMethod = try await h.client.json(.delete, "/sandbox/nexus/fund", nil, token: user.token)
            #expect(wrongMethod.status == .methodNotAllowed)
            #expect(wrongMethod.headers[.allow] == "POST")
            #expect(wrongMethod.object["success"] as? Bool == false && wrongMethod.object["code"] as? String == "method_not_allowed", "\(wrongMethod.text)")
            let wrongVerify = try await h.client.json(.get, "/biometric/auth/verify", nil, token: user.token)
            #expect(wrongVerify.status == .methodNotAllowed)
            #expect(wrongVerify.object["verified"] as? Bool == false, "\(wrongVerify.text)")
        }
    }

    @Test func sandboxFundingIsOffInProduction() async throws {
        try await NexusHarness.withServer(production: true) { h in
            let (token, _) = try await h.client.register()
            let response = try await h.client.json(.post, "/sandbox/nexus/fund", #"{"amount": 100}"#, token: token, headers: [.idempotencyKey: "a"])
            #expect(response.status == .notFound)
        }
    }

    @Test func openAPIDocumentsEveryNexusRoute() async throws {
        try await NexusHarness.withServer { h in
            let served = Set(h.server.app.routes)
            let documented = Set(h.server.app.document.operations.map { "\($0.method.rawValue) \($0.path)" })
            #expect(served == documented, "undocumented \(served.subtracting(documented)), unserved \(documented.subtracting(served))")
        }
    }

    @Test func historyPagesWithACursor() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser(funding: 0)
            for _ in 0..<5 { _ = try await user.nexus.fund(amount: 100) }
            let first = try await user.nexus.transactions(limit: 2)
            #expect(first.data.count == 2 && first.hasMore)
            let second = try await user.nexus.transactions(limit: 2, cursor: first.nextCursor)
            let third = try await user.nexus.transactions(limit: 2, cursor: second.nextCursor)
            #expect(third.data.count == 1 && !third.hasMore)
            #expect(Set((first.data + second.data + third.data).map(\.transactionId)).count == 5)
            let bad = try await h.client.json(.get, "/user/transactions?cursor=%%%", token: user.token)
            #expect(bad.status == .badRequest)
        }
    }
}

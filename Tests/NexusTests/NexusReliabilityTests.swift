import Foundation
import HTTPTypes
import HummingbirdTesting
import NexusPay
import NexusService
import PurseDatabase
import PurseFormats
import PurseKit
import PurseHTTP
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// Every refusal answers with the seed's error JSON and leaves the balance as it was.
@Suite("Nexus: reliability")
struct NexusReliabilityTests {
    /// Asserts a verification refusal: status, `{"verified": false, "message": …}`, balance untouched.
    func expectRefused(_ response: TestResponse, _ message: String, status: HTTPResponse.Status = .unauthorized,
                       user: NexusHarness.User, h: NexusHarness, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        #expect(Set(response.object.keys) == ["verified", "message"], sourceLocation: sourceLocation)
        #expect(response.object["verified"] as? Bool == false, sourceLocation: sourceLocation)
        #expect(response.object["message"] as? String == message, sourceLocation: sourceLocation)
        #expect(try await h.balance(user) == 5_000, sourceLocation: sourceLocation)
    }

    /// An authenticator that claims `user`'s credential id but holds another private key.
    func impostor(of user: NexusHarness.User, counter: UInt32) async throws -> DeviceAuthenticator {
        let store = InMemorySecureStore()
        try await store.setString(try #require(try await user.authenticator.credentialID()), for: "nexus.credential.id")
        try await store.setString(String(counter), for: "nexus.credential.counter")
        return DeviceAuthenticator(store: store, origin: NexusHarness.origin)
    }

    @Test func replayedChallengeIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let options = try await user.nexus.authenticationOptions()
            let first = try await user.authenticator.makeAssertion(for: options, userVerified: true)
            #expect(try await h.post("/biometric/auth/verify", first, token: user.token).status == .ok)
            let second = try await user.authenticator.makeAssertion(for: options, userVerified: true)
            try await expectRefused(try await h.post("/biometric/auth/verify", second, token: user.token), "Challenge already used", user: user, h: h)
        }
    }

    @Test func anotherUsersChallengeIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let other = try await h.enrolledUser()
            let theirs = try await other.nexus.authenticationOptions()
            var mine = try await user.nexus.authenticationOptions()
            mine.challenge = theirs.challenge
            let assertion = try await user.authenticator.makeAssertion(for: mine, userVerified: true)
            try await expectRefused(try await h.post("/biometric/auth/verify", assertion, token: user.token), "Challenge was not issued to this user", user: user, h: h)
        }
    }

    /// Assertions are checked outside the write transaction; spending the challenge inside it is
    /// what decides. Of 20 concurrent answers to one challenge exactly one verifies, and a failed
    /// attempt spends its challenge too.
    @Test func aChallengeIsSpentOnceUnderConcurrencyAndByFailedAttempts() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let options = try await user.nexus.authenticationOptions()
            var assertions: [Assertion] = []
            for _ in 0..<20 { assertions.append(try await user.authenticator.makeAssertion(for: options, userVerified: true)) }
            let statuses = try await withThrowingTaskGroup(of: (HTTPResponse.Status, String).self) { group in
                for assertion in assertions {
                    group.addTask {
                        let response = try await h.post("/biometric/auth/verify", assertion, token: user.token)
                        return (response.status, response.object["message"] as? String ?? "")
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0.0 == .ok }.count == 1)
            #expect(statuses.filter { $0.0 == .unauthorized && $0.1 == "Challenge already used" }.count == 19)

            let impostor = try await impostor(of: user, counter: 1000)
            let next = try await user.nexus.authenticationOptions()
            let forged = try await impostor.makeAssertion(for: next, userVerified: true)
            try await expectRefused(try await h.post("/biometric/auth/verify", forged, token: user.token), "Signature verification failed", user: user, h: h)
            let genuine = try await user.authenticator.makeAssertion(for: next, userVerified: true)
            try await expectRefused(try await h.post("/biometric/auth/verify", genuine, token: user.token), "Challenge already used", user: user, h: h)
        }
    }

    @Test func expiredChallengeIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let options = try await user.nexus.authenticationOptions()
            h.server.clock.advance(by: 61)
            let assertion = try await user.authenticator.makeAssertion(for: options, userVerified: true)
            try await expectRefused(try await h.post("/biometric/auth/verify", assertion, token: user.token), "Challenge expired", user: user, h: h)
        }
    }

    @Test func unknownChallengeIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            var options = try await user.nexus.authenticationOptions()
            options.challenge = Base64URL.encode(Data(repeating: 7, count: 32))
            let assertion = try await user.authenticator.makeAssertion(for: options, userVerified: true)
            try await expectRefused(try await h.post("/biometric/auth/verify", assertion, token: user.token), "Challenge not recognised", user: user, h: h)
        }
    }

    @Test func wrongOriginIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let options = try await user.nexus.authenticationOptions()
            let evil = DeviceAuthenticator(store: user.store, origin: "https://evil.example")
            let assertion = try await evil.makeAssertion(for: options, userVerified: true)
            try await expectRefused(try await h.post("/biometric/auth/verify", assertion, token: user.token), "Origin not allowed", user: user, h: h)
        }
    }

    @Test func wrongRPIDIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            var options = try await user.nexus.authenticationOptions()
            options.rpId = "evil.example"
            let assertion = try await user.authenticator.makeAssertion(for: options, userVerified: true)
            try await expectRefused(try await h.post("/biometric/auth/verify", assertion, token: user.token), "RP ID mismatch", user: user, h: h)
        }
    }

    @Test func missingUserVerificationIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            try await expectRefused(try await h.verify(user, userVerified: false), "User verification required", user: user, h: h)
        }
    }

    @Test func signatureByAnotherKeyIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let impostor = try await impostor(of: user, counter: 10)
            let options = try await user.nexus.authenticationOptions()
            let assertion = try await impostor.makeAssertion(for: options, userVerified: true)
            try await expectRefused(try await h.post("/biometric/auth/verify", assertion, token: user.token), "Signature verification failed", user: user, h: h)
        }
    }

    @Test func tamperedClientDataIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let response = try await h.verify(user) { assertion in
                // Valid JSON with the right challenge, but not what was signed.
                var json = try! JSONSerialization.jsonObject(with: Base64URL.decode(assertion.response.clientDataJSON)!) as! [String: Any]
                json["crossOrigin"] = true
                assertion.response.clientDataJSON = Base64URL.encode(try! JSONSerialization.data(withJSONObject: json))
            }
            try await expectRefused(response, "Signature verification failed", user: user, h: h)
        }
    }

    @Test func signCountRegressionIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            #expect(try await h.verify(user).status == .ok)
            #expect(try await h.verify(user).status == .ok)
            try await user.store.setString("1", for: "nexus.credential.counter")  // a clone replaying an old counter
            try await expectRefused(try await h.verify(user), "Sign count did not increase (possible cloned authenticator)", user: user, h: h)
        }
    }

    @Test func unknownCredentialIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let response = try await h.verify(user) { assertion in
                assertion.id = Base64URL.encode(Data(repeating: 9, count: 16))
                assertion.rawId = assertion.id
            }
            try await expectRefused(response, "Unknown credential", user: user, h: h)
        }
    }

    @Test func anotherUsersCredentialIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let other = try await h.enrolledUser()
            // The other user's device answers this user's challenge.
            let options = try await user.nexus.authenticationOptions()
            var open = options
            open.allowCredentials = []
            let assertion = try await other.authenticator.makeAssertion(for: open, userVerified: true)
            try await expectRefused(try await h.post("/biometric/auth/verify", assertion, token: user.token), "Credential does not belong to this user", user: user, h: h)
        }
    }

    @Test func malformedProofsAre400() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let cases: [(String, String)] = [
                ("{", "Malformed JSON body: expected a key at byte 1"),
                (#"{"id": "x"}"#, "Missing required field 'rawId'"),
                (#"{"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {"clientDataJSON": "***", "authenticatorData": "AAAA", "signature": "AAAA"}}"#,
                 "clientDataJSON is not valid base64url"),
                (#"{"id": "AAAA", "rawId": "AAAA", "type": "public-key", "response": {"clientDataJSON": "bm90IGpzb24", "authenticatorData": "AAAA", "signature": "AAAA"}}"#,
                 "clientDataJSON is not valid JSON"),
                (#"{"id": "AAAA", "rawId": "BBBB", "type": "public-key", "response": {"clientDataJSON": "e30", "authenticatorData": "AAAA", "signature": "AAAA"}}"#,
                 "id and rawId must be the same base64url credential id"),
                (#"{"id": "AAAA", "rawId": "AAAA", "type": "password", "response": {"clientDataJSON": "e30", "authenticatorData": "AAAA", "signature": "AAAA"}}"#,
                 "type must be public-key"),
            ]
            for (body, message) in cases {
                let response = try await h.client.json(.post, "/biometric/auth/verify", body, token: user.token)
                try await expectRefused(response, message, status: .badRequest, user: user, h: h)
            }
            // Garbage authenticator data and signature bytes, with a real challenge.
            let garbage = try await h.verify(user) { assertion in
                assertion.response.authenticatorData = Base64URL.encode(Data([1, 2, 3]))
            }
            try await expectRefused(garbage, "authenticatorData is shorter than 37 bytes", user: user, h: h)
        }
    }

    // MARK: verificationToken

    func token(for user: NexusHarness.User, h: NexusHarness) async throws -> String {
        try #require(try await h.verify(user).object["verificationToken"] as? String)
    }

    func topup(_ h: NexusHarness, _ user: NexusHarness.User, auth: String, key: String = UUID().uuidString, amount: Int = 500, phone: String = "08012345678",
               product: String = "AIRTIME_MTN", supplier: String? = "mtn") async throws -> TestResponse {
        let supplierField = supplier.map { #", "supplierSlug": "\#($0)""# } ?? ""
        return try await h.client.json(.post, "/user/topup", """
            {"amount": \(amount), "productCode": "\(product)", "recipientPhone": "\(phone)", \(auth)\(supplierField), "useCashback": false}
            """, token: user.token, headers: [.idempotencyKey: key])
    }

    func expectTopupRefused(_ response: TestResponse, code: String, status: HTTPResponse.Status, user: NexusHarness.User, h: NexusHarness,
                            balance: Int = 5_000, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation)
        #expect(response.object["success"] as? Bool == false, sourceLocation: sourceLocation)
        #expect(response.object["code"] as? String == code, "\(response.text)", sourceLocation: sourceLocation)
        #expect((response.object["message"] as? String)?.isEmpty == false, sourceLocation: sourceLocation)
        #expect(try await h.balance(user) == balance, sourceLocation: sourceLocation)
    }

    @Test func replayedTokenIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let token = try await token(for: user, h: h)
            #expect(try await topup(h, user, auth: #""verificationToken": "\#(token)""#).status == .ok)
            try await expectTopupRefused(try await topup(h, user, auth: #""verificationToken": "\#(token)""#),
                                         code: "token_used", status: .unauthorized, user: user, h: h, balance: 4_500)
        }
    }

    @Test func expiredTokenIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let token = try await token(for: user, h: h)
            h.server.clock.advance(by: 301)
            try await expectTopupRefused(try await topup(h, user, auth: #""verificationToken": "\#(token)""#), code: "token_expired", status: .unauthorized, user: user, h: h)
        }
    }

    @Test func anotherUsersTokenIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let other = try await h.enrolledUser()
            let theirs = try await token(for: other, h: h)
            try await expectTopupRefused(try await topup(h, user, auth: #""verificationToken": "\#(theirs)""#), code: "token_wrong_user", status: .unauthorized, user: user, h: h)
            // And it is still good for its owner.
            #expect(try await topup(h, other, auth: #""verificationToken": "\#(theirs)""#).status == .ok)
        }
    }

    @Test func forgedAndSessionTokensAreRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            try await expectTopupRefused(try await topup(h, user, auth: #""verificationToken": "\#(user.token)""#), code: "token_invalid", status: .unauthorized, user: user, h: h)
            try await expectTopupRefused(try await topup(h, user, auth: #""verificationToken": "eyJhbGciOiJub25lIn0.e30.""#), code: "token_invalid", status: .unauthorized, user: user, h: h)
        }
    }

    @Test func invalidOrdersAreRefusedWithTheFieldNamed() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let token = try await token(for: user, h: h)
            let auth = #""verificationToken": "\#(token)""#
            for phone in ["0801234567", "080123456789", "8012345678", "+2340801234567", "+23480123456789", "0801234567a", "00012345678"] {
                let response = try await topup(h, user, auth: auth, phone: phone)
                try await expectTopupRefused(response, code: "invalid_phone", status: .badRequest, user: user, h: h)
                #expect(response.object["param"] as? String == "recipientPhone")
            }
            try await expectTopupRefused(try await topup(h, user, auth: auth, product: "AIRTIME_NOPE"), code: "unknown_product", status: .badRequest, user: user, h: h)
            try await expectTopupRefused(try await topup(h, user, auth: auth, supplier: "glo"), code: "supplier_mismatch", status: .badRequest, user: user, h: h)
            try await expectTopupRefused(try await topup(h, user, auth: auth, amount: 49), code: "invalid_amount", status: .badRequest, user: user, h: h)
            try await expectTopupRefused(try await topup(h, user, auth: auth, amount: 50_001), code: "invalid_amount", status: .badRequest, user: user, h: h)
            try await expectTopupRefused(try await topup(h, user, auth: auth, amount: 999, product: "DATA_MTN_1GB"), code: "invalid_amount", status: .badRequest, user: user, h: h)
            try await expectTopupRefused(try await topup(h, user, auth: auth, amount: 10_000), code: "insufficient_balance",
                                         status: HTTPResponse.Status(code: 402), user: user, h: h)
            try await expectTopupRefused(try await topup(h, user, auth: #""verificationToken": "\#(token)", "pin": "2580""#), code: "ambiguous_authorisation", status: .badRequest, user: user, h: h)
            try await expectTopupRefused(try await topup(h, user, auth: #""pin": "2580""#), code: "pin_not_set", status: .badRequest, user: user, h: h)
            let wrongType = try await h.client.json(.post, "/user/topup", #"{"amount": "500", "productCode": "AIRTIME_MTN", "recipientPhone": "08012345678"}"#,
                                                    token: user.token, headers: [.idempotencyKey: "t"])
            try await expectTopupRefused(wrongType, code: "invalid_request", status: .badRequest, user: user, h: h)
            #expect(wrongType.object["message"] as? String == "Field 'amount' has the wrong type (expected an integer)")
            // The token was never spent by any refusal: it still buys.
            let ok = try await topup(h, user, auth: auth, amount: 500, phone: "+2348012345678")
            #expect(ok.status == .ok)
        }
    }

    /// The seed's requests as written: no Idempotency-Key (a verification token is single-use, so
    /// the biometric path stays exactly-once), and the PIN body `{amount, productCode, pin}`,
    /// which tops up the account's own phone — refused clearly when the account has none.
    @Test func seedLiteralTopupsWithoutKeyOrRecipient() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let token = try await token(for: user, h: h)
            let body = #"{"amount": 500, "productCode": "AIRTIME_MTN", "recipientPhone": "08012345678", "verificationToken": "\#(token)"}"#
            let first = try await h.client.json(.post, "/user/topup", body, token: user.token)
            #expect(first.status == .ok, "\(first.text)")
            let again = try await h.client.json(.post, "/user/topup", body, token: user.token)
            #expect(again.status == .unauthorized && again.object["code"] as? String == "token_used")
            #expect(try await h.balance(user) == 4_500)

            try await user.nexus.setPin("2580")
            let pinBody = #"{"amount": 200, "productCode": "AIRTIME_MTN", "pin": "2580"}"#
            let noPhone = try await h.client.json(.post, "/user/topup", pinBody, token: user.token)
            try await expectTopupRefused(noPhone, code: "recipient_required", status: .badRequest, user: user, h: h, balance: 4_500)
            try await h.server.environment.database.transaction { db in
                try await db.raw("UPDATE users SET phone = '+2348031234567' WHERE id = \(bind: user.id.rawValue)").run()
            }
            let own = try await h.client.json(.post, "/user/topup", pinBody, token: user.token)
            #expect(own.status == .ok, "\(own.text)")
            let id = try #require((own.object["data"] as? [String: Any])?["transactionId"] as? String)
            let recipient = try await h.server.environment.database.read { db in
                try await db.raw("SELECT recipient_phone FROM nexus_transactions WHERE id = \(bind: id)").first()?.decode(column: "recipient_phone", as: String.self)
            }
            #expect(recipient == "+2348031234567")
            #expect(try await h.balance(user) == 4_300)
            // A malformed key is still refused.
            let badKey = try await h.client.json(.post, "/user/topup", pinBody, token: user.token, headers: [.idempotencyKey: ""])
            #expect(badKey.status == .badRequest)
        }
    }

    /// Bodies that lenient decoders forgive are refused before anything is decoded.
    @Test func lenientJSONIsRefused() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            try await user.nexus.setPin("2580")
            for body in [
                #"{"amount": 500, "productCode": "AIRTIME_MTN", "recipientPhone": "08012345678", "pin": "2580",}"#,
                #"{"amount": 500, "amount": 50000, "productCode": "AIRTIME_MTN", "recipientPhone": "08012345678", "pin": "2580"}"#,
            ] {
                let response = try await h.client.json(.post, "/user/topup", body, token: user.token, headers: [.idempotencyKey: UUID().uuidString])
                try await expectTopupRefused(response, code: "invalid_request", status: .badRequest, user: user, h: h)
                #expect((response.object["message"] as? String)?.hasPrefix("Malformed JSON body") == true, "\(response.text)")
            }
        }
    }

    /// 100 copies of one top-up at once, under one key: one charge, and every copy gets the first
    /// answer — the delivery's verdict — never the pending answer stored before it (a copy that
    /// arrives meanwhile waits for the verdict).
    @Test(arguments: TestEngines.all)
    func aHundredCopiesOfOneKeyGetOneAnswer(engine: DatabaseEngine) async throws {
        try await NexusHarness.withServer(engine: engine) { h in
            let user = try await h.enrolledUser()
            let token = try await token(for: user, h: h)
            let answers = try await withThrowingTaskGroup(of: (Int, String?, String?).self, returning: [(Int, String?, String?)].self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        let answer = try await topup(h, user, auth: #""verificationToken": "\#(token)""#, key: "one-top-up")
                        let data = answer.object["data"] as? [String: Any]
                        return (Int(answer.status.code), data?["status"] as? String, data?["transactionId"] as? String)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.0 == 200 }, "\(Set(answers.map(\.0)))")
            #expect(Set(answers.map(\.1)).count == 1 && answers.first?.1 != "pending", "\(Dictionary(grouping: answers.map { $0.1 ?? "-" }, by: { $0 }).mapValues(\.count))")
            #expect(Set(answers.map(\.2)).count == 1)
            #expect(try await h.balance(user) == 4_500, "one charge")
        }
    }

    @Test func reusedKeyWithAnotherBodyIs422() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let first = try await token(for: user, h: h)
            let second = try await token(for: user, h: h)
            #expect(try await topup(h, user, auth: #""verificationToken": "\#(first)""#, key: "same").status == .ok)
            let reused = try await topup(h, user, auth: #""verificationToken": "\#(second)""#, key: "same", amount: 600)
            #expect(reused.status == .unprocessableContent)
            #expect(try await h.balance(user) == 4_500)
        }
    }

    // MARK: Authentication

    /// A validly signed session token of a user this database does not have signs nobody in:
    /// 401 on every route, never a 500 from a foreign key nor an empty wallet.
    @Test func aTokenOfAnUnknownUserIsRefusedEverywhere() async throws {
        try await NexusHarness.withServer { h in
            let token = try await h.server.environment.tokens.issue(for: UserID("usr_gone"), purpose: TokenService.sessionPurpose, lifetime: 3600).token
            let requests: [(HTTPRequest.Method, String, String?)] = [
                (.get, "/auth/me", nil), (.get, "/user/balance", nil), (.get, "/user/transactions", nil),
                (.post, "/sandbox/nexus/fund", #"{"amount": 100}"#), (.put, "/user/pin", #"{"pin": "2580"}"#),
                (.post, "/biometric/register/options", "{}"),
            ]
            for (method, path, body) in requests {
                let response = try await h.client.json(method, path, body, token: token, headers: [.idempotencyKey: UUID().uuidString])
                #expect(response.status == .unauthorized, "\(method) \(path): \(response.text)")
            }
        }
    }

    // MARK: PIN

    @Test func pinLockoutAfterFiveWrongPins() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            try await user.nexus.setPin("2580")
            for left in [4, 3, 2, 1] {
                let response = try await topup(h, user, auth: #""pin": "1111""#)
                try await expectTopupRefused(response, code: "incorrect_pin", status: .unauthorized, user: user, h: h)
                #expect(response.object["message"] as? String == "Incorrect PIN. \(left) attempt\(left == 1 ? "" : "s") left.")
            }
            let locked = try await topup(h, user, auth: #""pin": "1111""#)
            try await expectTopupRefused(locked, code: "pin_locked", status: HTTPResponse.Status(code: 423), user: user, h: h)
            #expect(locked.object["message"] as? String == "Too many wrong PINs. PIN top-ups are locked for 15 minutes. Use biometrics or try again later.")
            #expect(locked.headers[.retryAfter] == "900")
            // Even the right PIN waits.
            try await expectTopupRefused(try await topup(h, user, auth: #""pin": "2580""#), code: "pin_locked", status: HTTPResponse.Status(code: 423), user: user, h: h)
            // Biometrics still work while the PIN is locked.
            let token = try await token(for: user, h: h)
            #expect(try await topup(h, user, auth: #""verificationToken": "\#(token)""#).status == .ok)
            h.server.clock.advance(by: 15 * 60 + 1)
            let ok = try await topup(h, user, auth: #""pin": "2580""#)
            #expect(ok.status == .ok)
            #expect(try await h.balance(user) == 4_000)
        }
    }

    /// 99 wrong PINs at once: the attempts are counted before any PIN is compared, so five are
    /// compared (four told how many are left, the fifth locks) and the rest are refused unseen —
    /// asked to retry while the five are compared, locked out after;
    /// the right PIN then waits out the lockout like any other, and so does changing the PIN.
    /// After the lockout the count starts again.
    @Test(arguments: TestEngines.all)
    func concurrentWrongPinsCompareAtMostTheLimit(engine: DatabaseEngine) async throws {
        try await NexusHarness.withServer(engine: engine) { h in
            let user = try await h.enrolledUser()
            try await user.nexus.setPin("2580")
            let codes = try await withThrowingTaskGroup(of: String?.self, returning: [String?].self) { group in
                for index in 0..<99 {
                    group.addTask {
                        let wrong = String(format: "%04d", 1000 + index)
                        return try await topup(h, user, auth: #""pin": "\#(wrong)""#).object["code"] as? String
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(codes.filter { $0 == "incorrect_pin" }.count == 4)
            #expect(codes.filter { $0 == "pin_locked" || $0 == "pin_busy" }.count == 95)
            #expect(codes.contains("pin_locked"))
            try await expectTopupRefused(try await topup(h, user, auth: #""pin": "2580""#), code: "pin_locked", status: HTTPResponse.Status(code: 423), user: user, h: h)
            let change = try await h.client.json(.put, "/user/pin", #"{"pin": "8642", "currentPin": "2580"}"#, token: user.token)
            #expect(change.status.code == 423)
            h.server.clock.advance(by: 15 * 60 + 1)
            let again = try await topup(h, user, auth: #""pin": "1111""#)
            #expect(again.object["message"] as? String == "Incorrect PIN. 4 attempts left.")
            #expect(try await topup(h, user, auth: #""pin": "2580""#).status == .ok)
            #expect(try await topup(h, user, auth: #""pin": "1111""#).object["message"] as? String == "Incorrect PIN. 4 attempts left.")
        }
    }

    /// A burst of top-ups with the right PIN never locks the PIN: past the number of checks the
    /// PIN allows at once they are asked to retry (429), and every retry goes through.
    @Test(arguments: TestEngines.all)
    func concurrentRightPinsNeverLock(engine: DatabaseEngine) async throws {
        try await NexusHarness.withServer(engine: engine) { h in
            let user = try await h.enrolledUser()
            try await user.nexus.setPin("2580")
            let codes = try await withThrowingTaskGroup(of: (Int, String?).self, returning: [(Int, String?)].self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        let answer = try await topup(h, user, auth: #""pin": "2580""#, amount: 50)
                        return (Int(answer.status.code), answer.object["code"] as? String)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(!codes.contains { $0.1 == "pin_locked" || $0.1 == "incorrect_pin" })
            #expect(codes.allSatisfy { $0.0 == 200 || $0.1 == "pin_busy" && $0.0 == 429 })
            #expect(try await topup(h, user, auth: #""pin": "2580""#, amount: 50).status == .ok)
        }
    }

    @Test func pinRulesAndChanges() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            for weak in ["1234", "0000", "9876", "123", "12345", "12a4"] {
                await #expect(throws: PurseError.self) { try await user.nexus.setPin(weak) }
            }
            try await user.nexus.setPin("2580")
            await #expect(throws: PurseError.domain("authorisation_required", message: "")) { try await user.nexus.setPin("1357") }
            await #expect(throws: PurseError.domain("incorrect_pin", message: "")) { try await user.nexus.setPin("1357", currentPin: "1111") }
            try await user.nexus.setPin("1357", currentPin: "2580")
            #expect(try await topup(h, user, auth: #""pin": "1357""#).status == .ok)
            // A fresh step-up token may replace the current PIN (forgotten PIN).
            let token = try await token(for: user, h: h)
            let reset = try await h.client.json(.put, "/user/pin", #"{"pin": "8642", "verificationToken": "\#(token)"}"#, token: user.token)
            #expect(reset.status == .ok)
            #expect(try await topup(h, user, auth: #""pin": "8642""#).status == .ok)
        }
    }

    // MARK: Concurrency

    @Test(arguments: TestEngines.all)
    func twoHundredRetriesWithOneKeyHaveOneEffect(engine: DatabaseEngine) async throws {
        try await NexusHarness.withServer(engine: engine) { h in
            let user = try await h.enrolledUser()
            let token = try await token(for: user, h: h)
            let statuses = try await withThrowingTaskGroup(of: (Int, String).self, returning: [(Int, String)].self) { group in
                for _ in 0..<200 {
                    group.addTask {
                        let response = try await topup(h, user, auth: #""verificationToken": "\#(token)""#, key: "one-key")
                        return (Int(response.status.code), response.text)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0.0 == 200 })
            // Every retry answers for the one purchase: the request that made it with the
            // delivery's verdict, retries racing it with the purchase as recorded (pending) —
            // never a second purchase. Once it has answered, a retry gets exactly its answer.
            struct Answer: Decodable { struct Data: Decodable { var transactionId: String; var status: String }; var data: Data }
            let answers = try statuses.map { try JSONDecoder().decode(Answer.self, from: Foundation.Data($0.1.utf8)).data }
            #expect(Set(answers.map(\.transactionId)).count == 1, "every retry names the first purchase")
            #expect(answers.filter { $0.status == "completed" }.count >= 1)
            #expect(answers.allSatisfy { $0.status == "completed" || $0.status == "pending" })
            let again = try await topup(h, user, auth: #""verificationToken": "\#(token)""#, key: "one-key")
            let first = try #require(statuses.first { $0.1.contains(#""status":"completed""#) })
            #expect(again.status.code == 200 && again.text == first.1, "a later retry is sent the first request's answer")
            #expect(try await h.ledgerTransactionCount(kind: "nexus.topup") == 1)
            #expect(try await h.ledgerTransactionCount(kind: "nexus.topup.delivered") == 1)
            #expect(try await h.balance(user) == 4_500)
            #expect(try await h.audit().isEmpty)
        }
    }

    /// 100 copies of one PIN top-up with one Idempotency-Key, sent at once: the PIN check lets a
    /// few through at a time, and the copies waiting for it get the first one's answer instead of
    /// `pin_busy`. One purchase, and the PIN is not locked.
    @Test(arguments: TestEngines.all)
    func aHundredPinRetriesWithOneKeyGetTheStoredAnswer(engine: DatabaseEngine) async throws {
        try await NexusHarness.withServer(engine: engine) { h in
            let user = try await h.enrolledUser()
            try await user.nexus.setPin("2580")
            let answers = try await withThrowingTaskGroup(of: (Int, String).self, returning: [(Int, String)].self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        let response = try await topup(h, user, auth: #""pin": "2580""#, key: "pin-key")
                        return (Int(response.status.code), response.text)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(answers.allSatisfy { $0.0 == 200 }, "\(answers.filter { $0.0 != 200 }.prefix(3))")
            #expect(try await h.ledgerTransactionCount(kind: "nexus.topup") == 1)
            #expect(try await h.balance(user) == 4_500)
        }
    }

    @Test(arguments: TestEngines.all)
    func twoHundredTopupsOnABalanceForFifty(engine: DatabaseEngine) async throws {
        try await NexusHarness.withServer(engine: engine) { h in
            let user = try await h.enrolledUser(funding: 50 * 100)
            var tokens: [String] = []
            for _ in 0..<200 {
                tokens.append(try await h.server.environment.tokens.issue(for: user.id, purpose: "nexus.verification", lifetime: 300, intent: "transaction").token)
            }
            let results = try await withThrowingTaskGroup(of: (Int, String?).self, returning: [(Int, String?)].self) { group in
                for token in tokens {
                    group.addTask {
                        let response = try await topup(h, user, auth: #""verificationToken": "\#(token)""#, amount: 100)
                        return (Int(response.status.code), response.object["code"] as? String)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { $0.0 == 200 }.count == 50)
            #expect(results.filter { $0.0 == 402 && $0.1 == "insufficient_balance" }.count == 150)
            #expect(try await h.balance(user) == 0)
            #expect(try await h.ledgerTransactionCount(kind: "nexus.topup") == 50)
            #expect(try await h.audit().isEmpty)
        }
    }
}

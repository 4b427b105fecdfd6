import Crypto
import Foundation
import PurseDatabase
import PurseFormats
@testable import PurseServer
import PurseTestSupport
import Testing

/// Verified tokens are remembered, but expiry, purpose and the exact bytes still decide.
@Suite("Token service")
struct TokenServiceTests {
    @Test func rememberedTokensAreStillCheckedOnEveryUse() async throws {
        let clock = TestClock()
        let tokens = await TokenService(secret: Array(repeating: 7, count: 32), now: clock.closure)
        let user = UserID("usr_1")
        let (token, claims) = try await tokens.issue(for: user, purpose: TokenService.sessionPurpose, lifetime: 60)

        #expect(try await tokens.verify(token, purpose: TokenService.sessionPurpose) == claims)
        #expect(try await tokens.verify(token, purpose: TokenService.sessionPurpose) == claims)
        await #expect(throws: TokenError.wrongPurpose) { try await tokens.verify(token, purpose: "nexus.verification") }

        // Another signature, another payload, another key: never served from memory.
        var characters = Array(token)
        let index = characters.count - 10
        characters[index] = characters[index] == "A" ? "B" : "A"
        await #expect(throws: TokenError.invalid) { try await tokens.verify(String(characters), purpose: TokenService.sessionPurpose) }
        let other = await TokenService(secret: Array(repeating: 8, count: 32), now: clock.closure)
        await #expect(throws: TokenError.invalid) { try await other.verify(token, purpose: TokenService.sessionPurpose) }

        clock.advance(by: 61)
        await #expect(throws: TokenError.expired) { try await tokens.verify(token, purpose: TokenService.sessionPurpose) }
    }

    /// Step-up tokens are used once: they are not remembered once verified, so they cannot push
    /// sessions out. Until then the claims of one this process issued wait for it (its first
    /// verification skips parsing and the signature), and the next verification is a full one.
    @Test func onlySessionsAreRemembered() async throws {
        let tokens = await TokenService(secret: Array(repeating: 7, count: 32), now: TestClock().closure)
        let session = try await tokens.issue(for: UserID("usr_1"), purpose: TokenService.sessionPurpose, lifetime: 60)
        let stepUp = try await tokens.issue(for: UserID("usr_1"), purpose: "nexus.verification", lifetime: 60, intent: "transaction")
        #expect(tokens.pendingSingleUseCount == 1)
        #expect(try await tokens.verify(session.token, purpose: TokenService.sessionPurpose) == session.claims)
        #expect(try await tokens.verify(stepUp.token, purpose: "nexus.verification") == stepUp.claims)
        #expect(tokens.pendingSingleUseCount == 0)
        #expect(try await tokens.verify(stepUp.token, purpose: "nexus.verification") == stepUp.claims)
        #expect(tokens.rememberedCount == 1)
        #expect(tokens.pendingSingleUseCount == 0)
    }

    /// An issued step-up token waiting for its first verification is checked like any other:
    /// only its exact text is served from memory, and expiry and purpose still decide.
    @Test func issuedStepUpTokensAreStillChecked() async throws {
        let clock = TestClock()
        let tokens = await TokenService(secret: Array(repeating: 7, count: 32), now: clock.closure)
        let stepUp = try await tokens.issue(for: UserID("usr_1"), purpose: "nexus.verification", lifetime: 60, intent: "transaction")
        var characters = Array(stepUp.token)
        let index = characters.count - 10
        characters[index] = characters[index] == "A" ? "B" : "A"
        for variant in [stepUp.token + "=", " " + stepUp.token, String(characters)] {
            await #expect(throws: TokenError.invalid, "\(variant.debugDescription)") { try await tokens.verify(variant, purpose: "nexus.verification") }
        }
        #expect(tokens.pendingSingleUseCount == 1)
        await #expect(throws: TokenError.wrongPurpose) { try await tokens.verify(stepUp.token, purpose: TokenService.sessionPurpose) }

        let late = try await tokens.issue(for: UserID("usr_1"), purpose: "nexus.verification", lifetime: 60, intent: "transaction")
        clock.advance(by: 61)
        #expect(tokens.pendingSingleUseCount == 1)
        await #expect(throws: TokenError.expired) { try await tokens.verify(late.token, purpose: "nexus.verification") }
        await #expect(throws: TokenError.expired) { try await tokens.verify(late.token, purpose: "nexus.verification") }

        // Another instance (behind the same balancer, same secret) verifies it in full.
        let other = await TokenService(secret: Array(repeating: 7, count: 32), now: TestClock().closure)
        #expect(try await other.verify(stepUp.token, purpose: "nexus.verification") == stepUp.claims)
    }

    /// Tokens filed under one slot: the later one is kept, the other is simply not remembered,
    /// and neither is ever answered with the other's claims.
    @Test func collidingTokensNeverShareClaims() async throws {
        let tokens = await TokenService(secret: Array(repeating: 7, count: 32), now: TestClock().closure)
        let first = try await tokens.issue(for: UserID("usr_1"), purpose: TokenService.sessionPurpose, lifetime: 60)
        let second = try await tokens.issue(for: UserID("usr_2"), purpose: TokenService.sessionPurpose, lifetime: 60)
        let memory = VerifiedTokens(limit: 10, slot: { _ in 42 })
        memory.remember(first.token, first.claims)
        #expect(memory.claims(of: first.token) == first.claims)
        #expect(memory.claims(of: second.token) == nil)
        memory.remember(second.token, second.claims)
        #expect(memory.count == 1)
        #expect(memory.claims(of: first.token) == nil)
        #expect(memory.take(first.token) == nil)
        #expect(memory.take(second.token) == second.claims)
        #expect(memory.take(second.token) == nil)
        #expect(memory.count == 0)
    }

    /// Full: emptied, then the newcomer kept.
    @Test func aFullMemoryStartsAgain() async throws {
        let tokens = await TokenService(secret: Array(repeating: 7, count: 32), now: TestClock().closure)
        let claims = try await tokens.issue(for: UserID("usr_1"), purpose: TokenService.sessionPurpose, lifetime: 60).claims
        let memory = VerifiedTokens(limit: 3)
        for index in 0..<3 { memory.remember("t\(index)", claims) }
        #expect(memory.count == 3)
        memory.remember("t3", claims)
        #expect(memory.count == 1)
        #expect(memory.claims(of: "t3") == claims)
        #expect(memory.claims(of: "t0") == nil)
    }

    /// One token, one spelling: padding, other alphabets, whitespace or a fourth part are refused
    /// even though the signature inside is good.
    @Test func onlyTheCompactFormIsAccepted() async throws {
        let tokens = await TokenService(secret: Array(repeating: 7, count: 32), now: TestClock().closure)
        let token = try await tokens.issue(for: UserID("usr_1"), purpose: TokenService.sessionPurpose, lifetime: 60).token
        _ = try await tokens.verify(token, purpose: TokenService.sessionPurpose)
        for variant in [token + "=", token + "==", " " + token, token + "\n", token + ".", token.replacingOccurrences(of: "-", with: "+") + "+", ""] {
            await #expect(throws: TokenError.invalid, "\(variant.debugDescription)") { try await tokens.verify(variant, purpose: TokenService.sessionPurpose) }
        }
    }

    /// RFC 7515 §4.1.11: a header naming critical extensions we do not understand is refused,
    /// however well it is signed; the same claims and signature form without `crit` pass.
    @Test func criticalHeaderExtensionsAreRefused() async throws {
        let secret = Array(repeating: UInt8(7), count: 32)
        let clock = TestClock()
        let tokens = await TokenService(secret: secret, now: clock.closure)
        let now = Int(clock.now.timeIntervalSince1970)
        func signed(header: String) -> String {
            let claims = #"{"sub":"usr_1","exp":\#(now + 60),"iat":\#(now),"jti":"j1","purpose":"\#(TokenService.sessionPurpose)"}"#
            let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
            let mac = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: secret))
            return input + "." + Base64URL.encode(Data(mac))
        }
        _ = try await tokens.verify(signed(header: #"{"alg":"HS256","typ":"JWT"}"#), purpose: TokenService.sessionPurpose)
        for header in [#"{"alg":"HS256","typ":"JWT","crit":["exp"]}"#, #"{"alg":"HS256","crit":["x-bank"],"x-bank":1}"#, #"{"alg":"HS256","crit":[]}"#] {
            await #expect(throws: TokenError.invalid, "\(header)") { try await tokens.verify(signed(header: header), purpose: TokenService.sessionPurpose) }
        }
    }
}

/// The tokens are standard HS256 JWTs: pyjwt's verify in ours, ours verify in pyjwt (the Python
/// half runs in `.ci/run`: `scripts/oracles/tokens_pyjwt.py`).
@Suite("Token service: HS256 interop")
struct TokenInteropTests {
    struct Fixture: Decodable {
        struct Case: Decodable {
            struct Claims: Decodable { var sub: String; var exp: Int; var iat: Int; var jti: String; var purpose: String; var intent: String? }
            var name: String
            var token: String
            var claims: Claims?
        }
        var secret_hex: String
        var cases: [Case]
    }

    static func secret(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
    }

    @Test func pyjwtTokensVerifyAndForgeriesDoNot() async throws {
        let url = try #require(Bundle.module.url(forResource: "pyjwt_tokens", withExtension: "json", subdirectory: "Fixtures"))
        let fixture = try JSONDecoder().decode(Fixture.self, from: Data(contentsOf: url))
        let clock = TestClock(Date(timeIntervalSince1970: 1_999_999_800))
        let tokens = await TokenService(secret: Self.secret(fixture.secret_hex), now: clock.closure)
        #expect(fixture.cases.count == 12)
        for item in fixture.cases {
            if let expected = item.claims {
                let claims = try await tokens.verify(item.token, purpose: expected.purpose)
                #expect(claims.userID.rawValue == expected.sub, "\(item.name)")
                #expect(claims.expiresAt == Date(timeIntervalSince1970: TimeInterval(expected.exp)), "\(item.name)")
                #expect(claims.issuedAt == Date(timeIntervalSince1970: TimeInterval(expected.iat)), "\(item.name)")
                #expect(claims.tokenID == expected.jti, "\(item.name)")
                #expect(claims.purpose == expected.purpose, "\(item.name)")
                #expect(claims.intent == expected.intent, "\(item.name)")
            } else {
                for purpose in ["session", "nexus.verification"] {
                    await #expect(throws: TokenError.invalid, "\(item.name)") { try await tokens.verify(item.token, purpose: purpose) }
                }
            }
        }
    }

    /// Our token taken apart with Foundation and CryptoKit alone: the fixed header, the claims as
    /// JSON numbers and strings, and an HMAC-SHA256 over `header.payload`.
    @Test func ourTokensAreStandardHS256() async throws {
        let secret = Array(repeating: UInt8(7), count: 32)
        let tokens = await TokenService(secret: secret, now: TestClock().closure)
        var vectors: [[String: Any]] = []
        for (purpose, intent) in [("session", nil), ("nexus.verification", "transaction" as String?)] {
            let (token, claims) = try await tokens.issue(for: UserID("usr_\"é\\"), purpose: purpose, lifetime: 300, intent: intent)
            let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            try #require(parts.count == 3)
            let headerJSON = try #require(base64URLDecode(parts[0]))
            let payloadJSON = try #require(base64URLDecode(parts[1]))
            let header = try JSONSerialization.jsonObject(with: headerJSON) as? [String: String]
            #expect(header == ["alg": "HS256", "typ": "JWT"])
            let payload = try #require(try JSONSerialization.jsonObject(with: payloadJSON) as? [String: Any])
            #expect(payload["sub"] as? String == "usr_\"é\\")
            #expect(payload["exp"] as? Int == 1_800_000_300)
            #expect(payload["iat"] as? Int == 1_800_000_000)
            #expect(payload["jti"] as? String == claims.tokenID)
            #expect(payload["purpose"] as? String == purpose)
            #expect(payload["intent"] as? String == intent)
            #expect(Set(payload.keys) == Set(["sub", "exp", "iat", "jti", "purpose"] + (intent == nil ? [] : ["intent"])))
            let mac = HMAC<SHA256>.authenticationCode(for: Data((parts[0] + "." + parts[1]).utf8), using: SymmetricKey(data: secret))
            #expect(parts[2] == base64URLEncode(Data(mac)))
            var recorded: [String: Any] = ["sub": claims.userID.rawValue, "exp": 1_800_000_300, "iat": 1_800_000_000, "jti": claims.tokenID, "purpose": purpose]
            if let intent { recorded["intent"] = intent }
            vectors.append(["token": token, "claims": recorded])
        }
        if let out = ProcessInfo.processInfo.environment["PURSE_TOKEN_VECTORS_OUT"] {
            let document: [String: Any] = ["secret_hex": secret.map { String(format: "%02x", $0) }.joined(), "tokens": vectors]
            try JSONSerialization.data(withJSONObject: document).write(to: URL(fileURLWithPath: out))
        }
    }
}

private func base64URLDecode(_ text: String) -> Data? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
    return Data(base64Encoded: base64)
}

private func base64URLEncode(_ data: Data) -> String {
    data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

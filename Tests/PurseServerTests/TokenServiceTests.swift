import Foundation
import PurseServer
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
}

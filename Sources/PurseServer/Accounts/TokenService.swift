import Foundation
import JWTKit
import PurseDatabase
import Synchronization

/// The claims of every token Purse issues: a session, or a short-lived purpose token such as
/// Nexus's `verificationToken`. `purpose` keeps them apart: a step-up token is not a session.
public struct PurseTokenClaims: JWTPayload, Equatable {
    public var sub: SubjectClaim
    public var exp: ExpirationClaim
    public var iat: IssuedAtClaim
    public var jti: IDClaim
    public var purpose: String
    /// What a step-up token authorises (e.g. `transaction`).
    public var intent: String?

    public var userID: UserID { UserID(sub.value) }
    public var expiresAt: Date { exp.value }
    public var issuedAt: Date { iat.value }
    /// The token's unique id (`jti`), for single-use tokens.
    public var tokenID: String { jti.value }

    /// Expiry is checked by ``TokenService`` against its injected clock.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}

    public init(sub: SubjectClaim, exp: ExpirationClaim, iat: IssuedAtClaim, jti: IDClaim, purpose: String, intent: String?) {
        (self.sub, self.exp, self.iat, self.jti, self.purpose, self.intent) = (sub, exp, iat, jti, purpose, intent)
    }

    enum CodingKeys: String, CodingKey {
        case sub, exp, iat, jti, purpose, intent
    }

    /// Reads each claim as the plain JSON value it is — times as seconds since 1970, as jwt-kit
    /// writes and reads them — rather than through the claim types' own decoders, which go through
    /// the decoder's generic single-value path: this runs for every step-up token a request spends.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        sub = SubjectClaim(value: try container.decode(String.self, forKey: .sub))
        exp = ExpirationClaim(value: Date(timeIntervalSince1970: try container.decode(Double.self, forKey: .exp)))
        iat = IssuedAtClaim(value: Date(timeIntervalSince1970: try container.decode(Double.self, forKey: .iat)))
        jti = IDClaim(value: try container.decode(String.self, forKey: .jti))
        purpose = try container.decode(String.self, forKey: .purpose)
        intent = try container.decodeIfPresent(String.self, forKey: .intent)
    }
}

public enum TokenError: Error, Equatable {
    case invalid
    case expired
    case wrongPurpose
}

/// Signs and verifies HS256 JWTs with the server's secret.
public struct TokenService: Sendable {
    public static let sessionPurpose = "session"
    let keys: JWTKeyCollection
    let now: @Sendable () -> Date
    /// Session tokens whose signature already checked out, so the token sent with every request
    /// is not parsed and re-verified (inside jwt-kit's key-collection actor, which all requests
    /// share) each time. Expiry and purpose are still checked on every use. Tokens of other
    /// purposes are single-use: remembering them would only push sessions out.
    private let verified = VerifiedTokens(limit: 10_000)
    /// Single-use tokens this process signed, until their first verification: a step-up token is
    /// issued and then spent moments later by the next request (the purchase it authorises), here unless a balancer
    /// sent it to another instance, which verifies it in full. A token that is not spent (the
    /// purchase was refused) is verified in full when it comes back.
    private let issuedSingleUse = VerifiedTokens(limit: 32_768)

    public init(secret: [UInt8], now: @escaping @Sendable () -> Date) async {
        // The collection's parser reads the header; the key's own parser reads the claims.
        let parser = DefaultJWTParser(jsonDecoder: FlatFirstJWTDecoder())
        let keys = JWTKeyCollection(defaultJWTParser: parser)
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, parser: parser)
        self.keys = keys
        self.now = now
    }

    /// Issues a token for `user`.
    /// - Returns: The compact JWT and its claims.
    public func issue(
        for user: UserID, purpose: String, lifetime: TimeInterval, intent: String? = nil
    ) async throws -> (token: String, claims: PurseTokenClaims) {
        let issued = now()
        let claims = PurseTokenClaims(
            sub: SubjectClaim(value: user.rawValue),
            exp: ExpirationClaim(value: issued.addingTimeInterval(lifetime)),
            iat: IssuedAtClaim(value: issued),
            jti: IDClaim(value: RandomID.make("jti")),
            purpose: purpose,
            intent: intent
        )
        let token = try await keys.sign(claims)
        if purpose != Self.sessionPurpose { issuedSingleUse.remember(token, claims) }
        return (token, claims)
    }

    /// How many verified tokens are remembered (for tests).
    var rememberedCount: Int { verified.count }
    /// How many issued single-use tokens wait for their first verification (for tests).
    var pendingSingleUseCount: Int { issuedSingleUse.count }

    /// Verifies signature, expiry and purpose.
    /// - Throws: ``TokenError``.
    public func verify(_ token: String, purpose: String) async throws -> PurseTokenClaims {
        let claims: PurseTokenClaims
        if let known = verified.claims(of: token) ?? issuedSingleUse.take(token) {
            // Remembered tokens passed every check below, the form included, when they were
            // stored; issued ones are the very text `issue` signed.
            claims = known
        } else {
            // Compact serialisation only: three base64url parts, unpadded (RFC 7515 §7.1), so one
            // token has one spelling (jwt-kit would also take a padded signature).
            guard Self.isCompact(token), JWTHeader.isAcceptable(token) else { throw TokenError.invalid }
            do {
                claims = try await keys.verify(token, as: PurseTokenClaims.self)
            } catch {
                throw TokenError.invalid
            }
            if claims.purpose == Self.sessionPurpose { verified.remember(token, claims) }
        }
        guard claims.purpose == purpose else { throw TokenError.wrongPurpose }
        guard claims.exp.value > now() else { throw TokenError.expired }
        return claims
    }
}

extension TokenService {
    /// True for the JWS compact serialisation as we write it: three parts of the base64url
    /// alphabet without padding, split by two dots. Anything else is refused before jwt-kit sees it.
    static func isCompact(_ token: String) -> Bool {
        var dots = 0
        for byte in token.utf8 {
            switch byte {
            case UInt8(ascii: "."): dots += 1
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"): continue
            default: return false
            }
        }
        return dots == 2
    }
}

/// jwt-kit's JSON decoder (seconds since 1970 for dates) behind ``FlatJSONDecoder``, which reads
/// a token's header and claims — flat objects — with the same result and a fraction of the work.
/// jwt-kit takes custom decoders for this (`DefaultJWTParser(jsonDecoder:)`); parsing, the
/// signature check and the claims' verification stay jwt-kit's.
struct FlatFirstJWTDecoder: JWTJSONDecoder {
    private let fallback: any JWTJSONDecoder = .defaultForJWT

    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if let value = FlatJSONDecoder().decodeIfFlat(T.self, from: data) { return value }
        return try fallback.decode(T.self, from: data)
    }
}

/// A bounded map from token text to its verified claims (emptied when full: cheap and enough for
/// a working set of live sessions).
///
/// Entries are filed under the token's hash and hold the token itself, which a lookup compares in
/// full: a dictionary keyed by the text would hash ~300 bytes again for every entry it moves when
/// one is removed. Two tokens with one hash share a slot, the later one kept — the other is
/// verified in full when it comes.
final class VerifiedTokens: Sendable {
    private struct Entry {
        var token: String
        var claims: PurseTokenClaims
    }

    private let entries = Mutex<[Int: Entry]>([:])
    private let limit: Int
    private let slot: @Sendable (String) -> Int

    /// - Parameter slot: Where a token is filed (its hash; tests pass one that collides).
    init(limit: Int, slot: @escaping @Sendable (String) -> Int = { $0.hashValue }) {
        self.limit = limit
        self.slot = slot
    }

    func claims(of token: String) -> PurseTokenClaims? {
        let key = slot(token)
        return entries.withLock { entries in
            guard let entry = entries[key], entry.token == token else { return nil }
            return entry.claims
        }
    }

    /// The claims of `token`, forgotten as they are handed out.
    func take(_ token: String) -> PurseTokenClaims? {
        let key = slot(token)
        return entries.withLock { entries in
            guard let entry = entries[key], entry.token == token else { return nil }
            entries[key] = nil
            return entry.claims
        }
    }

    var count: Int { entries.withLock { $0.count } }

    func remember(_ token: String, _ claims: PurseTokenClaims) {
        let key = slot(token)
        entries.withLock { entries in
            if entries.count >= limit { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(token: token, claims: claims)
        }
    }
}

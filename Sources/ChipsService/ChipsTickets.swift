import Crypto
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// Connection tickets and the two logins of the Wyseman protocol.
///
/// - A ticket (`base.ticket_login` in MyCHIPs) is a one-time token for a user, valid for
///   ``ChipsConfiguration/ticketLifetime``; stored as its SHA-256.
/// - Ticket login: `?user&token&pub` — the token is spent (single use, unexpired, that user's)
///   and `pub`, the client's new connection key, replaces the stored one.
/// - Signature login: `?user&sign&date` — the provider rebuilds `JSON.stringify({ip, cookie,
///   userAgent, date})` from the upgrade request, checks `sign` (ECDSA P-521 over SHA-384, raw
///   `r ‖ s`, base64url) with the stored key, the date within ``ChipsConfiguration/dateWindow``
///   of its clock, and that this user has not logged in with this signature before: the
///   signature's `r` is kept for twice the date window, so a captured login URL cannot be
///   replayed — not even with `s` negated, which makes another valid signature with the same `r`
///   (two honest signatures have different `r`s, as each draws its own nonce).
struct ChipsTickets: Sendable {
    let database: Database
    let configuration: ChipsConfiguration
    let now: @Sendable () -> Date

    /// A connection ticket: `{ticket: {token, expires, host, port, user}}` and its link.
    struct Ticket: Sendable {
        var token: String
        var expires: Date
        var host: String
        var port: Int
        var user: String

        var json: JSONValue {
            .object(["ticket": .object([
                "token": .string(token), "expires": .string(JavaScriptDate.string(expires)), "host": .string(host),
                "port": .int(Int64(port)), "user": .string(user),
            ])])
        }

        var link: String {
            var components = URLComponents(string: "https://mychips.org/ticket")!
            components.queryItems = [URLQueryItem(name: "host", value: host), URLQueryItem(name: "port", value: String(port)),
                                     URLQueryItem(name: "user", value: user), URLQueryItem(name: "token", value: token)]
            return components.string!
        }
    }

    /// A new ticket for `username`. As on a real provider only the newest ticket holds: the
    /// user's earlier unspent ones stop working, so a ticket that leaked is revoked by issuing
    /// another.
    func issue(for username: String, in db: any DatabaseSession) async throws -> Ticket {
        let token = RandomID.hex(bytes: 16)
        let now = now()
        let expires = now.addingTimeInterval(configuration.ticketLifetime)
        try await db.raw("DELETE FROM chips_tokens WHERE username = \(bind: username) AND used_at IS NULL").run()
        try await db.raw("""
            INSERT INTO chips_tokens (token, username, expires_at, created_at)
            VALUES (\(bind: SecretDigest.hex(token)), \(bind: username), \(bind: expires.epochMillis), \(bind: now.epochMillis))
            """).run()
        return Ticket(token: token, expires: expires, host: configuration.publicHost, port: configuration.publicPort, user: username)
    }

    /// Spends `token` for `username` and stores `pub` (base64url JSON of a P-521 public JWK) as
    /// the user's connection key; returns the user as stored. Nil when the token is unknown,
    /// spent, expired or another user's, or the key is not a P-521 public key; nothing changes then.
    func ticketLogin(username: String, token: String, pub: String) async throws -> ChipsUserRecord? {
        guard token.utf8.count <= 128, username.utf8.count <= 64,
              let jwkText = Base64URL.decode(pub).map({ String(decoding: $0, as: UTF8.self) }),
              let jwk = EllipticCurveJWK.parse(jwkText), jwk.crv == "P-521", jwk.d == nil,
              let raw = jwk.rawPublicKey, (try? P521.Signing.PublicKey(rawRepresentation: raw)) != nil else { return nil }
        let now = now().epochMillis
        let digest = SecretDigest.hex(token)
        return try await database.transaction { db in
            let spent = try await db.raw("""
                UPDATE chips_tokens SET used_at = \(bind: now)
                WHERE token = \(bind: digest) AND username = \(bind: username) AND used_at IS NULL AND expires_at > \(bind: now)
                RETURNING token
                """).all()
            guard spent.count == 1 else { return nil }
            try await db.raw("UPDATE chips_users SET conn_pub = \(bind: jwk.publicOnly.jsonText), modified_at = \(bind: now), version = version + 1 WHERE username = \(bind: username)").run()
            return try await ChipsUserRecord.load(username, in: db)
        }
    }

    enum SignatureOutcome: Equatable {
        /// The login holds; the user as the check read them.
        case valid(ChipsUserRecord)
        case staleDate
        case invalid
    }

    /// Checks a signature login. `message` is the login text the provider rebuilt.
    func signatureLogin(username: String, sign: String, date: String, message: String) async throws -> SignatureOutcome {
        guard let stamp = JavaScriptDate.parse(date) else { return .staleDate }
        let now = now()
        guard abs(now.timeIntervalSince(stamp)) <= configuration.dateWindow else { return .staleDate }
        guard username.utf8.count <= 64, sign.utf8.count <= 400, let signature = Base64URL.decode(sign), signature.count == 132,
              let user = try await database.read({ db in try await ChipsUserRecord.load(username, in: db) }),
              let keyText = user.connPub, let raw = EllipticCurveJWK.parse(keyText)?.rawPublicKey,
              let key = try? P521.Signing.PublicKey(rawRepresentation: raw),
              let ecdsa = try? P521.Signing.ECDSASignature(rawRepresentation: signature),
              key.isValidSignature(ecdsa, for: SHA384.hash(data: Data(message.utf8))) else { return .invalid }
        let r = Base64URL.encode(signature.prefix(66))
        let millis = now.epochMillis
        let horizon = millis - Int64(configuration.dateWindow * 2000)
        let first = try await database.transaction { db in
            try await db.raw("DELETE FROM chips_logins WHERE username = \(bind: username) AND at < \(bind: horizon)").run()
            let inserted = try await db.raw("""
                INSERT INTO chips_logins (username, signature_r, at) VALUES (\(bind: username), \(bind: r), \(bind: millis))
                ON CONFLICT DO NOTHING RETURNING username
                """).all()
            return inserted.count == 1
        }
        return first ? .valid(user) : .invalid
    }

    /// The text a signature login signs: `JSON.stringify({ip, cookie, userAgent, date})`, where a
    /// member whose header is absent is left out as JavaScript leaves out `undefined`.
    static func loginMessage(ip: String?, cookie: String?, userAgent: String?, date: String?) -> String {
        var members: [(key: String, value: JSONValue)] = []
        if let ip { members.append(("ip", .string(ip))) }
        if let cookie { members.append(("cookie", .string(cookie))) }
        if let userAgent { members.append(("userAgent", .string(userAgent))) }
        if let date { members.append(("date", .string(date))) }
        return JavaScriptJSON.object(members)
    }

}

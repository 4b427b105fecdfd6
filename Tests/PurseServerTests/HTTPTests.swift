import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PurseDatabase
import PurseServer
import PurseTestSupport
import Testing

@Suite("HTTP surface")
struct HTTPTests {
    @Test(.inProcessServer()) func indexListsServicesAsHTMLAndJSON() async throws {
        let client = try InProcessServer.current.client
        let html = try await client.execute(uri: "/", method: .get, headers: [.accept: "text/html"])
        #expect(html.status == .ok)
        #expect(html.headers[.contentType]?.hasPrefix("text/html") == true)
        #expect(html.text.contains("Accounts") && html.text.contains("/openapi.yaml"))
        let json = try await client.execute(uri: "/", method: .get, headers: [.accept: "application/json"])
        #expect(json.headers[.contentType]?.hasPrefix("application/json") == true)
        let services = json.object["services"] as? [[String: Any]]
        #expect(services?.first?["id"] as? String == "accounts")
    }

    @Test(.inProcessServer()) func healthChecksTheDatabase() async throws {
        let (server, client) = try InProcessServer.current
        let ok = try await client.execute(uri: "/health", method: .get)
        #expect(ok.status == .ok)
        #expect(ok.object["status"] as? String == "ok" && ok.object["database"] as? String == "sqlite")
        await server.environment.database.shutdown()
        let down = try await client.execute(uri: "/health", method: .get)
        #expect(down.status == .serviceUnavailable)
    }

    @Test(.inProcessServer()) func metricsCountRequestsByRouteAndStatus() async throws {
        let client = try InProcessServer.current.client
        _ = try await client.execute(uri: "/health", method: .get)
        _ = try await client.execute(uri: "/health", method: .get)
        _ = try await client.json(.post, "/auth/login", "{")
        let metrics = try await client.execute(uri: "/metrics", method: .get)
        #expect(metrics.headers[.contentType]?.hasPrefix("text/plain") == true)
        #expect(metrics.text.contains(#"purse_http_requests_total{method="GET",route="/health",status="200"} 2"#))
        #expect(metrics.text.contains(#"purse_http_requests_total{method="POST",route="/auth/login",status="400"} 1"#))
        #expect(metrics.text.contains("purse_http_request_duration_seconds_bucket"))
        // Migrations and every write are transactions; SQLite may carry several per commit.
        let counters = Dictionary(uniqueKeysWithValues: metrics.text.split(separator: "\n").compactMap { line -> (String, Double)? in
            let parts = line.split(separator: " ")
            guard parts.count == 2, parts[0].hasPrefix("purse_db_"), let value = Double(parts[1]) else { return nil }
            return (String(parts[0]), value)
        })
        let transactions = try #require(counters["purse_db_transactions_total"])
        let commits = try #require(counters["purse_db_commits_total"])
        #expect(transactions > 0 && commits > 0 && commits <= transactions)
        #expect(counters["purse_db_checkpoints_total"] != nil && counters["purse_db_writer_pauses_total"] != nil)
        #expect(counters["purse_db_wal_restarts_deferred_total"] == 0)
        // The writer ran those transactions, so it was busy for some (short) time.
        let busy = try #require(counters["purse_db_writer_busy_seconds_total"])
        #expect(busy > 0 && busy < 60)
    }

    @Test(.inProcessServer()) func unknownRoutesAre404JSON() async throws {
        let client = try InProcessServer.current.client
        let response = try await client.execute(uri: "/no/such/route", method: .get)
        #expect(response.status == .notFound)
        #expect(response.object["error"] as? String == "Not found")
    }

    @Test(.inProcessServer()) func malformedInputIsA400NamingTheField() async throws {
        let client = try InProcessServer.current.client
        let cases: [(String, String)] = [
            ("{", "Malformed JSON body: expected a key at byte 1"),
            ("", "Request body must be a JSON object"),
            ("[1,2]", "Request body must be a JSON object"),
            (#"{"email": "a@b.co"}"#, "Missing required field 'password'"),
            (#"{"email": "a@b.co", "password": 12345678}"#, "Field 'password' has the wrong type (expected a string)"),
            (#"{"email": "a@b.co", "password": null}"#, "Field 'password' must not be null (expected a string)"),
            (#"{"email": "not-an-email", "password": "longenough"}"#, "Field 'email' is not a valid email address"),
            (#"{"phone": "12ab", "password": "longenough"}"#, "Field 'phone' is not a valid phone number"),
            (#"{"password": "longenough"}"#, "Either 'email' or 'phone' is required"),
            (#"{"email": "a@b.co", "password": "short"}"#, "Field 'password' must be at least 8 characters"),
        ]
        for (body, message) in cases {
            let response = try await client.json(.post, "/auth/register", body)
            #expect(response.status == .badRequest, "\(body)")
            #expect(response.object["error"] as? String == message, "\(body)")
        }
    }

    @Test(.inProcessServer()) func oversizedBodiesAre413() async throws {
        let client = try InProcessServer.current.client
        let big = "{\"email\": \"" + String(repeating: "a", count: 2 << 20) + "\"}"
        let response = try await client.json(.post, "/auth/register", big)
        #expect(response.status == .contentTooLarge)
        #expect((response.object["error"] as? String)?.contains("larger than") == true)
    }

    @Test func noRouteAnswers500ToGarbage() async throws {
        let server = try await TestServer.make()
        let garbage = ["{", "null", "true", "\"x\"", "[]", "{\"email\": {}}", "{\"password\": []}", String(repeating: "[", count: 5000),
                       "{\"email\": \"\u{0000}\"}", "\u{FFFF}\u{FFFE}", "{\"phone\": 1e400, \"password\": \"xxxxxxxx\"}"]
        let routes = server.app.routes.filter { $0.hasPrefix("POST ") }.map { String($0.dropFirst(5)) }
        #expect(!routes.isEmpty)
        try await server.withRouter { client in
            for route in routes {
                for body in garbage {
                    let response = try await client.json(.post, route, body)
                    #expect(response.status.code < 500, "\(route) answered \(response.status) to \(body.prefix(40))")
                }
            }
        }
    }

    /// The database out of reach (a connection lost mid-request, PostgreSQL restarting) is a 503
    /// with Retry-After that clients retry, not a 500; an unexpected error is still a 500.
    @Test func aLostDatabaseIsA503ToRetry() async throws {
        struct Bug: Error {}
        let router = Router(context: PurseRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        router.get("/lost") { _, _ -> String in throw DatabaseConnectionLost() }
        router.get("/bug") { _, _ -> String in throw Bug() }
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: "/lost", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.retryAfter] == "1")
                #expect(String(buffer: response.body).contains("nothing was changed"))
            }
            try await client.execute(uri: "/bug", method: .get) { response in
                #expect(response.status == .internalServerError)
            }
        }
    }

    @Test(.inProcessServer()) func registerLoginAndMe() async throws {
        let client = try InProcessServer.current.client
        let registered = try await client.json(.post, "/auth/register", #"{"email": " Ada@Example.com ", "password": "correct horse", "name": "Ada"}"#)
        #expect(registered.status == .created)
        let user = try #require(registered.object["user"] as? [String: Any])
        #expect(user["email"] as? String == "ada@example.com")
        #expect(user["password_hash"] == nil && user["passwordHash"] == nil)

        let duplicate = try await client.json(.post, "/auth/register", #"{"email": "ada@example.com", "password": "another pass"}"#)
        #expect(duplicate.status == .conflict)
        #expect(duplicate.object["error"] as? String == "An account with this email already exists")

        let login = try await client.json(.post, "/auth/login", #"{"email": "ADA@example.com", "password": "correct horse"}"#)
        #expect(login.status == .ok)
        let token = try #require(login.object["token"] as? String)

        let me = try await client.json(.get, "/auth/me", token: token)
        #expect(me.status == .ok)
        #expect((me.object["user"] as? [String: Any])?["name"] as? String == "Ada")

        // Wrong password and unknown user get the same answer.
        let wrong = try await client.json(.post, "/auth/login", #"{"email": "ada@example.com", "password": "wrong password"}"#)
        let unknown = try await client.json(.post, "/auth/login", #"{"email": "nobody@example.com", "password": "wrong password"}"#)
        #expect(wrong.status == .unauthorized && unknown.status == .unauthorized)
        #expect(wrong.text == unknown.text)
        #expect(wrong.object["error"] as? String == "Invalid credentials")
    }

    /// Guessing one account's password backs off after ten tries (429 with Retry-After, before the
    /// password is checked); the real user gets in once the wait is over. Guessing across
    /// accounts from one address backs off after thirty.
    @Test func signInBacksOffPerAccountAndAddress() async throws {
        let server = try await TestServer.make()
        try await server.withLive { client in
            _ = try await client.json(.post, "/auth/register", #"{"email": "ada@example.com", "password": "correct horse"}"#)
            // Fifteen guesses at once: the bucket is drawn before any password is checked, so ten
            // are judged and five wait, however slow the machine.
            let guessStart = ContinuousClock.now
            let answers = try await withThrowingTaskGroup(of: (Int, String?, String?).self, returning: [(Int, String?, String?)].self) { group in
                for _ in 0..<15 {
                    group.addTask {
                        let answer = try await client.json(.post, "/auth/login", #"{"email": "ada@example.com", "password": "wrong password"}"#)
                        return (Int(answer.status.code), answer.headers[.retryAfter], answer.object["error"] as? String)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // (One more is judged for every 3 s the burst spreads over on a loaded machine: a token
            // comes back every 3 s.)
            let guessRefill = Int((ContinuousClock.now - guessStart).components.seconds) / 3 + 1
            #expect((10...10 + guessRefill).contains(answers.filter { $0.0 == 401 }.count) && answers.allSatisfy { $0.0 == 401 || $0.0 == 429 },
                    "\(answers.map(\.0))")
            let retryAfter = answers.compactMap { $0.1.flatMap { Int($0) } }.max() ?? 0
            #expect((1...3).contains(retryAfter))
            #expect(answers.filter { $0.0 == 429 }.allSatisfy { $0.2?.hasPrefix("Too many sign-in attempts for this account") == true })
            try await Task.sleep(for: .seconds(retryAfter))
            #expect(try await client.json(.post, "/auth/login", #"{"email": "ada@example.com", "password": "correct horse"}"#).status == .ok)
            // Many accounts from one address at once: the address's bucket (30 at once, some of it
            // spent above, one more each second) runs out as well.
            let burstStart = ContinuousClock.now
            let fromAddress = try await withThrowingTaskGroup(of: (Int, String?).self, returning: [(Int, String?)].self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let answer = try await client.json(.post, "/auth/login", #"{"email": "user\#(index)@example.com", "password": "wrong password"}"#)
                        return (Int(answer.status.code), answer.object["error"] as? String)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            // The bucket refills by one a second while a slow machine spreads the burst out.
            let refilled = Int((ContinuousClock.now - burstStart).components.seconds) + 1
            #expect(fromAddress.filter { $0.0 == 401 }.count <= 30 + refilled && fromAddress.allSatisfy { $0.0 == 401 || $0.0 == 429 }, "\(fromAddress.map(\.0))")
            #expect(fromAddress.contains { $0.0 == 429 && $0.1?.hasPrefix("Too many sign-in attempts from this address") == true })
        }
    }

    @Test(.inProcessServer()) func phoneAccountsWork() async throws {
        let client = try InProcessServer.current.client
        let registered = try await client.json(.post, "/auth/register", #"{"phone": "+234 801 234 5678", "password": "correct horse"}"#)
        #expect(registered.status == .created)
        let login = try await client.json(.post, "/auth/login", #"{"phone": "+2348012345678", "password": "correct horse"}"#)
        #expect(login.status == .ok)
    }

    @Test func missingInvalidOrExpiredTokensAre401() async throws {
        let server = try await TestServer.make { $0.sessionLifetime = 60 }
        try await server.withRouter { client in
            let (token, _) = try await client.register()
            let expected = #"{"error":"Authentication required"}"#
            let missing = try await client.json(.get, "/auth/me")
            #expect(missing.status == .unauthorized && missing.text == expected)
            let garbage = try await client.json(.get, "/auth/me", token: "not.a.jwt")
            #expect(garbage.status == .unauthorized && garbage.text == expected)
            // Change a character in the middle of the signature: the last base64url
            // character of a 32-byte signature carries padding bits, so changing it
            // can leave the decoded bytes as they were.
            var characters = Array(token)
            let index = characters.count - 10
            characters[index] = characters[index] == "A" ? "B" : "A"
            let tampered = String(characters)
            #expect(try await client.json(.get, "/auth/me", token: tampered).status == .unauthorized)
            #expect(try await client.json(.get, "/auth/me", token: token).status == .ok)
            server.clock.advance(by: 61)
            let expired = try await client.json(.get, "/auth/me", token: token)
            #expect(expired.status == .unauthorized && expired.text == expected)
        }
    }

    @Test(.inProcessServer()) func aPurposeTokenIsNotASession() async throws {
        let (server, client) = try InProcessServer.current
        let (_, userID) = try await client.register()
        let stepUp = try await server.environment.tokens.issue(for: UserID(userID), purpose: "nexus.verification", lifetime: 300).token
        #expect(try await client.json(.get, "/auth/me", token: stepUp).status == .unauthorized)
    }

    @Test func sessionLifetimeDefaultsTo30Days() throws {
        #expect(PurseConfiguration().sessionLifetime == 30 * 24 * 3600)
    }

    @Test(.inProcessServer()) func requestIDsAreEchoed() async throws {
        let client = try InProcessServer.current.client
        let given = try await client.execute(uri: "/health", method: .get, headers: [HTTPField.Name("X-Request-ID")!: "abc-123"])
        #expect(given.headers[HTTPField.Name("X-Request-ID")!] == "abc-123")
        let made = try await client.execute(uri: "/health", method: .get, headers: [HTTPField.Name("X-Request-ID")!: "bad id\n"])
        #expect(made.headers[HTTPField.Name("X-Request-ID")!]?.count == 16)
    }
}

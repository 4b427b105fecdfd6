import Foundation
import HTTPTypes
import Hummingbird
import Logging
import HummingbirdTesting
import PurseDatabase
@testable import PurseServer
import PurseTestSupport
import SQLKit
import Synchronization
import Testing

/// Defences that must not turn against the people they protect: sign-in back-off that never
/// locks out a client that signed in before, text that cannot carry a NUL into either engine,
/// limits that refill at the rate they name, a seal key kept apart from the data it seals.
@Suite("Defences")
struct DefenceTests {
    /// Four addresses guessing one account's password, one wrong password a second each: the
    /// real user's client that has signed in before still gets a verdict every time.
    @Test("sign-in: guessing from many addresses never holds a client that signed in before; e-mail and phone share one account's buckets",
          arguments: TestEngines.all)
    func signInWithoutLockout(engine: DatabaseEngine) async throws {
        let server = try await TestServer.make(engine: engine) { $0.trustedProxies = ["127.0.0.1"] }
        try await server.withLive { client in
            func login(_ body: String, from address: String, cookie: String? = nil) async throws -> TestResponse {
                var headers: HTTPFields = [HTTPField.Name("X-Forwarded-For")!: address]
                if let cookie { headers[.cookie] = cookie }
                return try await client.json(.post, "/auth/login", body, headers: headers)
            }
            let created = try await client.json(.post, "/auth/register", #"{"email": "ada@example.com", "phone": "+2348012345678", "password": "correct horse"}"#,
                                                headers: [HTTPField.Name("X-Forwarded-For")!: "192.0.2.1"])
            #expect(created.status == .created)
            // The real user signs in once on their phone and keeps the credential.
            let first = try await login(#"{"email": "ada@example.com", "password": "correct horse"}"#, from: "192.0.2.1")
            #expect(first.status == .ok)
            let credential = try #require(first.object["device_credential"] as? String)
            #expect(first.headers[.setCookie]?.hasPrefix("purse_signin_device=") == true)

            // Forty guesses from four addresses: the account's buckets for unknown clients run dry.
            let guessing = ContinuousClock.now
            for round in 0..<10 {
                for address in ["203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4"] {
                    _ = try await login(#"{"email": "ada@example.com", "password": "wrong \#(round)"}"#, from: address)
                }
            }
            let stranger = try await login(#"{"email": "ada@example.com", "password": "correct horse"}"#, from: "198.51.100.5")
            // (Unless the guesses took a minute, which refills the account's 20 for unknown clients.)
            if ContinuousClock.now - guessing < .seconds(55) {
                #expect(stranger.status == .tooManyRequests && stranger.headers[.retryAfter] != nil)
            }
            // The real user's client, in the body or as the cookie, from any address: a verdict each time.
            for attempt in 0..<8 {
                let mine = try await login(#"{"email": "ada@example.com", "password": "correct horse", "device_credential": "\#(credential)"}"#,
                                           from: "198.51.100.\(10 + attempt)")
                #expect(mine.status == .ok, "attempt \(attempt): \(mine.status)")
            }
            #expect(try await login(#"{"email": "ada@example.com", "password": "correct horse"}"#, from: "198.51.100.30",
                                    cookie: "purse_signin_device=\(credential)").status == .ok)
            // A credential is for its account only, and cannot be made or altered.
            let limiter = SignInLimiter(name: "accounts.login", database: server.environment.database, sealer: server.environment.sealer)
            let forged = String(credential.dropLast(2)) + (credential.hasSuffix("AA") ? "BB" : "AA")
            let userID = try #require((created.object["user"] as? [String: Any])?["id"] as? String)
            #expect(limiter.knownDevice(credential, account: "user:" + userID) != nil)
            #expect(limiter.knownDevice(forged, account: "user:" + userID) == nil)
            #expect(limiter.knownDevice(credential, account: "user:usr_other") == nil)
            #expect(limiter.knownDevice("sealed.v1.AAAA", account: "user:" + userID) == nil)

            // One account, one set of buckets: the e-mail and the phone number name the same one.
            // (Ten guesses by e-mail spend the burst; by phone, only what refilled meanwhile — one
            // every 3 s — is judged, where a bucket of its own would judge all eight.)
            _ = try await client.json(.post, "/auth/register", #"{"email": "bo@example.com", "phone": "+2348099999999", "password": "correct horse"}"#)
            let start = ContinuousClock.now
            for round in 0..<10 { _ = try await login(#"{"email": "bo@example.com", "password": "wrong \#(round)"}"#, from: "192.0.2.9") }
            var byPhone: [HTTPResponse.Status] = []
            for round in 0..<8 { byPhone.append(try await login(#"{"phone": "+2348099999999", "password": "wrong \#(round)"}"#, from: "192.0.2.9").status) }
            let refilled = Int((ContinuousClock.now - start).components.seconds) / 3 + 1
            #expect(byPhone.contains(.tooManyRequests) && byPhone.filter { $0 == .unauthorized }.count <= refilled, "\(byPhone), \(refilled) refilled")
        }
    }

    @Test("a NUL in a body field, a form field or a query value is 400 before any route or engine sees it", arguments: TestEngines.all)
    func nulIsRefused(engine: DatabaseEngine) async throws {
        let server = try await TestServer.make(engine: engine)
        try await server.withRouter { client in
            for body in [#"{"email": "a\u0000@example.com", "password": "correct horse"}"#,
                         #"{"email": "a@example.com", "password": "correct\u0000horse"}"#,
                         #"{"email": "a@example.com", "name": "Ada\u0000", "password": "correct horse"}"#] {
                let answer = try await client.json(.post, "/auth/register", body)
                #expect(answer.status == .badRequest && (answer.object["error"] as? String)?.contains("NUL") == true, "\(body)")
            }
            #expect(try await client.json(.post, "/auth/login", #"{"email": "a\u0000@example.com", "password": "x"}"#).status == .badRequest)
            // A raw zero byte, and a NUL in the query or the path.
            let raw = try await client.execute(uri: "/auth/register", method: .post, headers: [.contentType: "application/json"],
                                               body: ByteBuffer(bytes: Array(#"{"email": "a"#.utf8) + [0] + Array(#"@example.com", "password": "correct horse"}"#.utf8)))
            #expect(raw.status == .badRequest)
            #expect(try await client.execute(uri: "/health?x=%00", method: .get).status == .badRequest)
            #expect(try await client.execute(uri: "/auth/me%00", method: .get).status == .badRequest)
            // An escaped backslash before "u0000" is text, not a NUL.
            let text = try await client.json(.post, "/auth/register", #"{"email": "nul@example.com", "name": "back\\u0000slash", "password": "correct horse"}"#)
            #expect(text.status == .created)
            // Nothing with a NUL was stored.
            let stored = try await server.environment.database.read { db in try await db.raw("SELECT email FROM users").all().count }
            #expect(stored == 1)
        }
    }

    @Test("the body check: JSON escapes, raw bytes, form fields")
    func nulScanner() throws {
        #expect(throws: APIError.self) { try NULRefusal.check(body: ByteBuffer(string: #"{"a":"\u0000"}"#), contentType: "application/json") }
        #expect(throws: APIError.self) { try NULRefusal.check(body: ByteBuffer(string: #"{"a":"x\\\u0000"}"#), contentType: "application/json") }
        #expect(throws: APIError.self) { try NULRefusal.check(body: ByteBuffer(string: "a=b%00c"), contentType: "application/x-www-form-urlencoded") }
        try NULRefusal.check(body: ByteBuffer(string: #"{"a":"\\u0000","b":"%00"}"#), contentType: "application/json")
        try NULRefusal.check(body: ByteBuffer(string: #"{"a":"\u0001"}"#), contentType: "application/json")
        #expect(throws: APIError.self) { try NULRefusal.check(target: "/x?a=%00") }
        try NULRefusal.check(target: "/x?a=%2000%30")
        #expect(throws: APIError.self) { try NULRefusal.check(target: "/x?a=1%2%00") }
    }

    /// 20 a day is 0.00023 a second: a bucket keeps that rate, not a floor of 0.001 (86 a day).
    @Test("a slow bucket refills at its own rate, on both engines", arguments: TestEngines.all)
    func slowRefill(engine: DatabaseEngine) async throws {
        let local = RateLimiter(perSecond: 20.0 / 86_400, burst: 20)
        let start = ContinuousClock.now
        for _ in 0..<20 { #expect(local.take("device", now: start) == nil) }
        #expect(local.take("device", now: start + .seconds(3600)) != nil)
        #expect(local.take("device", now: start + .seconds(4400)) == nil)

        let server = try await TestServer.make(engine: engine)
        let shared = SharedRateLimiter(name: "test.slow", perSecond: 20.0 / 86_400, burst: 20, database: server.environment.database)
        if !server.environment.database.dialect.writesAreSerial {
            let now = Date()
            for _ in 0..<20 { #expect(try await shared.take("device", now: now) == nil) }
            let wait = try #require(try await shared.take("device", now: now.addingTimeInterval(3600)))
            #expect((600...800).contains(wait), "\(wait)")
            #expect(try await shared.take("device", now: now.addingTimeInterval(4400)) == nil)
        }
        await server.shutdown()
    }

    @Test("the seal key: from a file outside the data directory; inside it (or unset) is flagged")
    func sealKeyOutsideTheData() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-seal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("data"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("seal.key")
        try Data((String(repeating: "k", count: 40) + "\n").utf8).write(to: keyFile)
        var configuration = try PurseConfiguration.fromEnvironment(["PURSE_DATA_DIR": directory.appendingPathComponent("data").path,
                                                                    "PURSE_SEAL_KEY_FILE": keyFile.path])
        #expect(!SecretSealer.isInsideDataDirectory(configuration))
        let fromFile = try SecretSealer(configuration: configuration)
        // The file's key is the key itself (its line break dropped): the same as the variable.
        let sealed = try fromFile.seal("whsec_x", column: "webhook_secret")
        #expect(try SecretSealer(configuration: try PurseConfiguration.fromEnvironment(["PURSE_SEAL_KEY": String(repeating: "k", count: 40)]))
            .open(sealed, column: "webhook_secret") == "whsec_x")
        configuration.sealKeyFile = nil
        #expect(SecretSealer.isInsideDataDirectory(configuration))
        configuration.sealKeyFile = directory.appendingPathComponent("data/../data/secrets/seal.key").path
        #expect(SecretSealer.isInsideDataDirectory(configuration))
        configuration.sealKeyFile = directory.appendingPathComponent("missing.key").path
        #expect(throws: ConfigurationError.self) { try SecretSealer(configuration: configuration) }
    }
}

/// The connection caps: counted per network, with places kept for networks that have none open.
@Suite("Connection caps")
struct ConnectionCapTests {
    @Test("an IPv4 /24 and an IPv6 /64 are one network; IPv4-mapped addresses count as IPv4")
    func networks() {
        #expect(ConnectionCounter.network(of: "203.0.113.7") == "203.0.113.0/24")
        #expect(ConnectionCounter.network(of: "203.0.113.250") == ConnectionCounter.network(of: "203.0.113.7"))
        #expect(ConnectionCounter.network(of: "203.0.114.7") != ConnectionCounter.network(of: "203.0.113.7"))
        #expect(ConnectionCounter.network(of: "2001:db8:1:2:aaaa::1") == ConnectionCounter.network(of: "2001:db8:1:2:ffff:ffff:ffff:ffff"))
        #expect(ConnectionCounter.network(of: "2001:db8:1:3::1") != ConnectionCounter.network(of: "2001:db8:1:2::1"))
        #expect(ConnectionCounter.network(of: "::ffff:203.0.113.9") == "203.0.113.0/24")
    }

    @Test("a network's connections are capped together; the last places wait for networks with none open")
    func capsAndReserve() {
        var limits = HTTPServerLimits()
        limits.maxConnections = 100
        limits.maxConnectionsPerPeer = 50
        let counter = ConnectionCounter(limits: limits)
        // Two addresses of one /24 share its 50.
        var admitted = 0
        for n in 0..<60 where counter.open(peer: "198.51.100.\(n % 2 + 1)") { admitted += 1 }
        #expect(admitted == 50)
        // A second network fills up to the reserve (90 of 100): its 41st is refused though it is under its cap.
        admitted = 0
        for _ in 0..<50 where counter.open(peer: "192.0.2.1") { admitted += 1 }
        #expect(admitted == 40 && counter.open == 90)
        // Networks with nothing open still get in, one place each, up to the total.
        for n in 0..<10 { #expect(counter.open(peer: "10.0.\(n).1"), "network \(n)") }
        #expect(!counter.open(peer: "10.0.99.1"))
        counter.close(peer: "192.0.2.1")
        #expect(counter.open(peer: "10.0.99.1"))
    }
}

/// A job that fails says why in the log (not only in `jobs.last_error`), and failures and dead
/// jobs are counted in the metrics.
@Suite("Job failures")
struct JobFailureTests {
    struct Refused: Error, CustomStringConvertible { var description: String { "the supplier refused: unknown product" } }

    @Test("a failed job logs its reason; failures and dead jobs are counted by kind", arguments: TestEngines.all)
    func failuresAreLoggedAndCounted(engine: DatabaseEngine) async throws {
        let server = try await TestServer.make(engine: engine)
        let logs = CapturedLogs()
        let metrics = RequestMetrics()
        let queue = server.environment.jobs
        _ = try await server.environment.database.transaction { db in
            try await queue.enqueue(kind: "test.refused", payload: ["x": 1], runAt: Date(), maxAttempts: 1, in: db)
        }
        let worker = JobWorker(queue: queue, handlers: [JobHandler(kind: "test.refused") { _ in throw Refused() }], logger: logs.logger, metrics: metrics)
        #expect(await worker.runOnce() == 1)
        let lines = logs.lines.withLock { $0 }
        #expect(lines.contains { $0.contains("job dead") && $0.contains("the supplier refused: unknown product") }, "\(lines)")
        let exposition = metrics.exposition()
        #expect(exposition.contains(#"purse_jobs_failed_total{kind="test.refused"} 1"#) && exposition.contains(#"purse_jobs_dead_total{kind="test.refused"} 1"#),
                "\(exposition)")
        await server.shutdown()
    }
}

/// While PostgreSQL is down, the pool keeps reconnecting: a session must not wait for it to come
/// back, it fails within the lease bound as an outage (a 503 to retry).
@Suite("Database outages fail fast")
struct DatabaseOutageTests {
    @Test("a lease on a PostgreSQL that is not there fails within its bound, as an outage")
    func leaseBound() async throws {
        let port = try LoopbackPort.freePair()
        let database = try await Database.open(url: "postgres://postgres@127.0.0.1:\(port)/purse?lease_timeout=1s", logger: Logger(label: "test"))
        let started = ContinuousClock.now
        do {
            _ = try await database.read { db in try await db.raw("SELECT 1 AS one").all() }
            Issue.record("a session ran without a database")
        } catch {
            #expect(DatabaseOutage.contains(error), "\(error)")
        }
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(900) && waited < .seconds(5), "\(waited)")
        // A transaction the same way, and the ping /health makes.
        await #expect(throws: DatabaseLeaseTimeout.self) { try await database.transaction { db in try await db.raw("SELECT 1 AS one").run() } }
        await #expect(throws: (any Error).self) { try await database.ping() }
        await database.shutdown()
    }

    @Test("lease_timeout takes seconds or milliseconds, and refuses nonsense")
    func leaseTimeoutSetting() async throws {
        for bad in ["0s", "-1s", "abc", "9999999s"] {
            await #expect(throws: (any Error).self, "\(bad)") {
                let database = try await Database.open(url: "postgres://postgres@127.0.0.1:1/purse?lease_timeout=\(bad)", logger: Logger(label: "test"))
                await database.shutdown()
            }
        }
    }
}

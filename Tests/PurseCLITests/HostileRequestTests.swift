import Foundation
import HTTPTypes
import Logging
import ChippiPayService
import PurseCLI
import PurseDatabase
import PurseHTTP
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// `purse serve` as a hostile client meets it: every service mounted, requests written byte by
/// byte on a raw socket. Each case once ended the whole process; now each gets a 4xx (or the
/// connection closed) and the server goes on answering `/health`.
@Suite("Hostile requests against every service at once")
struct HostileRequestTests {
    /// Every module `purse serve` mounts, on a free loopback port.
    static func withServer(limits: HTTPServerLimits = HTTPServerLimits(), environment: [String: String] = [:],
                           _ body: @Sendable (_ port: Int, _ client: LiveHTTPClient) async throws -> Void) async throws {
        try await withServer(limits: limits, environment: environment) { port, client, _ in try await body(port, client) }
    }

    static func withServer(limits: HTTPServerLimits = HTTPServerLimits(), environment: [String: String] = [:],
                           _ body: @Sendable (_ port: Int, _ client: LiveHTTPClient, _ server: TestServer) async throws -> Void) async throws {
        let port = try LoopbackPort.freePair()
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-hostile-\(UUID().uuidString)").path
        var configuration = PurseConfiguration()
        configuration.port = port
        configuration.dataDirectory = dataDirectory
        configuration.environment = environment
        let modules = try PurseModules.all(configuration: configuration)
        let server = try await TestServer.make(modules: modules) {
            $0.runsJobsInBackground = false
            $0.port = port
            $0.dataDirectory = dataDirectory
            $0.httpLimits = limits
            $0.environment = environment
        }
        try await server.withRunningServer { client in try await body(port, client, server) }
    }

    static func expectAlive(_ client: LiveHTTPClient, sourceLocation: SourceLocation = #_sourceLocation) async {
        let health = try? await client.execute(uri: "/health", method: .get)
        #expect(health?.status == .ok, "the server stopped answering", sourceLocation: sourceLocation)
    }

    /// `X-Timestamp: -9223372036854775808` once overflowed the signature window's subtraction in
    /// Cuti-E's device check, before any lookup: one unauthenticated request ended every service.
    @Test("a signed Cuti-E request with X-Timestamp at Int64's ends: 401, the server alive")
    func cutieTimestampAtTheEnds() async throws {
        try await Self.withServer { port, client in
            for stamp in ["-9223372036854775808", "9223372036854775807", "-1", "99999999999999999999"] {
                let exchange = try await RawConnection.exchange(port: port, """
                    GET /v1/conversations HTTP/1.1\r
                    Host: 127.0.0.1\r
                    X-App-ID: nope\r
                    X-Device-Token: x\r
                    X-Timestamp: \(stamp)\r
                    X-Signature: 00\r
                    Connection: close\r
                    \r

                    """)
                #expect(exchange.status == 401, "X-Timestamp \(stamp): \(exchange.received.prefix(200))")
                await Self.expectAlive(client)
            }
        }
    }

    /// Framing a parser must not guess at: each is 400 (or 414/431/505) with the connection closed,
    /// never a request passed on, and never a connection left open to smuggle the next one.
    @Test("malformed framing: a 4xx or 505 and the connection closed, the server alive")
    func malformedFraming() async throws {
        try await Self.withServer { port, client in
            let cases: [(String, String, Set<Int>)] = [
                ("Content-Length with Transfer-Encoding",
                 "POST /auth/login HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", [400]),
                ("a bare CR in a header", "GET /health HTTP/1.1\r\nHost: a\rX-Evil: 1\r\n\r\n", [400]),
                ("a method that is not a token", "G@T /health HTTP/1.1\r\nHost: a\r\n\r\n", [400]),
                ("HTTP/9.9", "GET /health HTTP/9.9\r\nHost: a\r\n\r\n", [400, 505]),
                ("two Content-Lengths that differ", "POST /auth/login HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde", [400]),
                ("a chunk size that is not hex", "POST /auth/login HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", [400]),
                ("a request line of 90 KB", "GET /health?" + String(repeating: "a", count: 90_000) + " HTTP/1.1\r\nHost: a\r\n\r\n", [414]),
                ("a head of 90 KB", "GET /health HTTP/1.1\r\nHost: a\r\n" + String(repeating: "X-Pad: \(String(repeating: "b", count: 1000))\r\n", count: 90) + "\r\n", [431]),
                ("binary garbage", String(decoding: (0..<200).map { UInt8(($0 * 37) % 256) }, as: UTF8.self), [400]),
            ]
            for (name, request, expected) in cases {
                let exchange = try await RawConnection.exchange(port: port, request, timeout: .seconds(5))
                #expect(exchange.status.map(expected.contains) == true, "\(name): \(exchange.received.prefix(120))")
                #expect(exchange.closedByServer, "\(name): the connection stayed open")
            }
            await Self.expectAlive(client)
        }
    }

    /// A client that opens a connection and sends nothing, half a head, or a body that stops: each is
    /// closed when its clock runs out (here 1 s), not held for ever.
    @Test("idle, half-sent heads and stalled bodies are closed on time")
    func slowSenders() async throws {
        var limits = HTTPServerLimits()
        limits.headerTimeout = .seconds(1)
        limits.idleTimeout = .seconds(1)
        limits.bodyTimeout = .seconds(1)
        try await Self.withServer(limits: limits) { port, client in
            let silent = try await RawConnection.exchange(port: port, [], timeout: .seconds(5))
            #expect(silent.closedByServer && silent.received.isEmpty, "\(silent.received.prefix(120))")
            // Closed in time, with 408 when part of the head had come (a loaded machine may send
            // the first bytes after the clock ran out: then closed without a word).
            let half = try await RawConnection.exchange(port: port, "GET /health HTTP/1.1\r\nHost: a\r\nX-Slow: ", timeout: .seconds(5))
            #expect(half.closedByServer && (half.status == 408 || half.received.isEmpty), "\(half.received.prefix(120))")
            // A slow sender: a header line every 400 ms never completes the head within its 1 s.
            let drip = try await RawConnection.exchange(port: port, ["GET /health HTTP/1.1\r\n", "X-A: 1\r\n", "X-B: 1\r\n", "X-C: 1\r\n", "X-D: 1\r\n"].map { Array($0.utf8) },
                                                        pause: .milliseconds(400), timeout: .seconds(5))
            #expect(drip.closedByServer && (drip.status == 408 || drip.received.isEmpty), "\(drip.received.prefix(120))")
            let stalled = try await RawConnection.exchange(port: port, "POST /auth/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"em",
                                                           timeout: .seconds(5))
            #expect(stalled.closedByServer && (stalled.status == 408 || stalled.received.isEmpty), "\(stalled.received.prefix(120))")
            // After a complete answer the kept-alive connection waits 1 s for the next request.
            let kept = try await RawConnection.exchange(port: port, "GET /health HTTP/1.1\r\nHost: a\r\n\r\n", timeout: .seconds(5))
            #expect(kept.closedByServer && kept.status == 200, "\(kept.received.prefix(120))")
            await Self.expectAlive(client)
        }
    }

    /// The clocks a slow client cannot stretch: a body sent a byte at a time gets its deadline
    /// and no more; the next head on a kept-alive connection, once begun, gets the head
    /// deadline, not the idle one.
    @Test("a trickled body and a dripped second head are closed on the head and body deadlines, not kept by each byte")
    func trickles() async throws {
        // Clocks of 2 s: long enough for a loaded machine to read the first request in time.
        var limits = HTTPServerLimits()
        limits.headerTimeout = .seconds(2)
        limits.idleTimeout = .seconds(30)
        limits.bodyTimeout = .seconds(2)
        try await Self.withServer(limits: limits) { port, client in
            // One byte every 300 ms of a 40-byte body: each byte within the old per-byte clock.
            let head = Array("POST /auth/login HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n".utf8)
            let started = ContinuousClock.now
            let trickle = try await RawConnection.exchange(port: port, [head] + Array(repeating: Array("{".utf8), count: 40), pause: .milliseconds(300),
                                                           timeout: .seconds(8))
            #expect(trickle.closedByServer && (trickle.status == 408 || trickle.received.isEmpty), "\(trickle.received.prefix(120))")
            #expect(ContinuousClock.now - started < .seconds(7))
            // A whole request, then the next head dripped a line every 300 ms: closed after about
            // the head's 2 s, not the idle 30 s.
            let first = Array("GET /health HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
            let second = ["GET /health HTTP/1.1\r\n"] + (0..<14).map { "X-\($0): 1\r\n" }
            let dripStart = ContinuousClock.now
            let drip = try await RawConnection.exchange(port: port, [first] + second.map { Array($0.utf8) }, pause: .milliseconds(300), timeout: .seconds(12))
            #expect(drip.closedByServer && drip.status == 200, "\(drip.received.prefix(120))")
            #expect(ContinuousClock.now - dripStart < .seconds(8))
            await Self.expectAlive(client)
        }
    }

    /// A pipelined request whose head crosses a read boundary: its request line came with the
    /// first request, a 9 KB header (within the 32 KiB head, over the 8 KiB line) with the next
    /// read. It is measured as a head, not taken for a long request line.
    @Test("a pipelined head split across reads is measured as a head: both requests served")
    func pipelinedHeadAcrossReads() async throws {
        try await Self.withServer { port, client in
            let first = "GET /health HTTP/1.1\r\nHost: a\r\n\r\nGET /health HTTP/1.1\r\n"
            let second = "X-Long: " + String(repeating: "x", count: 9_000) + "\r\nHost: a\r\nConnection: close\r\n\r\n"
            let exchange = try await RawConnection.exchange(port: port, [Array(first.utf8), Array(second.utf8)], pause: .milliseconds(200), timeout: .seconds(5))
            #expect(exchange.received.components(separatedBy: "HTTP/1.1 200").count - 1 == 2, "\(exchange.received.prefix(300))")
            await Self.expectAlive(client)
        }
    }

    /// RFC 9112 §3.2: an HTTP/1.1 request without a Host, or with two, is 400; HTTP/1.0 may omit it.
    @Test("no Host or two Hosts: 400 and closed; an HTTP/1.0 request without one is served")
    func hostField() async throws {
        try await Self.withServer { port, client in
            for request in ["GET /health HTTP/1.1\r\n\r\n", "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                            "GET /health HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"] {
                let exchange = try await RawConnection.exchange(port: port, request)
                #expect(exchange.status == 400 && exchange.closedByServer, "\(request.debugDescription): \(exchange.received.prefix(120))")
            }
            #expect(try await RawConnection.exchange(port: port, "GET /health HTTP/1.0\r\n\r\n").status == 200)
            await Self.expectAlive(client)
        }
    }

    /// Connections beyond the per-peer cap are answered 503 and closed; the ones within it work.
    @Test("connections beyond the cap: 503 and closed; within it, served")
    func connectionCaps() async throws {
        var limits = HTTPServerLimits()
        limits.maxConnectionsPerPeer = 4
        limits.idleTimeout = .seconds(30)
        try await Self.withServer(limits: limits) { port, client in
            // LiveHTTPClient keeps one connection from /health; hold three more open, half-sent.
            let held = (0..<8).map { _ in Task { try await RawConnection.exchange(port: port, "GET /health HTTP/1.1\r\nHost: a\r\n", timeout: .seconds(3)) } }
            var refused = 0
            for task in held where try await task.value.status == 503 { refused += 1 }
            #expect(refused >= 4, "\(refused) of 8 refused")
            try await Task.sleep(for: .milliseconds(200))
            await Self.expectAlive(client)
        }
    }

    /// A user deleted from the database while a session of theirs is still signed: every write
    /// is refused as for no session (never a 500 from a row that points at nobody), reads within
    /// seconds, and the session is no ChippiPay `auth_token` either.
    @Test("a deleted user's session moves nothing and breaks nothing")
    func deletedUsers() async throws {
        let keys = "pk_test_hostile:sk_test_hostile_secret"
        try await Self.withServer(environment: ["CHIPPI_SANDBOX_MERCHANT_KEYS": keys]) { _, client, server in
            let (token, userID) = try await client.register()
            #expect(try await client.json(.get, "/user/balance", token: token).status == .ok)
            try await server.environment.database.transaction { db in
                try await db.raw("DELETE FROM users WHERE id = \(bind: userID)").run()
            }
            let writes: [(HTTPRequest.Method, String, String?)] = [
                (.post, "/sandbox/nexus/fund", #"{"amount": 5000}"#),
                (.put, "/user/pin", #"{"pin": "2580"}"#),
                (.post, "/biometric/register/options", nil),
                (.post, "/user/topup", #"{"amount": 500, "productCode": "AIRTIME_MTN", "recipientPhone": "08012345678", "pin": "2580"}"#),
            ]
            for (method, path, body) in writes {
                let answer = try await client.json(method, path, body, token: token, headers: [.idempotencyKey: UUID().uuidString])
                #expect(answer.status == .unauthorized, "\(method) \(path): \(answer.status) \(answer.text.prefix(120))")
            }
            try await Task.sleep(for: .seconds(5.5))
            #expect(try await client.json(.get, "/user/balance", token: token).status == .unauthorized)
            let parts = keys.split(separator: ":").map(String.init)
            let prepared = try await client.json(.post, "/v1/chipi-wallets/prepare-creation", #"{"auth_token":"\#(token)","external_user_id":"\#(userID)"}"#,
                                                 headers: [HTTPField.Name("x-api-key")!: parts[0], .authorization: "Bearer \(parts[1])"])
            #expect(prepared.status == .unauthorized, "\(prepared.text.prefix(160))")
            await Self.expectAlive(client)
        }
    }
}

/// Operator commands open the server's database without mounting anything: `purse chippi keys
/// create` run without the server's CHIPPI_SANDBOX_MERCHANT_KEYS once added a second sandbox pair
/// and rewrote the server's keys file.
@Suite("Operator commands change only what they are asked to")
struct OperatorCommandTests {
    @Test func keysCreateLeavesTheSandboxMerchantAlone() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-operator-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var served = PurseConfiguration()
        served.dataDirectory = directory
        served.bcryptCost = 4
        served.logLevel = .critical
        served.environment = ["CHIPPI_SANDBOX_MERCHANT_KEYS": "pk_test_served:sk_test_served_secret"]
        let server = try await buildApplication(configuration: served, modules: PurseModules.all(configuration: served))
        await server.environment.database.shutdown()
        let file = directory + "/secrets/chippi-sandbox-merchant.json"
        let before = try String(contentsOfFile: file, encoding: .utf8)

        // The operator's shell lacks the server's variable.
        var shell = served
        shell.environment = [:]
        let environment = try await openEnvironment(configuration: shell, modules: PurseModules.all(configuration: shell))
        let keys = try await ChippiPayModule.createMerchantKeys(merchant: "mer_new", name: "New", webhookURL: nil, live: false, environment: environment)
        let rows = try await environment.database.read { db in
            try await db.raw("SELECT public_key, merchant_id FROM chippi_api_keys ORDER BY public_key").all()
                .map { (try $0.decode(column: "public_key", as: String.self), try $0.decode(column: "merchant_id", as: String.self)) }
        }
        await environment.database.shutdown()
        #expect(rows.map(\.0) == [keys.public, "pk_test_served"].sorted())
        #expect(rows.filter { $0.1 == "mer_sandbox" }.count == 1)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == before)
    }
}

import Foundation
import HTTPTypes
import PurseKit
import PurseHTTP
import Synchronization
import Testing

@Suite("APIClient")
struct APIClientTests {
    struct Balance: Codable, Equatable { var balance: Int }

    func makeClient(_ transport: ScriptedTransport, sleeper: RecordingSleeper, attempts: Int = 3, random: Double = 1) -> APIClient {
        APIClient(
            session: ClientSession(baseURL: URL(string: "http://127.0.0.1:9")!),
            transport: transport,
            retry: RetryPolicy(maxAttempts: attempts, baseDelay: .milliseconds(100), maxDelay: .seconds(1), random: { random }),
            sleeper: sleeper.sleeper
        )
    }

    @Test func decodesSuccessAndSendsBearerToken() async throws {
        let transport = ScriptedTransport([json(200, #"{"balance": 4500}"#)])
        let client = makeClient(transport, sleeper: RecordingSleeper())
        try await client.session.setToken("tok123")
        let balance: Balance = try await client.send(.get, "/user/balance")
        #expect(balance == Balance(balance: 4500))
        let request = try #require(transport.requests.first)
        #expect(request.headerFields[.authorization] == "Bearer tok123")
        #expect(request.url.absoluteString == "http://127.0.0.1:9/user/balance")
    }

    @Test func mapsServerErrorJSONIntoTheTaxonomy() async throws {
        let cases: [(HTTPResponse.Status, String, PurseError.Kind)] = [
            (401, #"{"error": "Authentication required"}"#, .unauthorized),
            (404, #"{"error": "User not found"}"#, .notFound),
            (400, #"{"error": "User already has a Stripe Connect account"}"#, .server),
            (400, #"{"verified": false, "message": "Signature verification failed"}"#, .server),
        ]
        for (status, body, kind) in cases {
            let client = makeClient(ScriptedTransport([json(status, body)]), sleeper: RecordingSleeper())
            do {
                let _: Balance = try await client.send(.get, "/x")
                Issue.record("expected an error for \(status)")
            } catch let error as PurseError {
                #expect(error.kind == kind)
                #expect(!error.message.isEmpty)
                if status == 400 { #expect(error.status == 400) }
            }
        }
        let client = makeClient(ScriptedTransport([json(400, #"{"verified": false, "message": "Signature verification failed"}"#)]), sleeper: RecordingSleeper())
        await #expect(throws: PurseError.server(status: 400, message: "")) {
            let _: Balance = try await client.send(.post, "/biometric/auth/verify", body: ["a": 1])
        }
    }

    @Test func retriesGetOn503WithExponentialBackoff() async throws {
        let sleeper = RecordingSleeper()
        let transport = ScriptedTransport([json(503, "{}"), json(503, "{}"), json(200, #"{"balance": 1}"#)])
        let client = makeClient(transport, sleeper: sleeper)
        let balance: Balance = try await client.send(.get, "/user/balance")
        #expect(balance.balance == 1)
        #expect(transport.requests.count == 3)
        #expect(sleeper.recorded == [.milliseconds(100), .milliseconds(200)])
    }

    @Test func jitterScalesTheBackoff() async throws {
        let sleeper = RecordingSleeper()
        let transport = ScriptedTransport([json(503, "{}"), json(200, #"{"balance": 1}"#)])
        let client = makeClient(transport, sleeper: sleeper, random: 0)
        let _: Balance = try await client.send(.get, "/user/balance")
        #expect(sleeper.recorded == [.milliseconds(50)])
    }

    @Test func honoursRetryAfter() async throws {
        let sleeper = RecordingSleeper()
        let transport = ScriptedTransport([json(429, #"{"error": "slow down"}"#, headerFields: [.retryAfter: "3"]), json(200, #"{"balance": 2}"#)])
        let client = makeClient(transport, sleeper: sleeper)
        let _: Balance = try await client.send(.get, "/user/balance")
        #expect(sleeper.recorded == [.seconds(3)])
    }

    /// A key whose first request is still finishing: the server answers 409
    /// `idempotency_key_in_use` with Retry-After, and the client sends the same request, key
    /// included, again after the wait.
    @Test func aKeyStillInUseIsAskedAgainWithTheSameKey() async throws {
        let sleeper = RecordingSleeper()
        let transport = ScriptedTransport([
            json(409, #"{"error": "still being processed", "code": "idempotency_key_in_use"}"#, headerFields: [.retryAfter: "1"]),
            json(200, #"{"balance": 3}"#),
        ])
        let client = makeClient(transport, sleeper: sleeper)
        let balance: Balance = try await client.send(.post, "/user/topup", body: ["amount": 500], idempotencyKey: "one")
        #expect(balance.balance == 3 && sleeper.recorded == [.seconds(1)])
        #expect(transport.requests.map { $0.headerFields[.idempotencyKey] } == ["one", "one"])
        // A 409 without Retry-After is a refusal, not a wait.
        let refused = makeClient(ScriptedTransport([json(409, #"{"error": "already exists"}"#)]), sleeper: RecordingSleeper())
        await #expect(throws: PurseError.self) { let _: Balance = try await refused.send(.post, "/x", body: ["a": 1], idempotencyKey: "k") }
    }

    @Test func tooLongRetryAfterIsReturnedNotWaited() async throws {
        let sleeper = RecordingSleeper()
        let transport = ScriptedTransport([json(429, #"{"error": "slow down"}"#, headerFields: [.retryAfter: "3600"])])
        let client = makeClient(transport, sleeper: sleeper)
        do {
            let _: Balance = try await client.send(.get, "/user/balance")
            Issue.record("expected rate limiting")
        } catch let error as PurseError {
            #expect(error.kind == .rateLimited)
            #expect(error.retryAfter == .seconds(3600))
        }
        #expect(sleeper.recorded.isEmpty)
    }

    @Test func postWithoutIdempotencyKeyIsNeverRetried() async throws {
        let transport = ScriptedTransport([json(503, "{}"), json(200, #"{"balance": 1}"#)])
        let client = makeClient(transport, sleeper: RecordingSleeper())
        await #expect(throws: PurseError.self) {
            let _: Balance = try await client.send(.post, "/user/topup", body: ["amount": 500])
        }
        #expect(transport.requests.count == 1)
    }

    @Test func postWithIdempotencyKeyRetriesWithTheSameKey() async throws {
        let transport = ScriptedTransport([.fail(.timeout("slow")), json(503, "{}"), json(200, #"{"balance": 1}"#)])
        let client = makeClient(transport, sleeper: RecordingSleeper())
        let key = IdempotencyKey.make()
        let _: Balance = try await client.send(.post, "/user/topup", body: ["amount": 500], idempotencyKey: key)
        #expect(transport.requests.count == 3)
        #expect(Set(transport.requests.map { $0.headerFields[.idempotencyKey] }) == [key])
        #expect(Set(transport.requests.map(\.body)).count == 1)
    }

    /// Idempotency keys are random version-4 UUIDs in lowercase (the form servers log and compare).
    @Test func idempotencyKeysAreRandomVersion4UUIDs() {
        let keys = (0..<2_000).map { _ in IdempotencyKey.make() }
        #expect(Set(keys).count == keys.count)
        for key in keys {
            #expect(key.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/) != nil, "\(key)")
            #expect(UUID(uuidString: key) != nil)
        }
        // The dashes, version and variant are fixed; every other digit is the generator's.
        func distinct(at position: Int) -> Int { Set(keys.map { Array($0)[position] }).count }
        #expect([8, 13, 14, 18, 23].map(distinct) == [1, 1, 1, 1, 1])
        #expect(distinct(at: 19) == 4)
        #expect([0, 7, 9, 15, 20, 24, 35].map(distinct) == [16, 16, 16, 16, 16, 16, 16])
    }

    @Test func givesUpAfterMaxAttempts() async throws {
        let transport = ScriptedTransport([json(503, "{}"), json(503, "{}"), json(503, "{}"), json(200, "{}")])
        let client = makeClient(transport, sleeper: RecordingSleeper(), attempts: 3)
        await #expect(throws: PurseError.server(status: 503, message: "")) {
            let _: EmptyResponse = try await client.send(.get, "/x")
        }
        #expect(transport.requests.count == 3)
    }

    @Test func offlineIsNotRetriedAndSaysOffline() async throws {
        let transport = ScriptedTransport([.fail(.offline("refused"))])
        let client = makeClient(transport, sleeper: RecordingSleeper())
        await #expect(throws: PurseError.offline) {
            let _: EmptyResponse = try await client.send(.get, "/x")
        }
    }

    @Test func undecodableSuccessIsInvalidResponse() async throws {
        let client = makeClient(ScriptedTransport([json(200, "<html>")]), sleeper: RecordingSleeper())
        await #expect(throws: PurseError.invalidResponse("")) {
            let _: Balance = try await client.send(.get, "/x")
        }
    }

    @Test func retryAfterHTTPDateIsParsed() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let later = "Tue, 14 Nov 2023 22:13:40 GMT"  // now + 20 s
        #expect(PurseError.parseRetryAfter(later, now: now) == .seconds(20))
        #expect(PurseError.parseRetryAfter("soon") == nil)
    }

    @Test func sessionTokenPersistsInTheSecureStore() async throws {
        let store = InMemorySecureStore()
        let url = URL(string: "http://127.0.0.1:8080")!
        try await ClientSession(baseURL: url, store: store).setToken("abc")
        #expect(try await ClientSession(baseURL: url, store: store).token() == "abc")
        #expect(try await ClientSession(baseURL: URL(string: "http://other:1")!, store: store).token() == nil)
        try await ClientSession(baseURL: url, store: store).setToken(nil)
        #expect(try await ClientSession(baseURL: url, store: store).token() == nil)
    }
}

/// A server that never answers: each try lasts its whole timeout.
final class HungTransport: HTTPTransport {
    let timeouts = Mutex<[Duration]>([])
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        timeouts.withLock { $0.append(request.timeout) }
        try await Task.sleep(for: request.timeout)
        throw PurseError.timeout("no answer")
    }
}

@Suite("APIClient deadline")
struct APIClientDeadlineTests {
    @Test("one deadline bounds a call, its retries and their waits included")
    func deadlineBoundsRetries() async throws {
        let hung = HungTransport()
        let client = APIClient(session: ClientSession(baseURL: URL(string: "https://example.com")!), transport: hung,
                               retry: RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(20)), timeout: .seconds(30), deadline: .milliseconds(600))
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: PurseError.self) { _ = try await client.sendRaw(.get, "/v1/skus") }
        let elapsed = clock.now - start
        // Without the deadline: four tries of 30 s, two minutes. With it, the tries are given what
        // is left of 0.6 s (checked below, by what the transport was told); the elapsed time only
        // has to stay clear of the two minutes, however late a loaded machine schedules.
        #expect(elapsed < .seconds(90), "\(elapsed)")
        let given = hung.timeouts.withLock { $0 }
        #expect(!given.isEmpty && given.allSatisfy { $0 <= .milliseconds(600) })
        #expect(given.reduce(Duration.zero, +) <= .milliseconds(600))
    }

    @Test("one definition of transient: no answer, 429 and 5xx; never a refusal")
    func transientFailures() {
        let transient: [PurseError] = [.offline, .timeout, .rateLimited(retryAfter: nil), .server(status: 503, message: "busy")]
        let final: [PurseError] = [.unauthorized, .notFound, .cancelled, .server(status: 409, message: "conflict"),
                                   .domain("insufficient_balance", message: "no"), .invalidResponse("?")]
        #expect(transient.allSatisfy(\.isTransient) && !final.contains(where: \.isTransient))
        // A kind is a struct: one the caller has not heard of compares and switches with `default`.
        let later = PurseError.Kind(rawValue: "quotaExceeded")
        #expect(later != .server && later.description == "quotaExceeded")
    }
}

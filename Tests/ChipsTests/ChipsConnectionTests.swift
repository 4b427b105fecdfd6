import Foundation
import HTTPTypes
import MyCHIPs
import PurseFormats
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import PurseTestSupport
import Synchronization
import Testing

/// A provider in memory: answers `/clientinfo`, accepts every upgrade, and lets the test decide
/// what each request frame gets back and when.
final class ScriptedProvider: WebSocketTransport, HTTPTransport, Sendable {
    final class Socket: WebSocketConnection, Sendable {
        let messages: AsyncThrowingStream<String, any Error>
        let incoming: AsyncThrowingStream<String, any Error>.Continuation
        let sent = Mutex<[String]>([])

        init() {
            (messages, incoming) = AsyncThrowingStream<String, any Error>.makeStream()
        }

        func send(_ text: String) async throws { sent.withLock { $0.append(text) } }
        func close() async { incoming.finish() }
        /// The provider cuts the connection.
        func drop() { incoming.finish(throwing: CancellationError()) }
        func answer(_ text: String) { incoming.yield(text) }

        var requests: [JSONValue] {
            sent.withLock { $0 }.compactMap { try? JSONDecoder().decode(JSONValue.self, from: Data($0.utf8)) }
        }
    }

    let sockets = Mutex<[Socket]>([])
    let urls = Mutex<[URL]>([])
    /// While set, upgrades are refused with this status.
    let refuse = Mutex<Int?>(nil)
    let unreachable = Mutex(false)

    func connect(to url: URL, headerFields: HTTPFields) async throws -> any WebSocketConnection {
        if unreachable.withLock({ $0 }) { throw PurseError.offline }
        if let status = refuse.withLock({ $0 }) { throw WebSocketRefusedError(status: status) }
        urls.withLock { $0.append(url) }
        let socket = Socket()
        sockets.withLock { $0.append(socket) }
        return socket
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if unreachable.withLock({ $0 }) { throw PurseError.offline }
        return TransportResponse(status: 200, body: Data(#"{"ip":"127.0.0.1","userAgent":"\#(request.headerFields[.userAgent] ?? "")","date":"2026-11-25T12:00:00.000Z"}"#.utf8))
    }

    var latest: Socket { sockets.withLock { $0.last! } }

    /// Waits until the latest socket has sent `count` frames.
    func waitForRequests(_ count: Int) async throws {
        for _ in 0..<500 {
            if let socket = sockets.withLock({ $0.last }), socket.sent.withLock({ $0.count }) >= count { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        Issue.record("the client sent fewer than \(count) requests")
    }
}

@Suite("MyCHIPs connection: matching, timeouts, drops and reconnection")
struct ChipsConnectionTests {
    static func connected(_ provider: ScriptedProvider, timeout: Duration = .seconds(5), sleeper: Sleeper = .live) async throws -> ChipsConnection {
        let store = InMemorySecureStore()
        let keychain = ChipsKeychain(store: store)
        try await keychain.save(ConnectionKey())
        try await keychain.save(ChipsKeychain.Account(host: "127.0.0.1", port: 1025, user: "alice", secure: false))
        var options = ChipsConnection.Options()
        options.requestTimeout = timeout
        options.reconnect = RetryPolicy(baseDelay: .milliseconds(100), maxDelay: .seconds(1), jitter: 1...1)
        let connection = ChipsConnection(keychain: keychain, transport: provider, http: provider, options: options, sleeper: sleeper)
        try await connection.connect()
        return connection
    }

    @Test("responses coming back in another order reach their own requests")
    func outOfOrder() async throws {
        let provider = ScriptedProvider()
        let connection = try await Self.connected(provider)
        async let first = connection.request(view: "v", action: "select")
        async let second = connection.request(view: "v", action: "select")
        async let third = connection.request(view: "v", action: "select")
        try await provider.waitForRequests(3)
        let ids = provider.latest.requests.compactMap { $0["id"]?.int64Value }
        for id in ids.reversed() {
            provider.latest.answer(#"{"id":\#(id),"view":"v","action":"select","data":\#(id * 10)}"#)
        }
        let answers = try await [first, second, third]
        #expect(Set(answers.compactMap(\.int64Value)) == Set(ids.map { $0 * 10 }))
        // Each answer is its own request's: the first request sent got id × 10 for its id.
        #expect(answers.compactMap(\.int64Value).sorted() == ids.sorted().map { $0 * 10 })
        await connection.disconnect()
    }

    @Test("a request times out with a clear error while the others complete")
    func timeout() async throws {
        let provider = ScriptedProvider()
        // Long enough that the fast request is answered inside it on a loaded machine (the whole
        // suite on two cores), short enough for the slow one's timeout not to hold the run up.
        let connection = try await Self.connected(provider, timeout: .seconds(4))
        let slow = Task { try await connection.request(view: "v", action: "tuple") }
        try await provider.waitForRequests(1)
        let fast = Task { try await connection.request(view: "v", action: "tuple") }
        try await provider.waitForRequests(2)
        let ids = provider.latest.requests.compactMap { $0["id"]?.int64Value }
        provider.latest.answer(#"{"id":\#(ids[1]),"data":"fast"}"#)
        #expect(try await fast.value == "fast")
        await #expect(throws: ChipsError.timeout) { _ = try await slow.value }
        #expect(await connection.pendingCount == 0)
        await connection.disconnect()
    }

    @Test("an error frame becomes the provider's error; pushes go to the notification stream")
    func errorsAndPushes() async throws {
        let provider = ScriptedProvider()
        let connection = try await Self.connected(provider)
        let pushes = await connection.notifications()
        let refused = Task { try await connection.request(view: "mychips.chits_v_me", action: "insert") }
        try await provider.waitForRequests(1)
        let id = try #require(provider.latest.requests.first?["id"]?.int64Value)
        provider.latest.answer(#"{"action":"notify","channel":"mu_p1000","data":{"target":"tally"}}"#)
        provider.latest.answer(#"{"id":\#(id),"error":{"message":"from database; !mychips.chits:LIT tally not open","code":"P0001","pgCode":"P0001"}}"#)
        await #expect(throws: ChipsError.server(message: "from database; !mychips.chits:LIT tally not open", code: "P0001", detail: nil)) { _ = try await refused.value }
        // A raised exception's code is the head of the message, as the real provider writes it.
        #expect(ChipsError.server(message: "from database; !mychips.chits:LIT tally not open", code: "P0001", detail: nil).code == "!mychips.chits:LIT")
        #expect(ChipsError.server(message: "unexpected rows: 0 != 1", code: "!wm.lang:badTuples", detail: nil).code == "!wm.lang:badTuples")
        #expect(ChipsError.server(message: "from database; relation \"x\" does not exist", code: "42P01", detail: nil).code == "42P01")
        var iterator = pushes.makeAsyncIterator()
        let push = await iterator.next()
        #expect(push == ChipsNotification(channel: "mu_p1000", data: ["target": "tally"]))
        await connection.disconnect()
    }

    @Test("a drop fails pending requests at once, then the client logs in again by signature with backoff")
    func dropAndReconnect() async throws {
        let provider = ScriptedProvider()
        let waits = Mutex<[Duration]>([])
        let sleeper = Sleeper { duration in
            waits.withLock { $0.append(duration) }
            try await Task.sleep(for: .milliseconds(10))
        }
        let connection = try await Self.connected(provider, sleeper: sleeper)
        let states = await connection.states()
        let pending = Task { try await connection.request(view: "v", action: "select") }
        try await provider.waitForRequests(1)
        provider.unreachable.withLock { $0 = true }
        provider.latest.drop()
        await #expect(throws: ChipsError.disconnected) { _ = try await pending.value }
        #expect(try await eventually { waits.withLock { $0.count } >= 3 })
        provider.unreachable.withLock { $0 = false }
        #expect(try await eventually { await connection.state == .connected })
        let delays = waits.withLock { $0 }
        #expect(delays.prefix(3) == [.milliseconds(100), .milliseconds(200), .milliseconds(400)])
        // Every login after the first is by signature.
        let urls = provider.urls.withLock { $0 }
        #expect(urls.count == 2 && urls.allSatisfy { $0.query?.contains("sign=") == true && $0.query?.contains("date=") == true })
        var seen: [ChipsConnectionState] = []
        for await state in states {
            seen.append(state)
            if seen.count > 2, state == .connected { break }
        }
        #expect(seen.first == .connected && seen.contains(.disconnected) && seen.contains(.connecting))
        await connection.disconnect()
    }

    @Test("a refused login stops reconnection and shows as failed")
    func refusedReconnect() async throws {
        let provider = ScriptedProvider()
        let connection = try await Self.connected(provider, sleeper: Sleeper { _ in })
        provider.refuse.withLock { $0 = 403 }
        provider.latest.drop()
        #expect(try await eventually {
            if case .failed = await connection.state { return true }
            return false
        })
        await #expect(throws: ChipsError.disconnected) { _ = try await connection.request(view: "v", action: "select") }
    }
}

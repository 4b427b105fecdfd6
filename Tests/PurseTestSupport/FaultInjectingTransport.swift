import Foundation
import HTTPTypes
import PurseHTTP
import Synchronization

/// What stands between a client core and the server when the network and the load balancer
/// misbehave: on a seeded share of the requests it carries, one fault each.
///
/// - `tooManyRequests`, `unavailable`: a 429 (with `Retry-After: 0`) or a 503 from the proxy; the
///   server never saw the request.
/// - `droppedBefore`: the connection fails before the request reaches the server (offline).
/// - `lostAnswer`: the server handles the request, and its answer is lost (a timeout) — the case
///   where only an `Idempotency-Key` stops a retry from paying twice.
/// - `duplicated`: the request reaches the server twice at once (a proxy retrying it); the client
///   gets one of the answers.
/// - `delayed`: the request arrives late.
public final class FaultInjectingTransport: HTTPTransport {
    public enum Fault: String, CaseIterable, Sendable {
        case tooManyRequests, unavailable, droppedBefore, lostAnswer, duplicated, delayed
    }

    let inner: any HTTPTransport
    let percent: UInt64
    let applies: @Sendable (TransportRequest) -> Bool
    private let random: Mutex<SplitMix>
    private let injected = Mutex<[Fault: Int]>([:])

    /// - Parameters:
    ///   - percent: The share of matching requests that get a fault (0–100).
    ///   - applies: Which requests may get one (default: all).
    public init(_ inner: any HTTPTransport, seed: UInt64, percent: Int, applies: @escaping @Sendable (TransportRequest) -> Bool = { _ in true }) {
        self.inner = inner
        self.percent = UInt64(max(0, min(100, percent)))
        self.applies = applies
        self.random = Mutex(SplitMix(seed: seed))
    }

    /// How many of each fault were injected so far.
    public var faults: [Fault: Int] { injected.withLock { $0 } }
    public var totalFaults: Int { faults.values.reduce(0, +) }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard applies(request) else { return try await inner.send(request) }
        let fault: Fault? = random.withLock { generator in
            guard generator.next() % 100 < percent else { return nil }
            return Fault.allCases[Int(generator.next() % UInt64(Fault.allCases.count))]
        }
        guard let fault else { return try await inner.send(request) }
        injected.withLock { $0[fault, default: 0] += 1 }
        switch fault {
        case .tooManyRequests:
            return TransportResponse(status: 429, headerFields: [.retryAfter: "0"], body: Data(#"{"error":"Too many requests"}"#.utf8))
        case .unavailable:
            return TransportResponse(status: 503, body: Data(#"{"error":"Service unavailable"}"#.utf8))
        case .droppedBefore:
            throw PurseError.offline("the connection dropped")
        case .lostAnswer:
            _ = try await inner.send(request)
            throw PurseError.timeout("the answer never came")
        case .duplicated:
            async let first = inner.send(request)
            async let second = inner.send(request)
            let answers = try await (first, second)
            return answers.1
        case .delayed:
            try await Task.sleep(for: .milliseconds(20))
            return try await inner.send(request)
        }
    }
}

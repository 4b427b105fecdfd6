import Foundation
import PurseHTTP
import Synchronization

/// Latencies of one kind of operation.
final class LatencyRecorder: Sendable {
    private let samples = Mutex<[Double]>([])
    private let errors = Atomic<Int>(0)
    /// When tracing (`--trace`): every operation as (connection, start since the phase began, latency).
    private let trace: Mutex<[(connection: Int, start: Double, latency: Double)]>?

    init(tracing: Bool = false) { trace = tracing ? Mutex([]) : nil }

    func record(_ duration: Duration) { samples.withLock { $0.append(duration.seconds) } }

    func record(_ duration: Duration, connection: Int, startedAfter offset: Duration) {
        record(duration)
        trace?.withLock { $0.append((connection, offset.seconds, duration.seconds)) }
    }

    /// The trace as text, one operation a line: `connection start_s latency_s`, in start order.
    func traceText() -> String {
        let entries = trace?.withLock { $0 }.sorted { $0.start < $1.start } ?? []
        return entries.map { "\($0.connection) \($0.start) \($0.latency)\n" }.joined()
    }

    func fail() { errors.add(1, ordering: .relaxed) }

    func summary(over elapsed: Duration) -> (count: Int, perSecond: Double, p50: Double, p99: Double, errors: Int) {
        let sorted = samples.withLock { $0 }.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)] * 1000
        }
        return (sorted.count, Double(sorted.count) / elapsed.seconds, percentile(0.5), percentile(0.99), errors.load(ordering: .relaxed))
    }
}

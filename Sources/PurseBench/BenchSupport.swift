import Foundation
import PurseKit
import PurseKitAHC

// What every benchmark prints and probes the same way.

/// A benchmark `purse bench` runs: checks its figures, then measures the server at a URL.
public protocol PurseBenchmark: Sendable {
    func validate() throws
    /// - Parameter inProcess: Whether the server runs in this process (CPU figures then cover both).
    func run(against base: URL, inProcess: Bool) async throws
}

/// A client for the bench's own unauthenticated probes (`/health`, `/metrics`), outside the
/// measured connections and without retries.
func benchProbe(_ base: URL) -> APIClient {
    APIClient(session: ClientSession(baseURL: base), transport: AsyncHTTPClientTransport(), retry: .none)
}

/// Prints a phase's figures and the CPU time per operation since `cpu` (then resets it).
func reportPhase(_ name: String, _ s: (count: Int, perSecond: Double, p50: Double, p99: Double, errors: Int), cpuSince cpu: inout Double) {
    let now = ProcessCPU.now()
    let perOperation = (now - cpu) / Double(max(1, s.count)) * 1000
    cpu = now
    print(name.padding(toLength: 40, withPad: " ", startingAt: 0) + String(
        format: " %8.0f /s   p50 %6.2f ms   p99 %6.2f ms   cpu %.3f ms/op   (%d ok, %d errors)",
        s.perSecond, s.p50, s.p99, perOperation, s.count, s.errors))
}

/// Waits up to 10 s for the server's `/health`.
func waitForHealth(_ base: URL) async throws {
    let api = benchProbe(base)
    for _ in 0..<100 {
        if (try? await api.sendRaw("GET", "/health", authenticated: false)) != nil { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw BenchmarkError("server at \(base.absoluteString) did not become healthy")
}

/// A benchmark that cannot run as asked.
public struct BenchmarkError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

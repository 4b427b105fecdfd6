import Logging
import ServiceLifecycle

/// Runs `work` every `interval` while the server runs, until graceful shutdown. A failed round is
/// logged and the next one runs as usual: housekeeping never stops the server.
public struct PeriodicService: Service {
    public let name: String
    let interval: Duration
    let logger: Logger
    let work: @Sendable () async throws -> Void

    public init(_ name: String, every interval: Duration, logger: Logger, _ work: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.work = work
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await work()
                } catch {
                    logger.warning("\(name) failed", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }
}

/// Counts occurrences of something worth reporting, and says when to report: at the first one,
/// then at most once per `interval`, with how many happened since the last report.
struct ThrottledCount {
    let interval: Duration
    private var pending = 0
    private var lastReport: ContinuousClock.Instant?

    init(interval: Duration) { self.interval = interval }

    /// Counts one; returns the count to report (then starts again from zero), or nil to stay quiet.
    mutating func record(at now: ContinuousClock.Instant) -> Int? {
        pending += 1
        if let lastReport, now - lastReport < interval { return nil }
        defer { (pending, lastReport) = (0, now) }
        return pending
    }
}

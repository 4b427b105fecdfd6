import Logging
import PurseDatabase
import ServiceLifecycle

/// Runs `work` every `interval` while the server runs, until graceful shutdown. A failed round is
/// logged and the next one runs as usual: housekeeping never stops the server. A round that shutdown
/// cancels ends the loop quietly.
public struct PeriodicService: Service {
    public let name: String
    let interval: Duration
    let logger: Logger
    /// Does one round; returns how long to wait before the next, or nil for `interval`.
    let work: @Sendable () async throws -> Duration?

    public init(_ name: String, every interval: Duration, logger: Logger, _ work: @escaping @Sendable () async throws -> Void) {
        self.init(name, every: interval, logger: logger, adaptive: { try await work(); return nil })
    }

    /// A round that decides when the next one runs (a failed round waits `interval`).
    public init(_ name: String, every interval: Duration, logger: Logger, adaptive work: @escaping @Sendable () async throws -> Duration?) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.work = work
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                var wait = interval
                do {
                    wait = try await work() ?? interval
                } catch is CancellationError where Task.isCancelled {
                    break  // The server is stopping: the round was cut short, it did not fail.
                } catch {
                    logger.warning("\(name) failed", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: wait)
            }
        }
    }
}

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

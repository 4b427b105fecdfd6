import Logging
import PurseServer
import Synchronization
import Testing

/// Housekeeping rounds: a failed one is logged and the next comes as usual; one that shutdown cuts
/// short ends the loop without a word.
@Suite("Periodic service")
struct PeriodicServiceTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }

        struct Handler: LogHandler {
            let sink: Lines
            var metadata: Logger.Metadata = [:]
            var logLevel: Logger.Level = .trace
            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }
            func log(event: LogEvent) {
                sink.lines.withLock { $0.append("\(event.level) \(event.message) \(event.metadata ?? [:])") }
            }
        }

        var logger: Logger { Logger(label: "test") { _ in Handler(sink: self) } }
    }

    struct Failed: Error {}

    @Test func aFailedRoundIsLoggedAndTheNextOneComes() async throws {
        let lines = Lines()
        let rounds = Atomic<Int>(0)
        let service = PeriodicService("housekeeping", every: .milliseconds(1), logger: lines.logger, adaptive: {
            if rounds.add(1, ordering: .relaxed).newValue == 1 { throw Failed() }
            return nil
        })
        let task = Task { try await service.run() }
        while rounds.load(ordering: .relaxed) < 3 { try await Task.sleep(for: .milliseconds(1)) }
        task.cancel()
        _ = await task.result
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.hasPrefix("warning housekeeping failed") == true)
    }

    @Test func aRoundCutShortByShutdownIsNotAFailure() async throws {
        let lines = Lines()
        let started = Atomic<Bool>(false)
        let service = PeriodicService("housekeeping", every: .milliseconds(1), logger: lines.logger, adaptive: {
            started.store(true, ordering: .relaxed)
            try await Task.sleep(for: .seconds(30))  // throws CancellationError when the server stops
            return nil
        })
        let task = Task { try await service.run() }
        while !started.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(1)) }
        task.cancel()
        _ = await task.result
        #expect(lines.all.isEmpty, "\(lines.all)")
    }
}

import PurseDatabase
import PurseServer
import Synchronization
import PurseTestSupport
import Testing

/// Housekeeping rounds: a failed one is logged and the next comes as usual; one that shutdown cuts
/// short ends the loop without a word.
@Suite("Periodic service")
struct PeriodicServiceTests {
    struct Failed: Error {}

    @Test func aFailedRoundIsLoggedAndTheNextOneComes() async throws {
        let logs = CapturedLogs()
        let rounds = Atomic<Int>(0)
        let service = PeriodicService("housekeeping", every: .milliseconds(1), logger: logs.logger, adaptive: {
            if rounds.add(1, ordering: .relaxed).newValue == 1 { throw Failed() }
            return nil
        })
        let task = Task { try await service.run() }
        while rounds.load(ordering: .relaxed) < 3 { try await Task.sleep(for: .milliseconds(1)) }
        task.cancel()
        _ = await task.result
        let lines = logs.lines.withLock { $0 }
        #expect(lines.count == 1)
        #expect(lines.first?.hasPrefix("warning housekeeping failed") == true)
    }

    @Test func aRoundCutShortByShutdownIsNotAFailure() async throws {
        let logs = CapturedLogs()
        let started = Atomic<Bool>(false)
        let service = PeriodicService("housekeeping", every: .milliseconds(1), logger: logs.logger, adaptive: {
            started.store(true, ordering: .relaxed)
            try await Task.sleep(for: .seconds(30))  // throws CancellationError when the server stops
            return nil
        })
        let task = Task { try await service.run() }
        while !started.load(ordering: .relaxed) { try await Task.sleep(for: .milliseconds(1)) }
        task.cancel()
        _ = await task.result
        let lines = logs.lines.withLock { $0 }
        #expect(lines.isEmpty, "\(lines)")
    }
}

import Foundation
import PurseHTTP
import Synchronization
import Testing

@Suite("Poller")
struct PollerTests {
    @Test func pollsUntilDoneWithGrowingIntervals() async throws {
        let sleeper = RecordingSleeper()
        let calls = Mutex(0)
        let poller = Poller(interval: .seconds(1), multiplier: 2, maxInterval: .seconds(3), maxAttempts: 10, sleeper: sleeper.sleeper)
        let value = try await poller.poll { () -> PollStatus<String> in
            let n = calls.withLock { $0 += 1; return $0 }
            return n < 5 ? .pending : .done("completed")
        }
        #expect(value == "completed")
        #expect(calls.withLock { $0 } == 5)
        #expect(sleeper.recorded == [.seconds(1), .seconds(2), .seconds(3), .seconds(3)])
    }

    @Test func stopsAfterMaxAttempts() async throws {
        let sleeper = RecordingSleeper()
        let poller = Poller(interval: .seconds(1), maxAttempts: 3, sleeper: sleeper.sleeper)
        await #expect(throws: PurseError.timeout) {
            let _: Int = try await poller.poll { .pending }
        }
        #expect(sleeper.recorded.count == 2)
    }

    @Test func transientErrorsCountAsPendingOthersStop() async throws {
        let calls = Mutex(0)
        let poller = Poller(interval: .seconds(1), maxAttempts: 5, sleeper: RecordingSleeper().sleeper)
        let value = try await poller.poll { () -> PollStatus<Int> in
            let n = calls.withLock { $0 += 1; return $0 }
            if n == 1 { throw PurseError.offline("blip") }
            return .done(n)
        }
        #expect(value == 2)
        await #expect(throws: PurseError.unauthorized) {
            let _: Int = try await poller.poll { throw PurseError.unauthorized }
        }
    }

    @Test func cancellationStopsPolling() async throws {
        let poller = Poller(interval: .seconds(3600), maxAttempts: 5, sleeper: .live)
        let task = Task { try await poller.poll { () -> PollStatus<Int> in .pending } }
        try await Task.sleep(for: .milliseconds(20))
        task.cancel()
        await #expect(throws: PurseError.cancelled) { try await task.value }
    }
}

import Foundation
import Testing
@testable import PurseServer

@Suite("Job wake-up")
struct JobWakeupTests {
    @Test func aSignalEndsTheWaitEarlyAndTheTimeoutOtherwise() async throws {
        let wakeup = JobWakeup()
        // A signal given before the wait counts.
        wakeup.signal()
        var start = ContinuousClock.now
        await wakeup.wait(upTo: .seconds(30))
        // Well short of the 30 s timeout, with room for a loaded machine running every suite at once.
        #expect(ContinuousClock.now - start < .seconds(20))
        // A signal during the wait ends it.
        start = ContinuousClock.now
        let signaller = Task {
            try await Task.sleep(for: .milliseconds(50))
            wakeup.signal()
        }
        await wakeup.wait(upTo: .seconds(30))
        // Well short of the 30 s timeout, with room for a loaded machine running every suite at once.
        #expect(ContinuousClock.now - start < .seconds(20))
        try await signaller.value
        // Without one, the timeout.
        start = ContinuousClock.now
        await wakeup.wait(upTo: .milliseconds(100))
        let waited = ContinuousClock.now - start
        #expect(waited >= .milliseconds(100) && waited < .seconds(5))
        // Many rounds of signals racing timeouts never leave the waiter hanging.
        for round in 0..<200 {
            let racing = Task { if round % 2 == 0 { wakeup.signal() } }
            await wakeup.wait(upTo: .milliseconds(1))
            await racing.value
        }
    }
}

@testable import PurseSQLite
import Synchronization
import Testing

@Suite("AsyncLock")
struct AsyncLockTests {
    /// Many tasks, each suspending inside the lock: never two inside at once, and every one gets in.
    @Test func excludesAndServesEveryone() async throws {
        final class Counters: Sendable {
            let inside = Atomic<Int>(0)
            let overlaps = Atomic<Int>(0)
            let entered = Atomic<Int>(0)
        }
        let lock = AsyncLock()
        let counters = Counters()
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<500 {
                group.addTask {
                    await lock.withLock {
                        if counters.inside.add(1, ordering: .sequentiallyConsistent).newValue != 1 { counters.overlaps.add(1, ordering: .relaxed) }
                        if index % 3 == 0 { await Task.yield() }
                        counters.entered.add(1, ordering: .relaxed)
                        counters.inside.subtract(1, ordering: .sequentiallyConsistent)
                    }
                }
            }
        }
        #expect(counters.overlaps.load(ordering: .relaxed) == 0)
        #expect(counters.entered.load(ordering: .relaxed) == 500)
    }

    @Test func aThrowingBodyReleasesTheLock() async throws {
        struct Failure: Error {}
        let lock = AsyncLock()
        await #expect(throws: Failure.self) { try await lock.withLock { throw Failure() } }
        let value = await lock.withLock { 42 }
        #expect(value == 42)
    }
}

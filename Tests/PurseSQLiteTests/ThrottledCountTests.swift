@testable import PurseSQLite
import Testing

@Suite("Throttled count")
struct ThrottledCountTests {
    @Test func aThrottledCountReportsTheFirstThenAtMostOncePerInterval() {
        var count = ThrottledCount(interval: .seconds(60))
        let start = ContinuousClock.now
        #expect(count.record(at: start) == 1)
        #expect(count.record(at: start + .seconds(1)) == nil)
        #expect(count.record(at: start + .seconds(59)) == nil)
        // The report counts everything since the last one, itself included.
        #expect(count.record(at: start + .seconds(60)) == 3)
        #expect(count.record(at: start + .seconds(61)) == nil)
        #expect(count.record(at: start + .seconds(300)) == 2)
    }
}

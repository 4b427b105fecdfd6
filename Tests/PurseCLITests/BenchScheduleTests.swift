import Testing

@testable import PurseCLI

/// The open-loop phase of `purse bench nexus --rate`: when each top-up is due.
@Suite("Bench: open-loop schedule")
struct BenchScheduleTests {
    /// All connections' requests together come evenly `1 ÷ rate` apart, each connection's at
    /// `connections ÷ rate` intervals, and none twice.
    @Test func requestsOfAllConnectionsComeEvenlySpaced() {
        let rate = 2_000.0, connections = 32, count = 25
        let perConnection = (0..<connections).map {
            NexusBench.openLoopSchedule(connection: $0, connections: connections, rate: rate, count: count)
        }
        for due in perConnection {
            #expect(due.count == count)
            for (earlier, later) in zip(due, due.dropFirst()) {
                #expect(abs(seconds(later - earlier) - Double(connections) / rate) < 1e-9)
            }
        }
        let all = perConnection.flatMap { $0 }.sorted()
        #expect(all.count == connections * count)
        #expect(all.first == .zero)
        for (earlier, later) in zip(all, all.dropFirst()) {
            #expect(abs(seconds(later - earlier) - 1 / rate) < 1e-9)
        }
        #expect(NexusBench.openLoopSchedule(connection: 3, connections: 4, rate: 10, count: 0).isEmpty)
    }

    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

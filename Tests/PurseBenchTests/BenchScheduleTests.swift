import Testing

@testable import PurseBench

/// The open-loop phase of `purse bench nexus --rate`: when each top-up is due.
@Suite("Bench: open-loop schedule")
struct BenchScheduleTests {
    /// All connections' requests together come evenly `1 ÷ rate` apart, each connection's at
    /// `connections ÷ rate` intervals, and none twice.
    @Test func requestsOfAllConnectionsComeEvenlySpaced() {
        let rate = 2_000.0, connections = 32, count = 25
        let perConnection = (0..<connections).map {
            NexusBenchmark.openLoopSchedule(connection: $0, connections: connections, rate: rate, count: count)
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
        #expect(NexusBenchmark.openLoopSchedule(connection: 3, connections: 4, rate: 10, count: 0).isEmpty)
    }

    /// The per-phase line about the SQLite writer, from two readings of `/metrics`.
    @Test func writerUtilisationComesFromTwoReadingsOfMetrics() throws {
        func exposition(busy: String, transactions: Int, commits: Int, pauses: Int = 0, paused: Double = 0) -> String {
            """
            # HELP purse_db_transactions_total Write transactions committed.
            purse_db_transactions_total \(transactions)
            purse_db_commits_total \(commits)
            purse_db_writer_busy_seconds_total \(busy)
            purse_db_writer_pauses_total \(pauses)
            purse_db_writer_paused_seconds_total \(paused)
            purse_http_requests_total{method="GET",route="/health",status="200"} 7

            """
        }
        let before = try #require(WriterCounters(exposition: exposition(busy: "1.5", transactions: 100, commits: 50)))
        #expect(before == WriterCounters(exposition: exposition(busy: "1.50", transactions: 100, commits: 50)))
        let after = try #require(WriterCounters(exposition: exposition(busy: "4.5", transactions: 900, commits: 150)))
        #expect(after.since(before, over: .seconds(4)) == "  SQLite writer busy 75 % of the phase, 8.0 transactions per commit, 3750 µs per transaction")
        #expect(after.since(after, over: .seconds(4)) == nil, "no commits in the phase: nothing to say")
        let paused = try #require(WriterCounters(exposition: exposition(busy: "4.5", transactions: 900, commits: 150, pauses: 4, paused: 0.03)))
        #expect(paused.since(before, over: .seconds(4))
            == "  SQLite writer busy 75 % of the phase, 8.0 transactions per commit, 3750 µs per transaction; held 4 times for WAL restarts, 7.5 ms each")
        #expect(WriterCounters(exposition: "purse_db_transactions_total 3\n") == nil, "a server without the writer counter")
    }

    /// The top-up phase gives every connection the same number of top-ups, in the order minted.
    @Test func mintedSharesAreEvened() {
        let evened = NexusBenchmark.evened([0: [1, 2, 3, 4], 1: [5, 6], 2: [7, 8, 9]])
        #expect(evened == [0: [1, 2], 1: [5, 6], 2: [7, 8]])
        #expect(NexusBenchmark.evened([0: [1], 1: []]) == [0: [], 1: []])
        #expect(NexusBenchmark.evened([Int: [Int]]()).isEmpty)
    }

    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

import Foundation
import PurseHTTP

/// The server's SQLite writer counters from `/metrics`, to tell per phase how busy the one
/// writer was: near 100 %, top-ups queue behind it whatever the CPUs have left.
struct WriterCounters: Equatable {
    var busySeconds: Double
    var transactions: Int
    var commits: Int
    /// WAL restarts: the writer held for a last checkpoint pass (every request waits meanwhile).
    var pauses: Int
    var pausedSeconds: Double

    /// Reads them from Prometheus text; nil when the server does not report them.
    init?(exposition: String) {
        var values: [Substring: Double] = [:]
        for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let value = Double(parts[1]) { values[parts[0]] = value }
        }
        guard let busy = values["purse_db_writer_busy_seconds_total"], let transactions = values["purse_db_transactions_total"],
              let commits = values["purse_db_commits_total"] else { return nil }
        self.busySeconds = busy
        self.transactions = Int(transactions)
        self.commits = Int(commits)
        self.pauses = Int(values["purse_db_writer_pauses_total"] ?? 0)
        self.pausedSeconds = values["purse_db_writer_paused_seconds_total"] ?? 0
    }

    /// One phase's line since `earlier`: the writer's share of `elapsed`, transactions per commit,
    /// the writer's time per transaction (what bounds the rate of a write-bound phase), and the
    /// WAL-restart pauses (what every request in flight waits for).
    func since(_ earlier: WriterCounters, over elapsed: Duration) -> String? {
        let busy = busySeconds - earlier.busySeconds, commits = self.commits - earlier.commits
        let transactions = self.transactions - earlier.transactions
        guard busy > 0, commits > 0, transactions > 0 else { return nil }
        var line = String(format: "  SQLite writer busy %.0f %% of the phase, %.1f transactions per commit, %.0f µs per transaction",
                          busy / elapsed.seconds * 100, Double(transactions) / Double(commits), busy / Double(transactions) * 1e6)
        let pauses = self.pauses - earlier.pauses
        if pauses > 0 {
            line += String(format: "; held %d times for WAL restarts, %.1f ms each", pauses, (pausedSeconds - earlier.pausedSeconds) / Double(pauses) * 1000)
        }
        return line
    }
}

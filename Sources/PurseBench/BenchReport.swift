import Foundation
import Synchronization

/// What a `purse bench` run measured, as `--json FILE` writes it: every phase (rate, p50, p99,
/// CPU per operation) and every derived figure (ratios and targets), in the order they were
/// printed. `benchmarks/run.sh` gathers these files into one, and `benchmarks/report.py` makes
/// docs/benchmarks.md's tables from it.
public enum BenchReport {
    public struct Phase: Codable, Sendable, Equatable {
        public var name: String
        public var per_second: Double
        public var p50_ms: Double
        public var p99_ms: Double
        public var cpu_ms_per_op: Double
        public var count: Int
        public var errors: Int
    }

    /// A figure derived from phases: a ratio, a rate against its target.
    public struct Figure: Codable, Sendable, Equatable {
        /// A stable key (`nexus.topup_vs_health`), for scripts.
        public var key: String
        public var value: Double
        public var unit: String
        /// The target as words (`≥ 25 %`), nil when the figure has none.
        public var target: String?
        public var met: Bool?
    }

    public struct Run: Codable, Sendable {
        public var benchmark: String
        public var phases: [Phase] = []
        public var figures: [Figure] = []
    }

    static let current = Mutex(Run(benchmark: ""))

    static func record(_ phase: Phase) { current.withLock { $0.phases.append(phase) } }

    /// Records a figure and prints its line (none when empty: the figure is on an earlier line).
    static func figure(_ key: String, _ value: Double, unit: String, target: String? = nil, met: Bool? = nil, line: String) {
        if !line.isEmpty { print(line) }
        current.withLock { $0.figures.append(Figure(key: key, value: value, unit: unit, target: target, met: met)) }
    }

    /// Starts a run of `benchmark`, forgetting what an earlier one recorded.
    public static func begin(_ benchmark: String) { current.withLock { $0 = Run(benchmark: benchmark) } }

    /// What was recorded since ``begin(_:)``.
    public static var recorded: Run { current.withLock { $0 } }

    /// Writes what was recorded as JSON (sorted keys, one document).
    public static func write(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        try encoder.encode(recorded).write(to: URL(fileURLWithPath: path))
    }
}

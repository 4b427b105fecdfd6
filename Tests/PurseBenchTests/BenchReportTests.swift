import Foundation
import Testing

@testable import PurseBench

/// What `purse bench … --json` writes.
@Suite("Bench: the JSON report", .serialized)
struct BenchReportTests {
    @Test("phases and figures are written in the order they were printed, and a new run starts empty")
    func recordsAndWrites() throws {
        BenchReport.begin("nexus")
        var cpu = ProcessCPU.now()
        reportPhase("GET /health", (count: 100, perSecond: 2_000, p50: 0.5, p99: 1.25, errors: 0), cpuSince: &cpu)
        BenchReport.figure("nexus.topup_vs_health", 31.5, unit: "%", target: "≥ 25 %", met: true, line: "ratio")
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try BenchReport.write(to: path)
        let run = try JSONDecoder().decode(BenchReport.Run.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(run.benchmark == "nexus")
        #expect(run.phases.map(\.name) == ["GET /health"])
        #expect(run.phases.first?.per_second == 2_000 && run.phases.first?.p99_ms == 1.25 && run.phases.first?.count == 100)
        #expect(run.figures == [BenchReport.Figure(key: "nexus.topup_vs_health", value: 31.5, unit: "%", target: "≥ 25 %", met: true)])
        BenchReport.begin("chips")
        #expect(BenchReport.recorded.phases.isEmpty && BenchReport.recorded.figures.isEmpty)
    }
}

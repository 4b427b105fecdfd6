import Foundation
import HTTPTypes
import PurseKit
import PurseHTTP
import NexusPay
import PurseHTTPNIO

/// `purse bench nexus`: full step-up flows (options → verify → top-up) per second, top-up alone,
/// and `GET /health` on the same server, each with p50/p99 and CPU per operation.
public struct NexusBenchmark: PurseBenchmark {
    /// Concurrent connections, one benchmark user each.
    public var connections = 32
    /// Operations per connection in each phase, instead of ``duration``.
    public var count: Int?
    /// Seconds per phase.
    public var duration = 10
    /// Which load generator drives the load.
    public var client = LoadGeneratorKind.lean
    /// Also run top-ups at this many per second in all (open loop).
    public var rate: Double?
    /// A file for every top-up of the top-up-alone phase: connection, start, latency.
    public var trace: String?

    public init() {}

    /// Checks the figures it was given.
    /// - Throws: ``BenchmarkError`` naming the first one out of range.
    public func validate() throws {
        guard (1...512).contains(connections), (1...300).contains(duration), (1...1_000_000).contains(count ?? 1) else {
            throw BenchmarkError("--connections 1-512, --duration 1-300 and --count 1-1000000")
        }
        guard (1...100_000).contains(rate ?? 1) else { throw BenchmarkError("--rate 1-100000 top-ups per second") }
    }

    /// Runs every phase against the server at `base` and prints the figures.
    /// - Parameter inProcess: Whether the server runs in this process (the CPU figures then
    ///   cover both).
    public func run(against base: URL, inProcess: Bool) async throws {
        try validate()
        try await waitForHealth(base)
        let budget = count.map { "\($0) operations per connection" } ?? "\(duration) s"
        print("purse bench nexus: \(connections) connections, \(budget) per phase, server \(base.absoluteString)")
        print("load generator: \(client == .lean ? "lean (prepared requests)" : "the NexusPay client core")")
        print(inProcess ? "cpu/op: this process, server and load generator together" : "cpu/op: this process, the load generator only")
        try await measure(base: base)
    }

    func measure(base: URL) async throws {
        // One user, device and keep-alive connection per --connections.
        let client = self.client
        let users = try await withThrowingTaskGroup(of: (any LoadGenerator).self, returning: [any LoadGenerator].self) { group in
            for index in 0..<connections {
                group.addTask {
                    let user = try await ClientCoreLoadGenerator.make(base: base, index: index)
                    return client == .core ? user : try await user.lean(base: base)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        var cpu = ProcessCPU.now()
        let healthRate = try await healthPhase(users, "GET /health", cpuSince: &cpu)

        let flows = LatencyRecorder()
        var writer = await writerCounters(base)
        cpu = ProcessCPU.now()
        let flowElapsed = try await load(users) { user in
            let start = ContinuousClock.now
            do {
                let token = try await user.stepUp()
                try await user.topup(token: token)
                flows.record(.now - start)
            } catch {
                flows.fail()
            }
        }
        reportPhase("full flow (options → verify → top-up)", flows.summary(over: flowElapsed), cpuSince: &cpu)
        await reportWriter(base, since: &writer, over: flowElapsed)

        // Top-up alone: tokens minted and their requests prepared first (untimed), then spent as
        // fast as possible. Just before, /health once more: the top-up ratio compares two rates
        // measured back to back, not ~20 s apart — a shared host's speed can drift by a third
        // within minutes, and a drift between the first /health phase and this one moved the ratio by
        // as much.
        let minted = try await mint(users, perConnection: count)
        cpu = ProcessCPU.now()
        let healthAgainRate = try await healthPhase(users, "GET /health, again", cpuSince: &cpu)
        let alone = LatencyRecorder(tracing: trace != nil)
        writer = await writerCounters(base)
        cpu = ProcessCPU.now()
        let aloneStart = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, user) in users.enumerated() {
                let topups = minted[index] ?? []
                group.addTask {
                    for topup in topups {
                        let start = ContinuousClock.now
                        do {
                            try await user.topup(topup)
                            alone.record(.now - start, connection: index, startedAfter: start - aloneStart)
                        } catch { alone.fail() }
                    }
                }
            }
            try await group.waitForAll()
        }
        let aloneElapsed = ContinuousClock.now - aloneStart
        let aloneSummary = alone.summary(over: aloneElapsed)
        if let trace { try alone.traceText().write(toFile: trace, atomically: true, encoding: .utf8) }
        reportPhase("top-up alone", aloneSummary, cpuSince: &cpu)
        await reportWriter(base, since: &writer, over: aloneElapsed)
        // Each ratio against the /health phase next to it.
        let topupRatio = aloneSummary.perSecond / healthAgainRate * 100
        BenchReport.figure("nexus.topup_vs_health", topupRatio, unit: "%", target: "≥ 25 %, p99 ≤ 10 ms", met: topupRatio >= 25 && aloneSummary.p99 <= 10,
                           line: String(format: "ratio: top-up / health = %.1f %%  (target ≥ 25 %%, p99 ≤ 10 ms; against the first /health phase: %.1f %%)",
                                        topupRatio, aloneSummary.perSecond / healthRate * 100))
        let flowRate = flows.summary(over: flowElapsed).perSecond
        BenchReport.figure("nexus.flows", flowRate, unit: "/s", target: "≥ 1,500 /s", met: flowRate >= 1_500,
                           line: String(format: "ratio: full flows / health = %.1f %%  (target ≥ 1500 flows/s)", flowRate / healthRate * 100))
        if let rate {
            let perConnection = count ?? Int((rate * Double(duration) / Double(connections)).rounded(.up))
            try await paced(users, base: base, rate: rate, topups: try await mint(users, perConnection: perConnection), cpuSince: &cpu)
        }
        for user in users { await user.close() }
    }

    /// Top-ups ready to send for every connection, each with a step-up token minted for it,
    /// untimed: `perConnection` each, or as many as `--duration` allows — then as many on every
    /// connection as on the one that minted fewest, so that all of them stay busy until the phase
    /// ends (the connections mint at slightly different speeds; with uneven shares the last ~10 %
    /// of the phase ran on a dwindling number of connections, which is not the load the phase
    /// measures).
    func mint(_ users: [any LoadGenerator], perConnection: Int?) async throws -> [Int: [PreparedTopup]] {
        let duration = duration
        let minted = try await withThrowingTaskGroup(of: (Int, [PreparedTopup]).self, returning: [Int: [PreparedTopup]].self) { group in
            for (index, user) in users.enumerated() {
                group.addTask {
                    var topups: [PreparedTopup] = []
                    let deadline = ContinuousClock.now + .seconds(duration)
                    while perConnection.map({ topups.count < $0 }) ?? (ContinuousClock.now < deadline) {
                        topups.append(user.prepareTopup(token: try await user.stepUp()))
                    }
                    return (index, topups)
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        return Self.evened(minted)
    }

    /// Every connection's share cut to the smallest share.
    static func evened<T>(_ shares: [Int: [T]]) -> [Int: [T]] {
        let smallest = shares.values.map(\.count).min() ?? 0
        return shares.mapValues { Array($0.prefix(smallest)) }
    }

    /// Top-ups at `rate` per second in all, each at its scheduled time (``openLoopSchedule``);
    /// latency from that time.
    func paced(_ users: [any LoadGenerator], base: URL, rate: Double, topups: [Int: [PreparedTopup]], cpuSince cpu: inout Double) async throws {
        let recorder = LatencyRecorder()
        let connections = users.count
        var writer = await writerCounters(base)
        cpu = ProcessCPU.now()
        let start = ContinuousClock.now + .milliseconds(20)
        await withTaskGroup(of: Void.self) { group in
            for (index, user) in users.enumerated() {
                let topups = topups[index] ?? []
                let due = Self.openLoopSchedule(connection: index, connections: connections, rate: rate, count: topups.count).map { start + $0 }
                group.addTask {
                    for (topup, due) in zip(topups, due) {
                        if ContinuousClock.now < due { try? await Task.sleep(until: due, clock: .continuous) }
                        do {
                            try await user.topup(topup)
                            recorder.record(.now - due)
                        } catch { recorder.fail() }
                    }
                }
            }
        }
        // Over at least the schedule's span (n requests take n ÷ rate), so a short run is not
        // reported faster than it was asked to go.
        let scheduled = Duration.seconds(Double(topups.values.map(\.count).reduce(0, +)) / rate)
        let elapsed = max(.now - start, scheduled)
        let summary = recorder.summary(over: elapsed)
        reportPhase(String(format: "top-up at %.0f/s (open loop)", rate), summary, cpuSince: &cpu)
        await reportWriter(base, since: &writer, over: elapsed)
        if summary.perSecond < rate * 0.95 {
            print(String(format: "  the server kept up with %.0f of the %.0f top-ups/s asked for: latencies include the backlog", summary.perSecond, rate))
        }
    }

    /// When each request of connection `connection` is due, from the phase's start: `rate`
    /// requests a second in all, every connection at `connections ÷ rate` intervals and the
    /// connections staggered by `1 ÷ rate`, so that the requests of all connections together come
    /// evenly `1 ÷ rate` apart.
    static func openLoopSchedule(connection: Int, connections: Int, rate: Double, count: Int) -> [Duration] {
        (0..<count).map { .seconds((Double($0 * connections + connection)) / rate) }
    }

    static let order = TopupOrder(amount: 50, productCode: "AIRTIME_MTN", recipientPhone: "08012345678", supplierSlug: "mtn")

    /// The server's writer counters now; nil when it does not report them or
    /// `/metrics` cannot be read.
    func writerCounters(_ base: URL) async -> WriterCounters? {
        let api = benchProbe(base)
        guard let response = try? await api.sendRaw(.get, "/metrics", authenticated: false), response.status == 200 else { return nil }
        return WriterCounters(exposition: String(decoding: response.body, as: UTF8.self))
    }

    /// Prints how busy the SQLite writer was since `earlier` (then resets it).
    func reportWriter(_ base: URL, since earlier: inout WriterCounters?, over elapsed: Duration) async {
        let now = await writerCounters(base)
        if let now, let before = earlier, let line = now.since(before, over: elapsed) { print(line) }
        earlier = now
    }

    /// A `GET /health` phase, reported as `name`; returns its rate (requests a second).
    func healthPhase(_ users: [any LoadGenerator], _ name: String, cpuSince cpu: inout Double) async throws -> Double {
        let health = LatencyRecorder()
        let elapsed = try await load(users) { user in
            let start = ContinuousClock.now
            do { try await user.health(); health.record(.now - start) } catch { health.fail() }
        }
        let summary = health.summary(over: elapsed)
        reportPhase(name, summary, cpuSince: &cpu)
        return summary.perSecond
    }

    /// Runs `body` in a loop on every user's connection: `--count` times each, or until
    /// `--duration` passes.
    func load(_ users: [any LoadGenerator], _ body: @escaping @Sendable (any LoadGenerator) async -> Void) async throws -> Duration {
        let start = ContinuousClock.now
        let deadline = start + .seconds(duration)
        let count = count
        await withTaskGroup(of: Void.self) { group in
            for user in users {
                group.addTask {
                    if let count {
                        for _ in 0..<count { await body(user) }
                    } else {
                        while ContinuousClock.now < deadline { await body(user) }
                    }
                }
            }
        }
        return .now - start
    }
}

import ArgumentParser
import Crypto
import Foundation
import Hummingbird
import Logging
import NexusPay
import NexusService
import PurseKit
import PurseKitAHC
import PurseServer
import ServiceLifecycle
import Synchronization

/// `purse bench …`: load measurements on loopback. Not tests: they print figures.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Measure throughput and latency on loopback (build with -c release).",
        subcommands: [NexusBench.self]
    )
}

/// Latencies of one kind of operation.
final class LatencyRecorder: Sendable {
    private let samples = Mutex<[Double]>([])
    private let errors = Atomic<Int>(0)
    /// With `--trace`: every operation as (connection, start since the phase began, latency).
    private let trace: Mutex<[(connection: Int, start: Double, latency: Double)]>?

    init(tracing: Bool = false) { trace = tracing ? Mutex([]) : nil }

    func record(_ duration: Duration) { samples.withLock { $0.append(duration.seconds) } }

    func record(_ duration: Duration, connection: Int, startedAfter offset: Duration) {
        record(duration)
        trace?.withLock { $0.append((connection, offset.seconds, duration.seconds)) }
    }

    /// The trace as text, one operation a line: `connection start_s latency_s`, in start order.
    func traceText() -> String {
        let entries = trace?.withLock { $0 }.sorted { $0.start < $1.start } ?? []
        return entries.map { "\($0.connection) \($0.start) \($0.latency)\n" }.joined()
    }

    func fail() { errors.add(1, ordering: .relaxed) }

    func summary(over elapsed: Duration) -> (count: Int, perSecond: Double, p50: Double, p99: Double, errors: Int) {
        let sorted = samples.withLock { $0 }.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)] * 1000
        }
        return (sorted.count, Double(sorted.count) / elapsed.seconds, percentile(0.5), percentile(0.99), errors.load(ordering: .relaxed))
    }
}

/// CPU time this process has used (user + system), from `getrusage`. In-process runs it covers
/// server and load generator together: a steadier measure of cost per operation than the rate on
/// a noisy machine.
enum ProcessCPU {
    static func now() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
}

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

struct NexusBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nexus",
        abstract: "Full step-up flows (options → verify → top-up) per second, top-up alone, and GET /health on the same server.",
        discussion: "Without --server it starts its own server on 127.0.0.1 (SQLite in a temporary directory). Targets on 2 cores: ≥ 1,500 flows/s; top-up ≥ 25 % of /health with p99 ≤ 10 ms at 32 connections."
    )

    @Option(help: "A running server (default: start one in-process).") var server: String?
    @Option(help: "Concurrent connections.") var connections: Int = 32
    @Option(help: "Operations per connection in each phase, instead of --duration: the same work every run, so the CPU time two builds spend on it compares them where rates on a noisy machine cannot (benchmarks/compare.sh).")
    var count: Int?
    @Option(help: "Seconds per phase.") var duration: Int = 10
    @Option(help: "The load generator: lean (prepared request bytes, like wrk; the default) or core (the real NexusPay client core, which costs the shared CPUs about twice as much per flow).")
    var client: BenchClientKind = .lean
    @Option(help: "Also run top-ups at this many per second in all (open loop, spread evenly over the connections). Latency counts from each request's scheduled time, so an answer that comes late also delays the requests due behind it on its connection instead of hiding them (no coordinated omission): the latency users see at that load, where the closed-loop phases' latency is set by their connection count (connections ÷ rate).")
    var rate: Double?
    @Option(help: "Write every top-up of the top-up-alone phase to this file, one a line: connection, start (s since the phase began), latency (s) — to tell stalls that hold every connection at once from ordinary queueing.")
    var trace: String?

    func run() async throws {
        guard (1...512).contains(connections), (1...300).contains(duration), (1...1_000_000).contains(count ?? 1) else {
            throw ValidationError("--connections 1-512, --duration 1-300 and --count 1-1000000")
        }
        guard (1...100_000).contains(rate ?? 1) else { throw ValidationError("--rate 1-100000 top-ups per second") }
        var server: (group: ServiceGroup, task: Task<Void, any Error>)?
        let base: URL
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("purse-bench-\(UUID().uuidString)")
        if let url = self.server {
            guard let url = URL(string: url) else { throw ValidationError("bad --server") }
            base = url
        } else {
            // The server logs as `purse serve --log-level warning` would.
            ServeCommand.bootstrapLogging(level: .warning)
            let port = try LoopbackPort.free()
            var configuration = try PurseConfiguration.fromEnvironment()
            configuration.port = port
            configuration.dataDirectory = work.path
            configuration.databaseURL = nil
            configuration.logLevel = .warning
            configuration.bcryptCost = 4
            let app = try await buildApplication(configuration: configuration, modules: PurseModules.all(configuration: configuration))
            let group = ServiceGroup(configuration: .init(services: [app.application], logger: app.application.logger))
            server = (group, Task { try await group.run() })
            base = URL(string: "http://127.0.0.1:\(port)")!
        }
        defer { try? FileManager.default.removeItem(at: work) }
        do {
            try await waitForHealth(base)
            let budget = count.map { "\($0) operations per connection" } ?? "\(duration) s"
            print("purse bench nexus: \(connections) connections, \(budget) per phase, server \(base.absoluteString)")
            print("load generator: \(client == .lean ? "lean (prepared requests)" : "the NexusPay client core")")
            print(self.server == nil ? "cpu/op: this process, server and load generator together" : "cpu/op: this process, the load generator only")
            try await measure(base: base)
        } catch {
            await Self.stop(server)
            throw error
        }
        await Self.stop(server)
    }

    /// Stops the in-process server as `purse serve` stops on SIGTERM: requests finish, then the
    /// database closes.
    static func stop(_ server: (group: ServiceGroup, task: Task<Void, any Error>)?) async {
        guard let server else { return }
        await server.group.triggerGracefulShutdown()
        _ = await server.task.result
    }

    func measure(base: URL) async throws {
        // One user, device and keep-alive connection per --connections.
        let client = self.client
        let users = try await withThrowingTaskGroup(of: (any BenchDriver).self, returning: [any BenchDriver].self) { group in
            for index in 0..<connections {
                group.addTask {
                    let user = try await BenchUser.make(base: base, index: index)
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
        report("full flow (options → verify → top-up)", flows.summary(over: flowElapsed), cpuSince: &cpu)
        await reportWriter(base, since: &writer, over: flowElapsed)

        // Top-up alone: tokens minted and their requests prepared first (untimed), then spent as
        // fast as possible. Just before, /health once more: the top-up ratio compares two rates
        // measured back to back, not ~20 s apart — this VM's speed drifts by a third within
        // minutes, and a drift between the first /health phase and this one moved the ratio by
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
        report("top-up alone", aloneSummary, cpuSince: &cpu)
        await reportWriter(base, since: &writer, over: aloneElapsed)
        // Each ratio against the /health phase next to it.
        print(String(format: "ratio: top-up / health = %.1f %%  (target ≥ 25 %%, p99 ≤ 10 ms; against the first /health phase: %.1f %%)",
                     aloneSummary.perSecond / healthAgainRate * 100, aloneSummary.perSecond / healthRate * 100))
        print(String(format: "ratio: full flows / health = %.1f %%  (target ≥ 1500 flows/s)", flows.summary(over: flowElapsed).perSecond / healthRate * 100))
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
    func mint(_ users: [any BenchDriver], perConnection: Int?) async throws -> [Int: [PreparedTopup]] {
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
    func paced(_ users: [any BenchDriver], base: URL, rate: Double, topups: [Int: [PreparedTopup]], cpuSince cpu: inout Double) async throws {
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
        report(String(format: "top-up at %.0f/s (open loop)", rate), summary, cpuSince: &cpu)
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

    /// A client for the bench's own unauthenticated probes (`/health`, `/metrics`), outside the
    /// measured connections and without retries.
    static func probe(_ base: URL) -> APIClient {
        APIClient(session: ClientSession(baseURL: base), transport: AsyncHTTPClientTransport(), retry: .none)
    }

    /// The server's writer counters now; nil when it does not report them or
    /// `/metrics` cannot be read.
    func writerCounters(_ base: URL) async -> WriterCounters? {
        let api = Self.probe(base)
        guard let response = try? await api.sendRaw("GET", "/metrics", authenticated: false), response.status == 200 else { return nil }
        return WriterCounters(exposition: String(decoding: response.body, as: UTF8.self))
    }

    /// Prints how busy the SQLite writer was since `earlier` (then resets it).
    func reportWriter(_ base: URL, since earlier: inout WriterCounters?, over elapsed: Duration) async {
        let now = await writerCounters(base)
        if let now, let before = earlier, let line = now.since(before, over: elapsed) { print(line) }
        earlier = now
    }

    /// Prints a phase's figures and the CPU time per operation since `cpu` (then resets it).
    func report(_ name: String, _ s: (count: Int, perSecond: Double, p50: Double, p99: Double, errors: Int), cpuSince cpu: inout Double) {
        let now = ProcessCPU.now()
        let perOperation = (now - cpu) / Double(max(1, s.count)) * 1000
        cpu = now
        print(name.padding(toLength: 40, withPad: " ", startingAt: 0) + String(
            format: " %8.0f /s   p50 %6.2f ms   p99 %6.2f ms   cpu %.3f ms/op   (%d ok, %d errors)",
            s.perSecond, s.p50, s.p99, perOperation, s.count, s.errors))
    }

    /// Runs `body` in a loop on every user's connection: `--count` times each, or until
    /// `--duration` passes.
    /// A `GET /health` phase, reported as `name`; returns its rate (requests a second).
    func healthPhase(_ users: [any BenchDriver], _ name: String, cpuSince cpu: inout Double) async throws -> Double {
        let health = LatencyRecorder()
        let elapsed = try await load(users) { user in
            let start = ContinuousClock.now
            do { try await user.health(); health.record(.now - start) } catch { health.fail() }
        }
        let summary = health.summary(over: elapsed)
        report(name, summary, cpuSince: &cpu)
        return summary.perSecond
    }

    func load(_ users: [any BenchDriver], _ body: @escaping @Sendable (any BenchDriver) async -> Void) async throws -> Duration {
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

    func waitForHealth(_ base: URL) async throws {
        let api = Self.probe(base)
        for _ in 0..<100 {
            if (try? await api.sendRaw("GET", "/health", authenticated: false)) != nil { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw CLIError("server at \(base.absoluteString) did not become healthy")
    }
}

/// Which load generator drives the benchmark.
enum BenchClientKind: String, ExpressibleByArgument, Sendable {
    case lean, core
}

/// One connection's worth of load: what each phase asks of it.
protocol BenchDriver: Sendable {
    func health() async throws
    /// options → sign → verify; returns the verificationToken.
    func stepUp() async throws -> String
    func topup(token: String) async throws
    /// A top-up for a token minted ahead of a top-up phase, made ready to send while the tokens
    /// are minted (untimed): the lean client's request bytes, idempotency key included, as `wrk`
    /// sends prepared requests; the client core's token, as it builds each request itself.
    func prepareTopup(token: String) -> PreparedTopup
    func topup(_ prepared: PreparedTopup) async throws
    func close() async
}

enum PreparedTopup: Sendable {
    case token(String)
    case request(ByteBuffer)
}

extension BenchDriver {
    func prepareTopup(token: String) -> PreparedTopup { .token(token) }

    func topup(_ prepared: PreparedTopup) async throws {
        switch prepared {
        case .token(let token): try await topup(token: token)
        case .request: throw PurseError.invalidResponse("a prepared request for a driver that sends none")
        }
    }
}

/// A benchmark user: account, enrolled device and funded wallet, made through the real client
/// core (untimed), which also drives the load with `--client core`.
struct BenchUser: BenchDriver {
    let api: APIClient
    let nexus: NexusClient
    let authenticator: DeviceAuthenticator
    let connection: BenchConnection
    let sessionToken: String
    let key: P256.Signing.PrivateKey

    static func make(base: URL, index: Int) async throws -> BenchUser {
        let transport = try await BenchConnection.connect(host: base.host ?? "127.0.0.1", port: base.port ?? 80)
        let api = APIClient(session: ClientSession(baseURL: base), transport: transport, retry: .none)
        struct Auth: Decodable { var token: String }
        let auth: Auth = try await api.send(
            "POST", "/auth/register", body: ["email": "bench-\(index)-\(UUID().uuidString.prefix(8))@example.com", "password": "bench password"],
            authenticated: false
        )
        try await api.session.setToken(auth.token)
        let key = P256.Signing.PrivateKey()
        let authenticator = DeviceAuthenticator(store: InMemorySecureStore(), origin: origin(of: base)) { _, _ in SoftwareDeviceKey(privateKey: key) }
        let nexus = NexusClient(api: api)
        _ = try await Enrollment(client: nexus, gate: SoftwareBiometricGate.scripted([.success]), authenticator: authenticator).enroll()
        _ = try await nexus.fund(amount: 10_000_000)
        return BenchUser(api: api, nexus: nexus, authenticator: authenticator, connection: transport, sessionToken: auth.token, key: key)
    }

    static func origin(of base: URL) -> String {
        var origin = "\(base.scheme ?? "http")://\(base.host ?? "127.0.0.1")"
        if let port = base.port { origin += ":\(port)" }
        return origin
    }

    /// The same user and device driven by the lean load generator on a connection of its own.
    func lean(base: URL) async throws -> LeanBenchClient {
        guard let credentialID = try await authenticator.credentialID() else { throw CLIError("bench user is not enrolled") }
        // The relying party's id, from one options request (its challenge is left to expire).
        let rpID = try await nexus.authenticationOptions().rpId
        await connection.close()
        let host = base.host ?? "127.0.0.1", port = base.port ?? 80
        return try LeanBenchClient(
            connection: try await RawHTTPConnection.connect(host: host, port: port), host: "\(host):\(port)", sessionToken: sessionToken,
            signer: AssertionSigner(key: key, credentialID: credentialID, origin: Self.origin(of: base), rpID: rpID, signCount: 0),
            order: NexusBench.order
        )
    }

    func health() async throws {
        _ = try await api.sendRaw("GET", "/health", authenticated: false)
    }

    func stepUp() async throws -> String {
        let options = try await nexus.authenticationOptions()
        let assertion = try await authenticator.makeAssertion(for: options, userVerified: true)
        return try await nexus.verify(assertion).verificationToken
    }

    func topup(token: String) async throws {
        _ = try await nexus.topup(NexusBench.order, authorization: .verificationToken(token), idempotencyKey: IdempotencyKey.make())
    }

    func close() async { await connection.close() }
}

extension LeanBenchClient: BenchDriver {
    func close() async { await connection.close() }
}

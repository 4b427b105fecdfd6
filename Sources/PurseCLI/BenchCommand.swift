import ArgumentParser
import ChipsService
import Foundation
import Hummingbird
import Logging
import PurseBench
import PurseDatabase
import PurseServer
import ServiceLifecycle

/// `purse bench …`: load measurements on loopback. Not tests: they print figures. The load
/// generators and phases live in `PurseBench`; these commands parse options and, without
/// `--server`, start a server in-process the way `purse serve` would.
struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench", abstract: "Measure throughput and latency on loopback (build with -c release).",
        subcommands: [NexusBenchCommand.self, StarknetBenchCommand.self, ChippiBenchCommand.self, CutieBenchCommand.self, ChipsBenchCommand.self]
    )
}

extension LoadGeneratorKind: ExpressibleByArgument {}

struct NexusBenchCommand: BenchSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "nexus",
        abstract: "Full step-up flows (options → verify → top-up) per second, top-up alone, and GET /health on the same server.",
        discussion: "Without --server it starts its own server on 127.0.0.1 (SQLite in a temporary directory). Targets on 2 cores: ≥ 1,500 flows/s; top-up ≥ 25 % of /health with p99 ≤ 10 ms at 32 connections."
    )

    @Option(help: "A running server (default: start one in-process).") var server: String?
    @Option(help: "Also write the phases and figures to this file as JSON (benchmarks/run.sh gathers them).") var json: String?
    @Option(help: "Concurrent connections.") var connections: Int = 32
    @Option(help: "Operations per connection in each phase, instead of --duration: the same work every run, so the CPU time two builds spend on it compares them where rates on a noisy machine cannot (benchmarks/compare.sh).")
    var count: Int?
    @Option(help: "Seconds per phase.") var duration: Int = 10
    @Option(help: "The load generator: lean (prepared request bytes, like wrk; the default) or core (the real NexusPay client core, which costs the shared CPUs about twice as much per flow).")
    var client: LoadGeneratorKind = .lean
    @Option(help: "Also run top-ups at this many per second in all (open loop, spread evenly over the connections). Latency counts from each request's scheduled time, so an answer that comes late also delays the requests due behind it on its connection instead of hiding them (no coordinated omission): the latency users see at that load, where the closed-loop phases' latency is set by their connection count (connections ÷ rate).")
    var rate: Double?
    @Option(help: "Write every top-up of the top-up-alone phase to this file, one a line: connection, start (s since the phase began), latency (s) — to tell stalls that hold every connection at once from ordinary queueing.")
    var trace: String?

    var benchmark: NexusBenchmark {
        var benchmark = NexusBenchmark()
        benchmark.connections = connections
        benchmark.count = count
        benchmark.duration = duration
        benchmark.client = client
        benchmark.rate = rate
        benchmark.trace = trace
        return benchmark
    }
}

struct StarknetBenchCommand: BenchSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "starknet",
        abstract: "Pedersen, Poseidon, sign and verify per second on one core; INVOKE transactions per second accepted by the sandbox node (sign → send → receipt).",
        discussion: "Without --server it starts its own server on 127.0.0.1 (SQLite in a temporary directory). Targets on 2 cores: each crypto rate at least starknet-py's (benchmarks/starknet_py.py); ≥ 1,000 invokes/s with p99 ≤ 20 ms at 16 connections."
    )

    @Option(help: "A running server (default: start one in-process).") var server: String?
    @Option(help: "Also write the phases and figures to this file as JSON (benchmarks/run.sh gathers them).") var json: String?
    @Option(help: "Concurrent connections, one account each.") var connections: Int = 16
    @Option(help: "Invokes per connection, instead of --duration.") var count: Int?
    @Option(help: "Seconds of invokes.") var duration: Int = 10
    @Option(help: "Seconds per crypto operation.") var cryptoSeconds: Double = 2

    var benchmark: StarknetBenchmark {
        var benchmark = StarknetBenchmark()
        benchmark.connections = connections
        benchmark.count = count
        benchmark.duration = duration
        benchmark.cryptoSeconds = cryptoSeconds
        return benchmark
    }
}

struct ChippiBenchCommand: BenchSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "chippi",
        abstract: "Complete sandbox purchases per second (quote → vault withdrawal → purchase → fulfilled), and GET /v1/skus against GET /health.",
        discussion: """
            Without --server it starts its own server on 127.0.0.1 (SQLite in a temporary directory) with the sandbox merchant's keys set \
            to --keys, immediate fulfilment and no rate limit. Against --server, that server needs CHIPPI_SANDBOX_MERCHANT_KEYS=--keys. \
            Targets on 2 cores: skus ≥ 60 % of /health; ≥ 300 purchases/s.
            """
    )

    @Option(help: "A running server (default: start one in-process).") var server: String?
    @Option(help: "Also write the phases and figures to this file as JSON (benchmarks/run.sh gathers them).") var json: String?
    @Option(help: "Concurrent connections, one account each.") var connections: Int = 16
    @Option(help: "Purchases per connection, instead of --duration.") var count: Int?
    @Option(help: "Seconds per phase.") var duration: Int = 10
    @Option(help: "The merchant's key pair, pk_…:sk_….") var keys: String = "pk_test_bench:sk_test_bench_secret"

    var benchmark: ChippiBenchmark {
        var benchmark = ChippiBenchmark()
        benchmark.connections = connections
        benchmark.count = count
        benchmark.duration = duration
        benchmark.keys = keys
        return benchmark
    }

    func run() async throws {
        let benchmark = benchmark
        // The in-process server's sandbox: these keys, fulfilment at once, no per-key limit.
        let settings = ["CHIPPI_SANDBOX_MERCHANT_KEYS": keys, "CHIPPI_SANDBOX_FULFILMENT_SECONDS": "0", "CHIPPI_RATE_LIMIT": "100000"]
        BenchReport.begin("chippi")
        try await BenchCommand.run(server: server, settings: settings) { base, inProcess, _ in try await benchmark.run(against: base, inProcess: inProcess) }
        if let json { try BenchReport.write(to: json) }
    }
}

struct CutieBenchCommand: BenchSubcommand {
    static let configuration = CommandConfiguration(
        commandName: "cutie",
        abstract: "Signed GET /v1/conversations and POST …/messages per second against GET /health, and the QR encoder's version-10 codes per second.",
        discussion: "Without --server it starts its own server on 127.0.0.1 (SQLite in a temporary directory). Targets on 2 cores: list ≥ 60 % of /health, post ≥ 25 %; ≥ 10,000 version-10 QR codes/s."
    )

    @Option(help: "A running server (default: start one in-process).") var server: String?
    @Option(help: "Also write the phases and figures to this file as JSON (benchmarks/run.sh gathers them).") var json: String?
    @Option(help: "Concurrent connections, one device each.") var connections: Int = 16
    @Option(help: "Messages per connection (and 20× as many reads), instead of --duration.") var count: Int?
    @Option(help: "Seconds per phase.") var duration: Int = 10
    @Option(help: "Seconds of QR encoding.") var qrSeconds: Double = 2
    @Flag(name: .customLong("assert"), help: "Also the inbox with an App Attest assertion verified on every request (target: costs ≤ 30 % of the plain rate).")
    var assertions = false

    var benchmark: CutieBenchmark {
        var benchmark = CutieBenchmark()
        benchmark.assertions = assertions
        benchmark.connections = connections
        benchmark.count = count
        benchmark.duration = duration
        benchmark.qrSeconds = qrSeconds
        return benchmark
    }
}

struct ChipsBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chips",
        abstract: "MyCHIPs: select on users_v_me over 1 and N websocket connections and signature logins per second; --chits: signed chits per second between pairs, and tally selects.",
        discussion: """
            Without --server it starts its own provider on 127.0.0.1 (SQLite in a temporary directory). With --server, tickets are made \
            on the server's database as `purse chips ticket` makes them (DATABASE_URL, PURSE_DATA_DIR). Target on 2 cores: ≥ 20,000 selects/s over 32 connections; with --chits, ≥ 2,000 chits/s between 32 pairs and ≥ 10,000 tally selects/s.
            """
    )

    @Option(help: "A running server (default: start one in-process).") var server: String?
    @Option(help: "Also write the phases and figures to this file as JSON (benchmarks/run.sh gathers them).") var json: String?
    @Option(help: "Concurrent connections, one user each.") var connections: Int = 32
    @Option(help: "Requests each connection keeps in flight.") var depth: Int = 1
    @Option(help: "Selects per connection (a tenth as many logins), instead of --duration.") var count: Int?
    @Option(help: "Seconds per phase.") var duration: Int = 10
    @Flag(help: "Signed chits between pairs of users (--connections pairs), then selects on tallies_v_me.") var chits = false

    func validate() throws {
        do { try benchmark(ticket: { _ in "" }).validate() } catch { throw ValidationError("\(error)") }
    }

    func benchmark(ticket: @escaping @Sendable (String) async throws -> String) -> ChipsBenchmark {
        var benchmark = ChipsBenchmark()
        benchmark.chits = chits
        benchmark.connections = connections
        benchmark.depth = depth
        benchmark.count = count
        benchmark.duration = duration
        benchmark.ticket = ticket
        return benchmark
    }

    func run() async throws {
        let external = server != nil
        BenchReport.begin(chits ? "chips --chits" : "chips")
        try await BenchCommand.run(server: server) { base, inProcess, environment in
            let configuration = try ChipsConfiguration.from(environment?.configuration ?? (try PurseConfiguration.fromEnvironment()))
            let ticket: @Sendable (String) async throws -> String = { user in
                if let environment, !external {
                    return try await ChipsModule.makeTicket(username: user, name: nil, configuration: configuration, environment: environment).json
                }
                return try await CutieCommand.withServer { environment in
                    try await ChipsModule.makeTicket(username: user, name: nil, configuration: configuration, environment: environment).json
                }
            }
            try await benchmark(ticket: ticket).run(against: base, inProcess: inProcess)
        }
        if let json { try BenchReport.write(to: json) }
    }
}

/// A `purse bench` subcommand: its options make a benchmark, which runs against `--server` or an
/// in-process server.
protocol BenchSubcommand: AsyncParsableCommand {
    associatedtype Benchmark: PurseBenchmark
    var server: String? { get }
    var json: String? { get }
    var benchmark: Benchmark { get }
}

extension BenchSubcommand {
    func validate() throws {
        do { try benchmark.validate() } catch { throw ValidationError("\(error)") }
    }

    func run() async throws {
        let benchmark = benchmark
        BenchReport.begin(Self.configuration.commandName ?? "bench")
        try await BenchCommand.run(server: server) { base, inProcess in try await benchmark.run(against: base, inProcess: inProcess) }
        if let json { try BenchReport.write(to: json) }
    }
}

extension BenchCommand {
    /// Runs `body` against the server at `server`, or against one started in this process the way
    /// `purse serve` would (SQLite in a temporary directory, logging at warning) and stopped as
    /// SIGTERM stops it.
    static func run(server: String?, _ body: @Sendable (URL, _ inProcess: Bool) async throws -> Void) async throws {
        try await run(server: server) { base, inProcess, _ in try await body(base, inProcess) }
    }

    /// As ``run(server:_:)``, handing `body` the in-process server's environment too (nil with
    /// `--server`). `settings` are environment settings for the in-process server only, passed in
    /// its configuration (the process's own environment is left alone).
    static func run(server: String?, settings: [String: String] = [:],
                    _ body: @Sendable (URL, _ inProcess: Bool, ServerEnvironment?) async throws -> Void) async throws {
        if let url = server {
            guard let base = URL(string: url) else { throw ValidationError("bad --server") }
            try await body(base, false, nil)
            return
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("purse-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: work) }
        ServeCommand.bootstrapLogging(level: .warning)
        let port = try LoopbackPort.freePair()
        var configuration = try PurseConfiguration.fromEnvironment()
        configuration.port = port
        configuration.dataDirectory = work.path
        configuration.databaseURL = nil
        configuration.logLevel = .warning
        configuration.bcryptCost = 4
        configuration.environment.merge(settings) { _, given in given }
        // A load generator is many devices on one address: the per-address limits would count it as one abuser.
        if configuration.environment["CUTIE_NEW_DEVICES_PER_ADDRESS_HOUR"] == nil { configuration.environment["CUTIE_NEW_DEVICES_PER_ADDRESS_HOUR"] = "0" }
        let app = try await buildApplication(configuration: configuration, modules: PurseModules.all(configuration: configuration))
        let group = ServiceGroup(configuration: .init(services: [app.application], logger: app.application.logger))
        let task = Task { try await group.run() }
        do {
            try await body(URL(string: "http://127.0.0.1:\(port)")!, true, app.environment)
        } catch {
            await group.triggerGracefulShutdown()
            _ = await task.result
            throw error
        }
        await group.triggerGracefulShutdown()
        _ = await task.result
    }
}

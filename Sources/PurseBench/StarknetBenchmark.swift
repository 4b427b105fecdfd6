import Foundation
import HTTPTypes
import PurseKit
import PurseHTTP
import Starknet

/// `purse bench starknet`: the protocol library's crypto rates on one core (Pedersen, Poseidon,
/// sign, verify — what starknet-py's own rates are compared with), then INVOKE transactions per
/// second accepted by a sandbox node over loopback: each connection signs a STRK transfer from
/// its own account, sends it and reads its receipt.
public struct StarknetBenchmark: PurseBenchmark {
    /// Concurrent connections, one account each.
    public var connections = 16
    /// Invokes per connection, instead of ``duration``.
    public var count: Int?
    /// Seconds per phase.
    public var duration = 10
    /// Seconds per crypto measurement.
    public var cryptoSeconds = 2.0

    public init() {}

    public func validate() throws {
        guard (1...256).contains(connections), (1...300).contains(duration), (1...1_000_000).contains(count ?? 1),
              (0.1...60).contains(cryptoSeconds) else {
            throw BenchmarkError("--connections 1-256, --duration 1-300, --count 1-1000000, --crypto-seconds 0.1-60")
        }
    }

    public func run(against base: URL, inProcess: Bool) async throws {
        try validate()
        try await waitForHealth(base)
        let budget = count.map { "\($0) invokes per connection" } ?? "\(duration) s"
        print("purse bench starknet: crypto \(cryptoSeconds) s each on one core; invokes on \(connections) connections, \(budget), node \(base.absoluteString)/starknet/rpc")
        print(inProcess ? "cpu/op: this process, node and load generator together" : "cpu/op: this process, the load generator only")
        crypto()
        try await invokes(base: base)
    }

    // MARK: Crypto

    /// Each operation on one core as fast as it goes, inputs changing every time (each result
    /// feeds the next), so nothing is cached that a real workload would not cache.
    public func crypto() {
        func rate(_ name: String, _ body: (Int) -> Void) {
            // A short warm-up builds the tables (Pedersen's, the generator's) outside the timing.
            body(0)
            var operations = 0
            let cpu = ProcessCPU.now()
            let start = ContinuousClock.now
            let end = start + .seconds(cryptoSeconds)
            repeat {
                for index in 0..<64 { body(operations + index) }
                operations += 64
            } while ContinuousClock.now < end
            let elapsed = (ContinuousClock.now - start).seconds
            let perOperation = (ProcessCPU.now() - cpu) / Double(operations) * 1_000_000
            BenchReport.figure("starknet.crypto." + String(name.lowercased().prefix { $0.isLetter || $0 == "_" }), Double(operations) / elapsed, unit: "/s",
                               line: name.padding(toLength: 40, withPad: " ", startingAt: 0)
                                   + String(format: " %10.0f /s   cpu %.1f µs/op", Double(operations) / elapsed, perOperation))
        }
        var felt = Felt(0x1234_5678)
        rate("pedersen(a, b)") { _ in felt = Pedersen.hash(felt, Felt(0xabcdef)) }
        rate("poseidon(a, b)") { _ in felt = Poseidon.hash(felt, Felt(0xabcdef)) }
        rate("poseidon_hash_many (10 felts)") { index in felt = Poseidon.hash(many: [felt, Felt(UInt64(index))] + Self.eight) }
        let key = try! StarkKey(privateKey: Felt("0x2bf5a6f54bbe744b893d351a825ec1a7d9d342adbe963a69423200463a78752")!)
        var signature = StarkSignature(r: .one, s: .one)
        var hashes: [Felt] = []
        rate("sign (RFC 6979 k)") { index in
            let hash = Self.hash(index)
            signature = try! key.sign(hash)
            if hashes.count < 4096 { hashes.append(hash) }
        }
        let signatures = hashes.map { try! key.sign($0) }
        var valid = 0
        rate("verify") { index in
            let slot = index % signatures.count
            if StarkVerifier.verify(hashes[slot], signature: signatures[slot], publicKey: key.publicKey) { valid += 1 }
        }
        if valid == 0 || felt.isZero || signature.r.isZero { print("  unexpected: no valid signature") }
    }

    static let eight: [Felt] = (1...8).map { Felt(UInt64($0)) }

    /// A message hash below 2^251 that differs for every index.
    static func hash(_ index: Int) -> Felt { Poseidon.hash(Felt(UInt64(index)), Felt(0x5eed)) }

    // MARK: Invokes

    struct Listing: Decodable {
        var strkAddress: String
        var accountClassHash: String

        enum CodingKeys: String, CodingKey { case strkAddress = "strk_address", accountClassHash = "account_class_hash" }
    }

    /// Fresh accounts (one a connection: keys made here, STRK from the faucet, DEPLOY_ACCOUNT v3),
    /// then transfers of 1 fri from each, as fast as each connection's node answers.
    func invokes(base: URL) async throws {
        let api = benchProbe(base)
        let listing: Listing = try await api.send(.get, "/sandbox/starknet/accounts", authenticated: false)
        guard let classHash = Felt(listing.accountClassHash), let strk = Felt(listing.strkAddress) else {
            throw BenchmarkError("the node's listing has no account class")
        }
        // Setup, untimed: an account per connection on a connection of its own.
        let accounts = try await withThrowingTaskGroup(of: (StarknetAccount, BenchConnection).self) { group in
            for _ in 0..<connections {
                group.addTask { try await freshSandboxAccount(base: base, classHash: classHash, strk: "1000") }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        // One fee estimate for all: every transfer costs the same.
        let transfer = Call(to: strk, entrypoint: "transfer", calldata: [Felt(0xbe7c4), .one, .zero])
        let bounds = try await accounts[0].0.prepare([transfer]).common.resourceBounds

        let recorder = LatencyRecorder()
        var cpu = ProcessCPU.now()
        let elapsed = await closedLoop(accounts.map(\.0), count: count, duration: duration, recorder: recorder) { account in
            let hash = try await account.execute([transfer], resourceBounds: bounds)
            return try await account.provider.transactionReceipt(hash).succeeded
        }
        let summary = recorder.summary(over: elapsed)
        reportPhase("invoke (sign → send → receipt)", summary, cpuSince: &cpu)
        BenchReport.figure("starknet.invokes", summary.perSecond, unit: "/s", target: "≥ 1,000 /s, p99 ≤ 20 ms", met: summary.perSecond >= 1000 && summary.p99 <= 20,
                           line: "target: ≥ 1000 accepted invokes/s with p99 ≤ 20 ms (\(summary.perSecond >= 1000 && summary.p99 <= 20 ? "met" : "not met"))")
        for (_, connection) in accounts { await connection.close() }
    }
}

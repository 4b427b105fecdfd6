import Foundation
import Synchronization
import HTTPTypes
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import Starknet

// What every benchmark prints and probes the same way.

/// A benchmark `purse bench` runs: checks its figures, then measures the server at a URL.
public protocol PurseBenchmark: Sendable {
    func validate() throws
    /// - Parameter inProcess: Whether the server runs in this process (CPU figures then cover both).
    func run(against base: URL, inProcess: Bool) async throws
}

/// A client for the bench's own unauthenticated probes (`/health`, `/metrics`), outside the
/// measured connections and without retries.
func benchProbe(_ base: URL) -> APIClient {
    APIClient(session: ClientSession(baseURL: base), transport: AsyncHTTPClientTransport(), retry: .none)
}

/// Prints a phase's figures and the CPU time per operation since `cpu` (then resets it).
func reportPhase(_ name: String, _ s: (count: Int, perSecond: Double, p50: Double, p99: Double, errors: Int), cpuSince cpu: inout Double) {
    let now = ProcessCPU.now()
    let perOperation = (now - cpu) / Double(max(1, s.count)) * 1000
    cpu = now
    BenchReport.record(BenchReport.Phase(name: name, per_second: s.perSecond, p50_ms: s.p50, p99_ms: s.p99, cpu_ms_per_op: perOperation,
                                         count: s.count, errors: s.errors))
    print(name.padding(toLength: 40, withPad: " ", startingAt: 0) + String(
        format: " %8.0f /s   p50 %6.2f ms   p99 %6.2f ms   cpu %.3f ms/op   (%d ok, %d errors)",
        s.perSecond, s.p50, s.p99, perOperation, s.count, s.errors))
}

/// Waits up to 10 s for the server's `/health`.
func waitForHealth(_ base: URL) async throws {
    let api = benchProbe(base)
    for _ in 0..<100 {
        if (try? await api.sendRaw(.get, "/health", authenticated: false)) != nil { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw BenchmarkError("server at \(base.absoluteString) did not become healthy")
}

/// A benchmark that cannot run as asked.
public struct BenchmarkError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Runs `operation` on every item at once, each `count` times or until `duration` seconds pass,
/// recording the latency of each success (`true`) and counting failures. Returns the elapsed time.
func closedLoop<Item: Sendable>(_ items: [Item], count: Int?, duration: Int, recorder: LatencyRecorder,
                                _ operation: @escaping @Sendable (Item) async throws -> Bool) async -> Duration {
    let start = ContinuousClock.now
    let deadline = start + .seconds(duration)
    await withTaskGroup(of: Void.self) { group in
        for item in items {
            group.addTask {
                var done = 0
                while count.map({ done < $0 }) ?? (ContinuousClock.now < deadline) {
                    done += 1
                    let begin = ContinuousClock.now
                    do {
                        if try await operation(item) { recorder.record(.now - begin) } else { recorder.fail() }
                    } catch {
                        recorder.fail()
                    }
                }
            }
        }
    }
    return .now - start
}

/// A fresh account on a sandbox node, on a keep-alive connection of its own: a new key, STRK
/// from the faucet, DEPLOY_ACCOUNT v3 accepted.
/// A ChippiPay wallet of a new user: its id, and its account on chain.
struct BenchWallet: Sendable {
    var id: String
    var account: StarknetAccount
}

/// A new user of the server with a ChippiPay wallet, funded with `strk` STRK minted by the
/// sandbox, and a keep-alive connection to use it over. The wallet's account deploys itself (at
/// the address the provider computes for its key) before the wallet is saved, so the provider has
/// nothing to deploy: setting up many wallets at once never queues on the provider's relayer,
/// whichever replica each save reaches.
func freshWallet(base: URL, headerFields: HTTPFields, classHash: Felt, strk: String) async throws -> (BenchWallet, BenchConnection) {
    let (account, connection) = try await freshSandboxAccount(base: base, classHash: classHash, strk: strk)
    let probe = benchProbe(base)
    struct Session: Decodable {
        struct User: Decodable { var id: String }
        var token: String
        var user: User
    }
    let session: Session = try await probe.send(.post, "/auth/register", body: ["email": "chippi-bench-\(UUID().uuidString.prefix(8))@example.com",
                                                                                "password": "bench password", "name": "Bench"], authenticated: false)
    struct Prepared: Decodable { var wallet_id: String }
    let prepared: Prepared = try await probe.send(.post, "/v1/chipi-wallets/prepare-creation", body: ["auth_token": session.token, "external_user_id": session.user.id],
                                                  headerFields: headerFields, authenticated: false)
    let _: EmptyResponse = try await probe.send(.post, "/v1/chipi-wallets", body: [
        "wallet_id": prepared.wallet_id, "public_key": account.publicKey.description, "encrypted_private_key": "v1.bench-wallet-blob",
        "auth_token": session.token,
    ], headerFields: headerFields, authenticated: false)
    struct Shown: Decodable { var address: String? }
    let shown: Shown = try await probe.send(.get, "/v1/chipi-wallets/\(prepared.wallet_id)", headerFields: headerFields, authenticated: false)
    guard shown.address.flatMap({ Felt($0) }) == account.address else {
        throw BenchmarkError("the provider put the wallet at \(shown.address ?? "no address"), not at its account \(account.address)")
    }
    return (BenchWallet(id: prepared.wallet_id, account: account), connection)
}

func freshSandboxAccount(base: URL, classHash: Felt, strk: String) async throws -> (StarknetAccount, BenchConnection) {
    guard let host = base.host, let port = base.port else { throw BenchmarkError("the server URL needs a host and a port") }
    let connection = try await BenchConnection.connect(host: host, port: port)
    let provider = StarknetProvider(url: base.appendingPathComponent("starknet/rpc"), transport: connection)
    let key = StarkKey.random()
    let address = ContractAddress.compute(classHash: classHash, salt: key.publicKey, constructorCalldata: [key.publicKey])
    let _: EmptyResponse = try await benchProbe(base).send(.post, "/sandbox/starknet/mint", body: ["address": address.description, "amount": strk],
                                                           idempotencyKey: UUID().uuidString, authenticated: false)
    let deployed = try await StarknetAccount.deploy(key: key, classHash: classHash, provider: provider)
    let receipt = try await provider.waitForTransaction(deployed.transactionHash, poller: Poller(interval: .milliseconds(20), maxAttempts: 200))
    guard receipt.succeeded else { throw BenchmarkError("an account did not deploy: \(receipt.revertReason ?? "")") }
    return (StarknetAccount(address: deployed.address, key: key, provider: provider), connection)
}

/// What a device signed before a phase (requests, chits), as it would have on its own CPU,
/// handed out in the order it was signed; nil once it runs out.
final class Minted<Item: Sendable>: Sendable {
    private let queue: Mutex<(items: [Item], next: Int)>

    init(_ items: [Item]) { queue = Mutex((items, 0)) }

    func next() -> Item? {
        queue.withLock { queue in
            guard queue.next < queue.items.count else { return nil }
            defer { queue.next += 1 }
            return queue.items[queue.next]
        }
    }
}

extension Duration {
    /// The duration in seconds, for rates.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

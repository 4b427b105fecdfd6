import ChippiPay
import Foundation
import HTTPTypes
import PurseKit
import PurseHTTP
import Starknet

/// `purse bench chippi`: complete sandbox purchases per second — quote, vault withdrawal to the
/// provider (signed, sent, accepted), `POST /v1/sku-transactions`, fulfilled — each connection
/// with its own account and vault balance; and `GET /v1/skus` against `GET /health` in the same run.
public struct ChippiBenchmark: PurseBenchmark {
    public var connections = 16
    /// Purchases per connection, instead of ``duration``.
    public var count: Int?
    public var duration = 10
    /// The merchant's key pair, `pk_…:sk_…` (the server runs with CHIPPI_SANDBOX_MERCHANT_KEYS).
    public var keys = "pk_test_bench:sk_test_bench_secret"

    public init() {}

    public func validate() throws {
        guard (1...256).contains(connections), (1...300).contains(duration), (1...100_000).contains(count ?? 1),
              keys.split(separator: ":").count == 2 else {
            throw BenchmarkError("--connections 1-256, --duration 1-300, --count 1-100000, --keys pk_…:sk_…")
        }
    }

    public func run(against base: URL, inProcess: Bool) async throws {
        try validate()
        try await waitForHealth(base)
        let budget = count.map { "\($0) purchases per connection" } ?? "\(duration) s per phase"
        print("purse bench chippi: \(connections) connections, \(budget), server \(base.absoluteString)")
        print(inProcess ? "cpu/op: this process, server and load generator together" : "cpu/op: this process, the load generator only")
        let parts = keys.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2 else { throw BenchmarkError("--keys is the public and the secret key joined by a colon") }
        let headerFields: HTTPFields = [.apiKey: parts[0], .authorization: "Bearer \(parts[1])"]

        // Setup, untimed: per connection a keep-alive connection and a user whose wallet has STRK
        // in the vault.
        let probe = benchProbe(base)
        struct Listing: Decodable { var strk_address: String; var vault_address: String; var account_class_hash: String }
        let listing: Listing = try await probe.send(.get, "/sandbox/starknet/accounts", authenticated: false)
        guard let classHash = Felt(listing.account_class_hash), let vault = Felt(listing.vault_address), let strk = Felt(listing.strk_address) else {
            throw BenchmarkError("the sandbox listing does not parse")
        }
        // Every purchase is paid from its own wallet's account (the provider checks the payer):
        // per connection a user and a wallet whose account has STRK minted to it and put in the vault.
        let users = try await withThrowingTaskGroup(of: (BenchWallet, BenchConnection).self) { group in
            for _ in 0..<connections {
                group.addTask {
                    let (wallet, connection) = try await freshWallet(base: base, headerFields: headerFields, classHash: classHash, strk: "100000")
                    let vaultContract = VaultContract(address: vault, token: ERC20(address: strk, provider: wallet.account.provider))
                    _ = try await wallet.account.executeAndWait(vaultContract.depositCalls(try STRKAmount.parse("90000")),
                                                                poller: Poller(interval: .milliseconds(20), maxAttempts: 200))
                    return (wallet, connection)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        // GET /health, then GET /v1/skus, on the same connections.
        var cpu = ProcessCPU.now()
        let health = try await phase("GET /health", users.map(\.1), cpu: &cpu) { connection in
            TransportRequest(method: .get, url: base.appendingPathComponent("health"))
        }
        let skus = try await phase("GET /v1/skus", users.map(\.1), cpu: &cpu) { connection in
            TransportRequest(method: .get, url: base.appendingPathComponent("v1/skus"), headerFields: headerFields)
        }
        BenchReport.figure("chippi.skus_vs_health", skus / health * 100, unit: "%", target: "≥ 60 %", met: skus / health >= 0.6,
                           line: String(format: "ratio: skus / health = %.1f %%  (target ≥ 60 %%)", skus / health * 100))

        // Purchases.
        let quoteURL = URL(string: base.absoluteString + "/v1/quote?sku_id=telcel_50")!
        struct Quote: Decodable { var payment_address: String; var strk_amount_fri: String }
        let recorder = LatencyRecorder()
        cpu = ProcessCPU.now()
        let elapsed = await closedLoop(users, count: count, duration: duration, recorder: recorder) { wallet, connection in
            let account = wallet.account
            let quoted = try await connection.send(TransportRequest(method: .get, url: quoteURL, headerFields: headerFields))
            let quote = try JSONDecoder().decode(Quote.self, from: quoted.body)
            guard let payTo = Felt(quote.payment_address), let amount = UInt256(quote.strk_amount_fri) else { return false }
            let vaultContract = VaultContract(address: vault, token: ERC20(address: strk, provider: account.provider))
            let hash = try await account.execute([vaultContract.withdraw(to: payTo, amount)])
            guard try await account.provider.transactionReceipt(hash).succeeded else { return false }
            let body = try JSONSerialization.data(withJSONObject: [
                "sku_id": "telcel_50", "reference": "5512345678", "amount": 50.0, "wallet_id": wallet.id, "vault_transaction_hash": hash.description,
            ])
            let created = try await connection.send(TransportRequest(
                method: .post, url: base.appendingPathComponent("v1/sku-transactions"),
                headerFields: headerFields + [HTTPField(name: .contentType, value: "application/json"), HTTPField(name: .idempotencyKey, value: UUID().uuidString)], body: body))
            guard created.status == 201, let id = (try? JSONSerialization.jsonObject(with: created.body) as? [String: Any])?["transaction_id"] as? String else {
                return false
            }
            for _ in 0..<500 {
                try await Task.sleep(for: .milliseconds(5))
                let polled = try await connection.send(TransportRequest(method: .get, url: base.appendingPathComponent("v1/sku-transactions/\(id)"), headerFields: headerFields))
                let status = ((try? JSONSerialization.jsonObject(with: polled.body) as? [String: Any])?["status"] as? String) ?? "pending"
                if status != "pending" { return status == "completed" }
            }
            return false
        }
        let summary = recorder.summary(over: elapsed)
        reportPhase("purchase (quote → withdraw → buy → done)", summary, cpuSince: &cpu)
        BenchReport.figure("chippi.purchases", summary.perSecond, unit: "/s", target: "≥ 300 /s", met: summary.perSecond >= 300,
                           line: "target: ≥ 300 purchases/s (\(summary.perSecond >= 300 ? "met" : "not met"))")
        for (_, connection) in users { await connection.close() }
    }

    /// Requests as fast as each connection answers, for the phase's duration (or 20 × `count` each).
    func phase(_ name: String, _ connections: [BenchConnection], cpu: inout Double, request: @escaping @Sendable (BenchConnection) -> TransportRequest) async throws -> Double {
        let recorder = LatencyRecorder()
        let elapsed = await closedLoop(connections, count: count.map { $0 * 20 }, duration: duration, recorder: recorder) { connection in
            try await connection.send(request(connection)).status == 200
        }
        let summary = recorder.summary(over: elapsed)
        reportPhase(name, summary, cpuSince: &cpu)
        return summary.perSecond
    }
}

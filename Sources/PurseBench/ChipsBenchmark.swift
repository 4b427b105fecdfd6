import Foundation
import MyCHIPs
import PurseFormats
import PurseKit
import PurseKitAHC

/// `purse bench chips`: `select` on `mychips.users_v_me` round trips per second through the
/// client core's ``ChipsConnection`` — over one connection, then over all of them — and
/// signature logins per second (`/clientinfo`, a P-521 signature, the upgrade and its check).
/// Each connection is a user of its own, logged in once with a ticket during setup.
public struct ChipsBenchmark: PurseBenchmark {
    public var connections = 32
    /// Round trips per connection and phase (logins: a tenth as many), instead of ``duration``.
    public var count: Int?
    public var duration = 10
    /// Requests each connection keeps in flight during the select phases.
    public var depth = 1
    /// Makes a connection ticket (its JSON) for a username: the provider operator's part.
    public var ticket: @Sendable (String) async throws -> String = { _ in throw BenchmarkError("no way to make tickets") }

    public init() {}

    public func validate() throws {
        guard (1...256).contains(connections), (1...300).contains(duration), (1...1_000_000).contains(count ?? 1), (1...64).contains(depth) else {
            throw BenchmarkError("--connections 1-256, --duration 1-300, --count 1-1000000, --depth 1-64")
        }
    }

    struct Client: Sendable {
        var index: Int
        var connection: ChipsConnection
    }

    public func run(against base: URL, inProcess: Bool) async throws {
        try validate()
        try await waitForHealth(base)
        let budget = count.map { "\($0) selects per connection" } ?? "\(duration) s per phase"
        print("purse bench chips: \(connections) connections, \(depth) in flight each, \(budget), provider \(base.absoluteString)")
        print(inProcess ? "cpu/op: this process, provider and clients together" : "cpu/op: this process, the clients only")

        let run = String(UUID().uuidString.prefix(8)).lowercased()
        let ticket = self.ticket
        let clients = try await withThrowingTaskGroup(of: Client.self) { group in
            for index in 0..<connections {
                group.addTask {
                    var options = ChipsConnection.Options()
                    options.requestTimeout = .seconds(30)
                    let connection = ChipsConnection(keychain: ChipsKeychain(store: InMemorySecureStore()), transport: NIOWebSocketTransport(),
                                                     http: AsyncHTTPClientTransport(), options: options)
                    try await connection.connect(ticket: try ChipsTicket.parse(try await ticket("bench-\(run)-\(index)")))
                    return Client(index: index, connection: connection)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }.sorted { $0.index < $1.index }
        }

        var cpu = ProcessCPU.now()
        let select: @Sendable (Client) async throws -> Bool = { client in
            let rows = try await client.connection.request(view: "mychips.users_v_me", action: "select", ["where": ["username notnull"]])
            return rows.arrayValue?.count == 1
        }
        let one = await phase("select users_v_me, 1 connection", Array(clients.prefix(1)), cpu: &cpu, operation: select)
        let all = await phase("select users_v_me, \(connections) connections", clients, cpu: &cpu, operation: select)
        let logins = await phase("signature login (clientinfo → sign → upgrade)", clients, depth: 1, count: count.map { max(1, $0 / 10) }, cpu: &cpu) { client in
            await client.connection.disconnect()
            try await client.connection.connect()
            return true
        }
        print(String(format: "selects: %.0f /s over 1 connection, %.0f /s over %d  (target ≥ 20,000 /s over 32: %@); logins %.0f /s",
                     one, all, connections, all >= 20_000 ? "met" : "not met", logins))
        for client in clients { await client.connection.disconnect() }
    }

    func phase(_ name: String, _ clients: [Client], depth: Int? = nil, count: Int?? = nil, cpu: inout Double,
               operation: @escaping @Sendable (Client) async throws -> Bool) async -> Double {
        let recorder = LatencyRecorder()
        let workers = clients.flatMap { client in Array(repeating: client, count: depth ?? self.depth) }
        let elapsed = await closedLoop(workers, count: count ?? self.count, duration: duration, recorder: recorder, operation)
        let summary = recorder.summary(over: elapsed)
        reportPhase(name, summary, cpuSince: &cpu)
        return summary.perSecond
    }
}

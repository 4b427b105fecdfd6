import Crypto
import Foundation
import Synchronization
import MyCHIPs
import PurseFormats
import PurseKit
import PurseP521
import PurseHTTPNIO

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
    /// Signed chits between pairs of users instead of profile selects (`--chits`).
    public var chits = false
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
        if chits { return try await runChits(against: base, inProcess: inProcess) }
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
        let line = String(format: "selects: %.0f /s over 1 connection, %.0f /s over %d  (target ≥ 20,000 /s over 32: %@); logins %.0f /s",
                          one, all, connections, all >= 20_000 ? "met" : "not met", logins)
        BenchReport.figure("chips.selects", all, unit: "/s", target: "≥ 20,000 /s", met: all >= 20_000, line: line)
        BenchReport.figure("chips.logins", logins, unit: "/s", line: "")
        for client in clients { await client.connection.disconnect() }
    }

    /// A pair of users with an open tally between them, each with a connection and a signing key.
    struct Pair: Sendable {
        var index: Int
        var sides: [PairSide]
    }

    struct PairSide: Sendable {
        var session: ChipsSession
        var key: SigningKey
        var tally: ChipsTally
        var notices: NoticeWaiter
    }

    func connectSession(_ user: String) async throws -> ChipsSession {
        var options = ChipsConnection.Options()
        options.requestTimeout = .seconds(30)
        let connection = ChipsConnection(keychain: ChipsKeychain(store: InMemorySecureStore()), transport: NIOWebSocketTransport(),
                                         http: AsyncHTTPClientTransport(), options: options)
        try await connection.connect(ticket: try ChipsTicket.parse(try await ticket(user)))
        return ChipsSession(connection: connection, preferences: InMemoryPreferences())
    }

    /// `purse bench chips --chits`: `connections` pairs of users, each pair with an open tally
    /// (a million CHIPs of credit each way). A payment is a chit signed on the payer's device
    /// (P-521), inserted, checked and chained by the provider on both copies, and counted when the
    /// partner's connection has its notice. Then `select` on `tallies_v_me` over every connection.
    func runChits(against base: URL, inProcess: Bool) async throws {
        let budget = count.map { "\($0) chits per pair" } ?? "\(duration) s per phase"
        print("purse bench chips --chits: \(connections) pairs (\(connections * 2) connections), \(depth) in flight each, \(budget), provider \(base.absoluteString)")
        print(inProcess ? "cpu/op: this process, provider, clients and their signing together" : "cpu/op: this process, the clients and their signing")
        let run = String(UUID().uuidString.prefix(8)).lowercased()
        let pairs = try await withThrowingTaskGroup(of: Pair.self) { group in
            for index in 0..<connections {
                group.addTask {
                    let payer = try await connectSession("bench-\(run)-\(index)-a")
                    let payee = try await connectSession("bench-\(run)-\(index)-b")
                    let (payerKey, payeeKey) = (SigningKey(), SigningKey())
                    try await payer.publish(signingKey: payerKey)
                    try await payee.publish(signingKey: payeeKey)
                    let terms: JSONValue = ["limit": 1_000_000, "call": 30]
                    let draft = try await payer.createTally(type: .foil, holdTerms: terms, partTerms: terms)
                    try await payee.accept(try await payer.invite(draft.seq))
                    _ = try await payer.offer(draft.seq, signingKey: payerKey)
                    guard let offered = try await payee.tallies().first(where: { $0.uuid == draft.uuid }) else { throw BenchmarkError("no offer arrived") }
                    let opened = try await payee.acceptOffer(offered.seq, signingKey: payeeKey)
                    let sides = [
                        PairSide(session: payer, key: payerKey, tally: try await payer.tally(draft.seq), notices: NoticeWaiter(payer.connection)),
                        PairSide(session: payee, key: payeeKey, tally: opened, notices: NoticeWaiter(payee.connection)),
                    ]
                    return Pair(index: index, sides: sides)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }.sorted { $0.index < $1.index }
        }
        let (swiftCrypto, purse, table) = try Self.compareVerifiers(seconds: 1)
        BenchReport.figure("chips.p521_verify_swift_crypto", swiftCrypto, unit: "/s", line: "")
        BenchReport.figure("chips.p521_verify_purse", purse, unit: "/s",
                           line: String(format: "P-521 verifications on one thread: swift-crypto %.0f /s, PurseP521 %.0f /s (×%.1f; a key's table %.2f ms, once)",
                                        swiftCrypto, purse, purse / swiftCrypto, table * 1000))
        // Each device signs its chits before the phase, on its own CPU; a side that runs out signs
        // the rest as it goes.
        let perSide = count ?? max(1, min(2_000, duration * 3_000 / (2 * pairs.count)))
        let minted = try await Self.mintChits(pairs, perSide: perSide)
        var cpu = ProcessCPU.now()
        let pay: @Sendable (Pair) async throws -> Bool = { pair in
            var from = Bool.random() ? 0 : 1
            var chit = minted[pair.index][from].next()
            if chit == nil {
                from = 1 - from
                chit = minted[pair.index][from].next()
            }
            let (payer, payee) = (pair.sides[from], pair.sides[1 - from])
            let signed = try chit ?? Self.signedChit(by: payer)
            let notified = payee.notices.expect(signed.uuid)
            let row = try await payer.session.insert(ChipsSession.chitsView, fields: signed.fields)
            guard row["status"] == "good" else { return false }
            return await notified.value
        }
        let chitsRate = await pairPhase("signed chit, insert → partner notified, \(connections) pairs", pairs, cpu: &cpu, operation: pay)
        let sessions = pairs.flatMap { $0.sides.map(\.session) }
        let selects = await sessionPhase("select tallies_v_me, \(sessions.count) connections", sessions, cpu: &cpu) { session in
            try await session.select("mychips.tallies_v_me").count == 1
        }
        let line = String(format: "chits: %.0f /s (target ≥ 2,000: %@); tally selects: %.0f /s (target ≥ 10,000: %@)",
                          chitsRate, chitsRate >= 2_000 ? "met" : "not met", selects, selects >= 10_000 ? "met" : "not met")
        BenchReport.figure("chips.chits", chitsRate, unit: "/s", target: "≥ 2,000 /s", met: chitsRate >= 2_000, line: line)
        BenchReport.figure("chips.tally_selects", selects, unit: "/s", target: "≥ 10,000 /s", met: selects >= 10_000, line: "")
        // Both copies of every tally still mirror each other.
        for pair in pairs {
            let (a, b) = (try await pair.sides[0].session.tally(pair.sides[0].tally.seq), try await pair.sides[1].session.tally(pair.sides[1].tally.seq))
            guard a.net == -b.net, a.chainDigest == b.chainDigest else { throw BenchmarkError("pair \(pair.index): the two copies disagree") }
        }
        for side in pairs.flatMap(\.sides) { await side.session.connection.disconnect() }
    }

    /// A payment chit signed on the payer's device: its insert fields and its id.
    struct SignedChit: Sendable {
        var uuid: String
        var fields: [String: JSONValue]
    }

    static func signedChit(by payer: PairSide) throws -> SignedChit {
        let core = ChitCore(tally: payer.tally.uuid, by: payer.tally.type, type: .tran, uuid: ChitID(UUID().uuidString.lowercased()),
                            date: Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)), units: Int64.random(in: 1...5_000), reference: nil, memo: "bench")
        let fields: [String: JSONValue] = [
            "chit_seq": .int(payer.tally.seq), "chit_uuid": .string(core.uuid.rawValue), "issuer": .string(core.by.rawValue), "units": .int(core.units ?? 0),
            "memo": "bench", "chit_date": .string(JavaScriptDate.string(epochMillis: core.date)), "request": "good",
            "signature": .string(try payer.key.sign(core.signingText)),
        ]
        return SignedChit(uuid: core.uuid.rawValue, fields: fields)
    }

    /// `perSide` chits signed by each side of each pair, by pair index and side.
    static func mintChits(_ pairs: [Pair], perSide: Int) async throws -> [[Minted<SignedChit>]] {
        let sides = try await withThrowingTaskGroup(of: (Int, Int, Minted<SignedChit>).self) { group in
            for pair in pairs {
                for side in 0..<2 {
                    group.addTask {
                        let chits = try (0..<perSide).map { _ in try signedChit(by: pair.sides[side]) }
                        return (pair.index, side, Minted(chits))
                    }
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0 * 2 + $1.1] = $1.2 }
        }
        return pairs.map { pair in (0..<2).map { sides[pair.index * 2 + $0]! } }
    }

    /// P-521 verifications per second on one thread, swift-crypto's and PurseP521's, over the
    /// same 64 signatures for `seconds` each: the side-by-side figure behind the provider's choice.
    static func compareVerifiers(seconds: Double) throws -> (swiftCrypto: Double, purse: Double, table: Double) {
        let key = P521.Signing.PrivateKey()
        _ = P521VerifyingKey(rawRepresentation: P521.Signing.PrivateKey().publicKey.rawRepresentation)  // the generator's table
        let clock = ContinuousClock(), made = clock.now
        guard let verifier = P521VerifyingKey(rawRepresentation: key.publicKey.rawRepresentation) else { throw BenchmarkError("PurseP521 refused a key") }
        let table = (clock.now - made).seconds
        let signed = try (0..<64).map { index in
            let digest = SHA384.hash(data: Data("chit \(index)".utf8))
            return (digest, try key.signature(for: digest))
        }
        let raw = signed.map { (Array($0.0), Array($0.1.rawRepresentation)) }
        func rate(_ verify: (Int) -> Bool) throws -> Double {
            let start = clock.now
            var done = 0
            while clock.now - start < .milliseconds(Int64(seconds * 1000)) {
                guard verify(done % signed.count) else { throw BenchmarkError("a valid signature did not verify") }
                done += 1
            }
            return Double(done) / (clock.now - start).seconds
        }
        let swiftCrypto = try rate { key.publicKey.isValidSignature(signed[$0].1, for: signed[$0].0) }
        let purse = try rate { verifier.isValidSignature(rawRepresentation: raw[$0].1, digest: raw[$0].0) }
        return (swiftCrypto, purse, table)
    }

    func pairPhase(_ name: String, _ pairs: [Pair], cpu: inout Double, operation: @escaping @Sendable (Pair) async throws -> Bool) async -> Double {
        let recorder = LatencyRecorder()
        let workers = pairs.flatMap { Array(repeating: $0, count: depth) }
        let elapsed = await closedLoop(workers, count: count, duration: duration, recorder: recorder, operation)
        let summary = recorder.summary(over: elapsed)
        reportPhase(name, summary, cpuSince: &cpu)
        return summary.perSecond
    }

    func sessionPhase(_ name: String, _ sessions: [ChipsSession], cpu: inout Double, operation: @escaping @Sendable (ChipsSession) async throws -> Bool) async -> Double {
        let recorder = LatencyRecorder()
        let workers = sessions.flatMap { Array(repeating: $0, count: depth) }
        let elapsed = await closedLoop(workers, count: count, duration: duration, recorder: recorder, operation)
        let summary = recorder.summary(over: elapsed)
        reportPhase(name, summary, cpuSince: &cpu)
        return summary.perSecond
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

/// Waits for the provider's notice of a chit on one connection: a reader task hands each chit
/// notice to whoever expects its uuid (or keeps it until they do).
final class NoticeWaiter: Sendable {
    private let state = Mutex<(waiting: [String: CheckedContinuation<Bool, Never>], arrived: Set<String>)>(([:], []))

    init(_ connection: ChipsConnection) {
        Task { [weak self] in
            for await notice in await connection.notifications() {
                guard notice.data["target"] == "chit", case .string(let uuid)? = notice.data["uuid"] else { continue }
                self?.arrived(uuid)
            }
        }
    }

    private func arrived(_ uuid: String) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            if let waiter = state.waiting.removeValue(forKey: uuid) { return waiter }
            state.arrived.insert(uuid)
            return nil
        }
        waiter?.resume(returning: true)
    }

    /// A task that ends when the notice for `uuid` has come (false after 30 s).
    func expect(_ uuid: String) -> Task<Bool, Never> {
        Task {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.arrived.remove(uuid) != nil { return true }
                    state.waiting[uuid] = continuation
                    return false
                }
                if ready { continuation.resume(returning: true) }
                Task {
                    try? await Task.sleep(for: .seconds(30))
                    let late = self.state.withLock { $0.waiting.removeValue(forKey: uuid) }
                    late?.resume(returning: false)
                }
            }
        }
    }
}

import ChipsProtocol
import Foundation
import HTTPTypes
import Hummingbird
import MyCHIPs
import PurseDatabase
import PurseFormats
import PurseKit
import PurseTestSupport
import PurseServer
import SQLKit
import Testing

/// Two users of one provider, each with a connected client and a published signing key.
struct WalletPair {
    let alice: ChipsSession
    let bob: ChipsSession
    let aliceKey: SigningKey
    let bobKey: SigningKey

    static func make(_ provider: ChipsProvider, alice: String = "alice", bob: String = "bob", timeout: Duration = .seconds(20)) async throws -> WalletPair {
        let a = provider.client(timeout: timeout)
        try await a.connection.connect(ticket: try await provider.ticket(for: alice, name: "Anders"))
        let b = provider.client(timeout: timeout)
        try await b.connection.connect(ticket: try await provider.ticket(for: bob, name: "Baker"))
        let pair = WalletPair(alice: a, bob: b, aliceKey: SigningKey(), bobKey: SigningKey())
        try await a.publish(signingKey: pair.aliceKey)
        try await b.publish(signingKey: pair.bobKey)
        return pair
    }

    /// An open tally: Alice the stock (vendor), Bob the foil; each grants the other `limit` CHIPs.
    func openTally(limit: Int64 = 100) async throws -> (alice: ChipsTally, bob: ChipsTally) {
        let draft = try await alice.createTally(type: .stock, holdTerms: ["limit": .int(limit), "call": 30], partTerms: ["limit": .int(limit), "call": 30])
        try await bob.accept(try await alice.invite(draft.seq))
        _ = try await alice.offer(draft.seq, signingKey: aliceKey)
        let offered = try #require(try await bob.tallies().first { $0.uuid == draft.uuid })
        let opened = try await bob.acceptOffer(offered.seq, signingKey: bobKey)
        return (try await alice.tally(draft.seq), opened)
    }

    func done() async {
        await connectionDone(alice)
        await connectionDone(bob)
    }
}

func expectRefusal(_ code: String, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("accepted; expected \(code). \(comment?.description ?? "")", sourceLocation: sourceLocation)
    } catch let error as ChipsError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(error)", sourceLocation: sourceLocation)
    }
}

@Suite("MyCHIPs tallies and chits")
struct ChipsWalletTests {
    @Test("two users: ticket → invite → counter → accept → open → pay → request → accept → refuse → balance sheet → close", arguments: TestEngines.all)
    func journey(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let pair = try await WalletPair.make(provider)
            let (alice, bob) = (pair.alice, pair.bob)
            let bobNotices = await bob.connection.notifications()
            var bobIterator = bobNotices.makeAsyncIterator()

            // Alice drafts a tally and invites Bob; Bob presents the ticket.
            let draft = try await alice.createTally(type: .stock, holdTerms: ["limit": 50, "call": 30], partTerms: ["limit": 20], comment: "Garden work")
            #expect(draft.state == "draft")
            let invite = try await alice.invite(draft.seq)
            guard case .invite(let parsed) = try ChipsLink.parse(invite.link) else { Issue.record("the invite link does not parse"); return }
            try await bob.accept(parsed)
            #expect(try await alice.tally(draft.seq).state == "P.draft")
            await expectRefusal("!mychips.tokens:TNF", "a ticket is single use") { try await bob.accept(parsed) }

            // Alice offers; Bob sees the offer, counters with more credit for himself; Alice accepts.
            #expect(try await alice.offer(draft.seq, signingKey: pair.aliceKey).state == "H.offer")
            var notice = await bobIterator.next()
            while let seen = notice, seen.data["target"] != "tally" { notice = await bobIterator.next() }
            #expect(notice?.data["state"] == "P.offer" && notice?.data["action"] == true)
            var bobTally = try #require(try await bob.tallies().first { $0.uuid == draft.uuid })
            #expect(bobTally.state == "P.offer" && bobTally.type == .foil && bobTally.signatures.partner)
            bobTally = try await bob.offer(bobTally.seq, changes: ["hold_terms": ["limit": 10], "part_terms": ["limit": 40, "call": 30]],
                                           signingKey: pair.bobKey)
            #expect(bobTally.state == "H.offer")
            var aliceTally = try await alice.tally(draft.seq)
            #expect(aliceTally.state == "P.offer" && aliceTally.creditFromPartner == 10_000 && aliceTally.creditToPartner == 40_000)
            aliceTally = try await alice.acceptOffer(draft.seq, signingKey: pair.aliceKey)
            bobTally = try await bob.tally(bobTally.seq)
            #expect(aliceTally.state == "open" && bobTally.state == "open")
            #expect(aliceTally.digest == aliceTally.core.digest && aliceTally.digest == bobTally.digest)
            #expect(aliceTally.signatures == (true, true) && bobTally.signatures == (true, true))

            // Bob pays Alice 12.5 CHIPs; Alice asks Bob for 3 more, he pays; she asks for 1, he refuses.
            let payment = try await bob.pay(bobTally.seq, units: 12_500, memo: "Hedges", signingKey: pair.bobKey)
            #expect(payment.state == "L.good" && payment.net == -12_500 && payment.chainIndex == 1)
            let invoice = try await alice.request(aliceTally.seq, units: 3_000, memo: "Mulch", reference: ["invoice": "A-7"])
            #expect(invoice.state == "A.pend")
            let asked = try #require(try await bob.chits(tally: bobTally.seq).first { $0.uuid == invoice.uuid })
            #expect(asked.state == "L.pend" && asked.needsAction)
            let paid = try await bob.acceptRequest(asked, signingKey: pair.bobKey)
            #expect(paid.state == "L.good" && paid.chainIndex == 2)
            let small = try await alice.request(aliceTally.seq, units: 1_000, memo: "Tip")
            let refused = try await bob.refuseRequest(try #require(try await bob.chits(tally: bobTally.seq).first { $0.uuid == small.uuid }))
            #expect(refused.status == .void)

            aliceTally = try await alice.tally(aliceTally.seq)
            bobTally = try await bob.tally(bobTally.seq)
            #expect(aliceTally.net == 15_500 && bobTally.net == -15_500 && aliceTally.netPending == 15_500)
            #expect(aliceTally.chits == 2)
            let aliceChain = try await alice.verifyChain(aliceTally.seq)
            let bobChain = try await bob.verifyChain(bobTally.seq)
            #expect(aliceChain.links == 2 && aliceChain.unsignedChits.isEmpty && aliceChain.checksum == bobChain.checksum)

            let sheet = try await alice.balanceSheet()
            #expect(sheet.totalAssets == 15_500 && sheet.net == 15_500 && sheet.assets.first?.partner == "Baker")
            #expect(try await bob.balanceSheet().totalLiabilities == -15_500)

            // The provider draws the same balance sheet, for the signed-in user only.
            let svg = try await alice.balanceSheetSVG()
            #expect(svg.hasPrefix("<svg") && svg.contains("Baker") && svg == BalanceSheetChart(sheet).svg())
            let anonymous = try await LiveHTTPClient(base: URL(string: "http://127.0.0.1:\(provider.port)")!).execute(uri: "/chips/balance.svg", method: .get)
            #expect(anonymous.status == .unauthorized)

            // Bob asks to close: the tally closes once the balance is zero.
            _ = try await bob.close(bobTally.seq, signingKey: pair.bobKey)
            #expect(try await alice.tally(aliceTally.seq).state == "C.open")
            await expectRefusal("!mychips.chits:CLS", "a closing tally takes no new debt") {
                _ = try await bob.pay(bobTally.seq, units: 1, signingKey: pair.bobKey)
            }
            _ = try await alice.pay(aliceTally.seq, units: 15_500, memo: "Settled", signingKey: pair.aliceKey)
            #expect(try await alice.tally(aliceTally.seq).state == "close")
            #expect(try await bob.tally(bobTally.seq).state == "close")
            await expectRefusal("!mychips.chits:LIT", "a closed tally takes no chits") {
                _ = try await bob.pay(bobTally.seq, units: 1, signingKey: pair.bobKey)
            }
            #expect(try await bob.verifyChain(bobTally.seq).links == 4)
            await pair.done()
        }
    }

    @Test("tally state transitions and their refusals", arguments: TestEngines.all)
    func transitions(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let pair = try await WalletPair.make(provider)
            let (alice, bob) = (pair.alice, pair.bob)
            let draft = try await alice.createTally(partTerms: ["limit": 5])
            await expectRefusal("!mychips.tallies:IST", "no partner yet") { _ = try await alice.offer(draft.seq, signingKey: pair.aliceKey) }
            await expectRefusal("!mychips.tallies:IST", "a draft cannot open") {
                _ = try await alice.update(ChipsSession.talliesView, fields: ["request": "open"], where: ["tally_seq": .int(draft.seq)])
            }
            await expectRefusal("!mychips.tallies:TRM") {
                _ = try await alice.update(ChipsSession.talliesView, fields: ["hold_terms": ["limit": -3]], where: ["tally_seq": .int(draft.seq)])
            }
            await expectRefusal("!mychips.tallies:TCM") {
                _ = try await alice.update(ChipsSession.talliesView, fields: ["contract": ["rid": "nope"]], where: ["tally_seq": .int(draft.seq)])
            }
            try await bob.accept(try await alice.invite(draft.seq))
            await expectRefusal("!mychips.tallies:IST", "the ends are fixed once joined") {
                _ = try await alice.update(ChipsSession.talliesView, fields: ["tally_type": "foil"], where: ["tally_seq": .int(draft.seq)])
            }
            // A signature by the wrong key, or over another record, is refused.
            await expectRefusal("!mychips.tallies:SIG") {
                let tally = try await alice.tally(draft.seq)
                _ = try await alice.update(ChipsSession.talliesView, fields: ["request": "offer", "hold_sig": .string(try pair.bobKey.sign(tally.core.signingText))],
                                           where: ["tally_seq": .int(draft.seq)])
            }
            _ = try await alice.offer(draft.seq, signingKey: pair.aliceKey)
            let bobSeq = try #require(try await bob.tallies().first { $0.uuid == draft.uuid }).seq
            await expectRefusal("!mychips.tallies:SIG", "an acceptance signed over a changed record") {
                let tally = try await bob.tally(bobSeq)
                var other = tally.core
                other.memo = "something else"
                _ = try await bob.update(ChipsSession.talliesView, fields: ["request": "open", "hold_sig": .string(try pair.bobKey.sign(other.signingText))],
                                         where: ["tally_seq": .int(bobSeq)])
            }
            // Alice takes her offer back to edit it: Bob's copy is withdrawn; Alice offers again; Bob rejects.
            #expect(try await alice.update(ChipsSession.talliesView, fields: ["request": "draft"], where: ["tally_seq": .int(draft.seq)])["state"] == "P.draft")
            #expect(try await bob.tally(bobSeq).state == "void")
            _ = try await alice.offer(draft.seq, changes: ["comment": "second try"], signingKey: pair.aliceKey)
            #expect(try await bob.tally(bobSeq).state == "P.offer")
            #expect(try await bob.reject(bobSeq).state == "void")
            #expect(try await alice.tally(draft.seq).state == "void")
            await expectRefusal("!mychips.tallies:IST", "a void tally is done") { _ = try await alice.offer(draft.seq, signingKey: pair.aliceKey) }
            await expectRefusal("!mychips.chits:LIT", "no chits before a tally opens") {
                _ = try await alice.pay(draft.seq, units: 1, signingKey: pair.aliceKey)
            }
            await pair.done()
        }
    }

    @Test("a chit with a bad signature, beyond the limit, breaking the chain, or resent: refused, balances unchanged", arguments: TestEngines.all)
    func chitRefusals(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let pair = try await WalletPair.make(provider)
            let (alice, bob) = (pair.alice, pair.bob)
            let (aliceTally, bobTally) = try await pair.openTally(limit: 10)

            func signed(_ key: SigningKey, units: Int64, uuid: String = UUID().uuidString.lowercased(), extra: [String: JSONValue] = [:]) throws -> [String: JSONValue] {
                let core = ChitCore(tally: bobTally.uuid, by: .foil, type: .tran, uuid: ChitID(uuid), date: 1_764_000_000_123, units: units, reference: nil, memo: nil)
                var fields: [String: JSONValue] = ["chit_seq": .int(bobTally.seq), "chit_uuid": .string(uuid), "units": .int(units), "issuer": "foil",
                                                   "chit_date": "2025-11-24T16:00:00.123Z", "request": "good", "signature": .string(try key.sign(core.signingText))]
                for (key, value) in extra { fields[key] = value }
                return fields
            }
            await expectRefusal("!mychips.chits:SIG", "signed by the partner's key") { _ = try await bob.insert(ChipsSession.chitsView, fields: try signed(pair.aliceKey, units: 1_000)) }
            await expectRefusal("!mychips.chits:SIG", "units changed after signing") {
                var fields = try signed(pair.bobKey, units: 1_000)
                fields["units"] = 2_000
                _ = try await bob.insert(ChipsSession.chitsView, fields: fields)
            }
            await expectRefusal("!mychips.chits:MIS") {
                var fields = try signed(pair.bobKey, units: 1_000)
                fields["signature"] = nil
                _ = try await bob.insert(ChipsSession.chitsView, fields: fields)
            }
            await expectRefusal("!mychips.chits:LMT", "beyond the 10 CHIPs Alice lends Bob") { _ = try await bob.pay(bobTally.seq, units: 10_001, signingKey: pair.bobKey) }
            await expectRefusal("!mychips.chits:CHN", "claims a link the chain does not end at") {
                _ = try await bob.insert(ChipsSession.chitsView, fields: try signed(pair.bobKey, units: 1_000, extra: ["chain_prev": "AAAA", "chain_idx": 1]))
            }
            await expectRefusal("!mychips.chits:SIG", "Bob cannot sign a chit as Alice") {
                var fields = try signed(pair.bobKey, units: 1_000)
                fields["issuer"] = "stock"
                _ = try await bob.insert(ChipsSession.chitsView, fields: fields)
            }
            #expect(try await bob.tally(bobTally.seq).net == 0)
            #expect(try await alice.tally(aliceTally.seq).net == 0)
            #expect(try await bob.chits(tally: bobTally.seq).isEmpty)

            // Up to the limit is fine; the same chit sent twice is stored once; its id reused for another is refused.
            let uuid = UUID().uuidString.lowercased()
            let fields = try signed(pair.bobKey, units: 10_000, uuid: uuid)
            let first = try await bob.insert(ChipsSession.chitsView, fields: fields)
            let again = try await bob.insert(ChipsSession.chitsView, fields: fields)
            #expect(first["chit_idx"] == again["chit_idx"] && first["chain_dgst"] == again["chain_dgst"])
            await expectRefusal("!mychips.chits:CUU") { _ = try await bob.insert(ChipsSession.chitsView, fields: try signed(pair.bobKey, units: 5, uuid: uuid)) }
            await expectRefusal("!mychips.chits:LMT", "at the limit, one more milliCHIP is refused") { _ = try await bob.pay(bobTally.seq, units: 1, signingKey: pair.bobKey) }
            // Alice pays back the 10 she is owed and 10 more, as far as Bob's credit to her goes.
            await expectRefusal("!mychips.chits:LMT") { _ = try await alice.pay(aliceTally.seq, units: 20_001, signingKey: pair.aliceKey) }
            _ = try await alice.pay(aliceTally.seq, units: 20_000, signingKey: pair.aliceKey)
            #expect(try await alice.tally(aliceTally.seq).net == -10_000)
            #expect(try await bob.tally(bobTally.seq).net == 10_000)
            #expect(try await bob.verifyChain(bobTally.seq).links == 2)
            await pair.done()
        }
    }

    /// A chit of Int64.max milliCHIPs after a small payment used to wrap the payer's balance past
    /// the limit check (a claim of 9.2 quadrillion CHIPs), and after a payment of 1 made the balance
    /// exactly Int64.min, whose negation trapped the server. Both are refused as PostgreSQL refuses
    /// bigint overflow, balances stay as they were, and the provider keeps serving.
    @Test("chits and requests at Int64's end: refused as bigint out of range, nothing minted, the provider alive", arguments: TestEngines.all)
    func unitsAtTheEnds(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let pair = try await WalletPair.make(provider)
            let (alice, bob) = (pair.alice, pair.bob)
            let (aliceTally, bobTally) = try await pair.openTally(limit: 10)
            _ = try await bob.pay(bobTally.seq, units: 2, signingKey: pair.bobKey)
            await expectRefusal("22003", "-2 - Int64.max leaves bigint") { _ = try await bob.pay(bobTally.seq, units: .max, signingKey: pair.bobKey) }
            await expectRefusal("!mychips.chits:LMT", "a large payment within bigint meets the limit") { _ = try await bob.pay(bobTally.seq, units: .max - 2, signingKey: pair.bobKey) }
            // Alice pays back 1: Bob's balance is -1, and -1 - Int64.max is exactly Int64.min.
            _ = try await alice.pay(aliceTally.seq, units: 1, signingKey: pair.aliceKey)
            await expectRefusal("22003", "Int64.min has no negation") { _ = try await bob.pay(bobTally.seq, units: .max, signingKey: pair.bobKey) }
            // Requests: pending amounts are checked sums too, and so is the balance with them (net_p).
            await expectRefusal("22003", "1 + Int64.max pending") { _ = try await alice.request(aliceTally.seq, units: .max) }
            let pending = try await alice.request(aliceTally.seq, units: .max - 1)
            await expectRefusal("22003", "a second request past Int64.max") { _ = try await alice.request(aliceTally.seq, units: 2) }
            await expectRefusal("22003", "Bob's payment would take his balance with the request past Int64.min") {
                _ = try await bob.pay(bobTally.seq, units: 1_000, signingKey: pair.bobKey)
            }
            _ = try await alice.refuseRequest(pending)
            #expect(try await bob.tally(bobTally.seq).net == -1)
            #expect(try await alice.tally(aliceTally.seq).net == 1)
            #expect(try await bob.verifyChain(bobTally.seq).links == 2)
            // Still serving: an ordinary payment goes through.
            _ = try await bob.pay(bobTally.seq, units: 1_000, signingKey: pair.bobKey)
            #expect(try await bob.tally(bobTally.seq).net == -1_001)
            await pair.done()
        }
    }

    @Test("notices reach a disconnected app as APNs pushes (through the provider's APNs sandbox); a connected app gets them on the socket only")
    func pushes() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            let (alice, bob) = (pair.alice, pair.bob)
            let token = String(repeating: "a1", count: 32)
            #expect(try await alice.registerForPushes(deviceToken: token))
            let (aliceTally, bobTally) = try await pair.openTally(limit: 50)
            await alice.connection.disconnect()
            let database = try #require(provider.environment?.database)
            #expect(try await eventually(10) {
                try await database.read { db in try await db.raw("SELECT 1 AS x FROM chips_presence WHERE username = 'alice'").all().isEmpty }
            })
            _ = try await bob.pay(bobTally.seq, units: 2_500, memo: "Seeds", signingKey: pair.bobKey)
            let http = LiveHTTPClient(base: URL(string: "http://127.0.0.1:\(provider.port)")!)
            var payloads: [JSONValue] = []
            #expect(try await eventually(30) {
                let response = try await http.execute(uri: "/sandbox/chips/apns/deliveries?device_token=\(token)", method: .get)
                payloads = (try StrictJSON.parse(Array(response.body.readableBytesView)))["data"]?.arrayValue ?? []
                return payloads.contains { ($0["payload"]?.stringValue ?? "").contains("Payment received") }
            })
            let received = try #require(payloads.first { ($0["payload"]?.stringValue ?? "").contains("Payment received") })
            let payload = try StrictJSON.parse(Array((received["payload"]?.stringValue ?? "").utf8))
            #expect(payload["aps"]?["alert"]?["body"] == "You received 2.5 CHIP: Seeds" && payload["target"] == "chit")
            #expect(ChipsRouter.route(ChipsNotification(channel: nil, data: payload)) == .chits(seq: aliceTally.seq), "the app opens the tally's chits")
            #expect(received["topic"] == "org.mychips.chark")

            // Connected again: the next payment is a websocket notice, and its push is skipped.
            try await alice.connection.connect()
            let second = try await bob.pay(bobTally.seq, units: 1_000, signingKey: pair.bobKey)
            let pattern = "%\(second.uuid)%"
            #expect(try await eventually(30) {
                try await database.read { db in
                    try await db.raw("SELECT status FROM chips_pushes WHERE data LIKE \(bind: pattern)").all()
                        .map { try $0.decode(column: "status", as: String.self) } == ["skipped"]
                }
            })
            await pair.done()
        }
    }

    @Test("a chit signed offline and passed as a link waits in the payee's outbox and is delivered, once, when connected")
    func handedChit() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            let (aliceTally, bobTally) = try await pair.openTally(limit: 20)
            let signed = try await pair.bob.signChit(bobTally.seq, units: 4_200, memo: "Coffee ☕", signingKey: pair.bobKey)
            guard case .chit(let scanned) = ChipsRouter.route(signed.link) else { Issue.record("the chit link does not route"); return }
            #expect(scanned == signed)

            await pair.alice.connection.disconnect()
            let outbox = ChipsOutbox(preferences: InMemoryPreferences())
            await outbox.enqueue(scanned)
            await outbox.enqueue(scanned)
            let offline = await outbox.flush(pair.alice)
            let kept = await outbox.pending
            #expect(offline.isEmpty && kept.count == 1, "offline: kept")
            try await pair.alice.connection.connect()
            let delivered = await outbox.flush(pair.alice)
            let left = await outbox.pending
            #expect(delivered.count == 1 && delivered.first?.state == "A.good" && left.isEmpty)
            #expect(try await pair.alice.tally(aliceTally.seq).net == 4_200)
            // Delivered again (by Bob himself, say): stored once.
            let again = try await pair.bob.deliver(signed)
            #expect(again.index == 1)
            #expect(try await pair.bob.tally(bobTally.seq).net == -4_200)
            // Alice cannot pass off a chit of hers as Bob's.
            var forged = signed
            forged.core.uuid = ChitID(UUID().uuidString.lowercased())
            await expectRefusal("!mychips.chits:SIG") { _ = try await pair.alice.deliver(forged) }
            await pair.done()
        }
    }

    @Test("100 concurrent payments against a 10-CHIP limit: exactly the ten that fit are taken", arguments: TestEngines.all)
    func concurrentLimit(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            // The hundred queue on one tally's rows, so the last answers after the other 99: this
            // checks the limit, not latency, and gives each request 30 s on a busy machine.
            let pair = try await WalletPair.make(provider, timeout: .seconds(30))
            let (_, bobTally) = try await pair.openTally(limit: 10)
            let bob = pair.bob
            let key = pair.bobKey
            let accepted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        do { _ = try await bob.pay(bobTally.seq, units: 1_000, signingKey: key); return true } catch let error as ChipsError where error.code == "!mychips.chits:LMT" { return false }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(accepted == 10)
            let tally = try await bob.tally(bobTally.seq)
            #expect(tally.net == -10_000 && tally.chits == 10)
            #expect(try await bob.verifyChain(bobTally.seq).links == 10)
            await pair.done()
        }
    }
}

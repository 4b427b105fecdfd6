import ChipsProtocol
import Foundation
import HTTPTypes
import MyCHIPs
import PurseFormats
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import PurseTestSupport
import Synchronization
import Testing

@MainActor
@Suite("MyCHIPs wallet pages")
struct ChipsWalletViewModelTests {
    @Test("the scanner and deep links route each link kind; notices route to their page")
    func routing() throws {
        let chad = ChipsAddress(cuid: "ann", agent: "agent1")
        #expect(ChipsRouter.route(TallyInvite(token: "t0k", chad: chad).link) == .tallyInvite(TallyInvite(token: "t0k", chad: chad)))
        #expect(ChipsRouter.route("mychips://pay?chad=ann:agent1&units=2500&memo=Tea") == .pay(PaymentRequest(chad: chad, units: 2500, memo: "Tea")))
        if case .connect = ChipsRouter.route("https://mychips.org/ticket?host=example.com&port=443&token=abc&user=ann") {} else { Issue.record("a ticket routes to connect") }
        if case .invalid = ChipsRouter.route("https://example.com/pay?chad=x:y") {} else { Issue.record("a foreign link is refused") }
        #expect(ChipsRouter.route(ChipsNotification(channel: "mu_p1000", data: ["target": "tally", "sequence": 3, "state": "P.offer", "action": true])) == .tally(seq: 3))
        #expect(ChipsRouter.route(ChipsNotification(channel: "mu_p1000", data: ["target": "chit", "sequence": 3, "uuid": "u1", "action": true, "state": "L.pend"]))
                == .answerRequest(seq: 3, chit: "u1"))
        #expect(ChipsRouter.route(ChipsNotification(channel: "mu_p1000", data: ["target": "chit", "sequence": 3, "uuid": "u2", "action": false, "state": "A.good"]))
                == .chits(seq: 3))
        #expect(ChipsRouter.route(ChipsNotification(channel: "mu_p1000", data: ["target": "users"])) == nil)
    }

    @Test("the pages over a live provider: tally edit actions by state, pay within the credit, history, home's chart selection")
    func pages() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            let (aliceKey, bobKey) = (pair.aliceKey, pair.bobKey)
            let settings = WalletSettingsViewModel(session: pair.alice, preferences: InMemoryPreferences())
            settings.defaultCredit = 25
            try await settings.loadContracts()
            #expect(settings.contracts.count == 1)
            let draft = try await settings.newTally()
            let aliceEdit = TallyEditViewModel(session: pair.alice, seq: draft.seq, signer: { aliceKey })
            await aliceEdit.load()
            #expect(aliceEdit.actions == [.invite, .reject] && aliceEdit.lend == "25" && aliceEdit.contract?["title"] == "Tally Agreement")
            await aliceEdit.perform(.invite)
            guard case .tallyInvite(let invite)? = aliceEdit.invite.map({ ChipsRouter.route($0.link) }) else { Issue.record("no invite"); return }
            try await pair.bob.accept(invite)
            await aliceEdit.load()
            #expect(aliceEdit.actions == [.offer, .reject])
            aliceEdit.borrow = "5"
            await aliceEdit.perform(.offer)
            #expect(aliceEdit.tally?.state == "H.offer" && aliceEdit.error == nil)

            let bobSeq = try #require(try await pair.bob.tallies().first { $0.uuid == draft.uuid }).seq
            let bobEdit = TallyEditViewModel(session: pair.bob, seq: bobSeq, signer: { bobKey })
            await bobEdit.load()
            #expect(bobEdit.actions == [.accept, .counter, .reject] && bobEdit.lend == "5" && bobEdit.borrow == "25")
            await bobEdit.perform(.accept)
            #expect(bobEdit.tally?.state == "open" && bobEdit.actions == [.close])
            // On an open tally the trading variables go by a signed settings chit.
            bobEdit.target = "2"
            bobEdit.bound = "8"
            bobEdit.reward = "0.01"
            await bobEdit.saveTrading()
            #expect(bobEdit.error == nil && bobEdit.tally?.target == 2_000 && bobEdit.tally?.bound == 8_000 && bobEdit.tally?.reward == 0.01)
            #expect(try await pair.bob.chits(tally: bobSeq).first?.core.type == .set)

            // Bob may owe Alice 25 CHIPs: the page says so before signing anything.
            let pay = PayViewModel(session: pair.bob, tally: try #require(bobEdit.tally), signer: { bobKey })
            pay.amount = "25.001"
            if case .success = pay.check { Issue.record("over the limit passed the check") }
            pay.amount = "12.5"
            pay.memo = "Hedges"
            await pay.send()
            #expect(pay.sent?.state == "L.good" && pay.error == nil)

            let history = HistoryViewModel(session: pair.bob)
            await history.load()
            #expect(history.rows.count == 1)
            let signer: ChipsSigner = { bobKey }
            let again = try #require(history.payAgain(history.rows[0], signer: signer))
            #expect(again.amount == "12.5" && again.memo == "Hedges")

            let home = HomeViewModel(session: pair.alice, rate: ChipsExchangeRate(currency: "USD", minorUnitsPerCHIP: 235))
            await home.load()
            #expect(home.rows.count == 1 && home.sheet.net == 12_500 && home.amount(12_500) == "12.5 CHIP ≈ 29.38 USD")
            let bubble = try #require(home.chart.bubbles.first)
            #expect(home.select(x: bubble.x, y: bubble.y) == .tally(seq: draft.seq))

            let request = RequestViewModel(session: pair.alice)
            request.amount = "3"
            request.memo = "Mulch"
            await request.send(on: draft.seq)
            #expect(request.sent?.state == "A.pend")
            let invoice = try await request.invoice()
            #expect(invoice.units == 3_000 && invoice.chad.cuid == "alice")
            let chits = ChitsViewModel(session: pair.bob, seq: bobSeq)
            await chits.load()
            #expect(chits.requests.count == 1 && chits.chain?.links == 2)
            await pair.done()
        }
    }
    /// The answer to a payment is lost with its connection (the provider stored the chit): the
    /// page logs in again and sends the same signed chit, which the provider stores once — one
    /// payment, confirmed, not two.
    @Test("a payment whose answer was lost is sent again as the same chit and paid once")
    func lostPaymentAnswer() async throws {
        try await ChipsProvider.with { provider in
            let losing = AnswerLosingTransport()
            let alice = provider.client()
            try await alice.connection.connect(ticket: try await provider.ticket(for: "alice", name: "Anders"))
            let bob = provider.client(transport: losing)
            try await bob.connection.connect(ticket: try await provider.ticket(for: "bob", name: "Baker"))
            let pair = WalletPair(alice: alice, bob: bob, aliceKey: SigningKey(), bobKey: SigningKey())
            try await alice.publish(signingKey: pair.aliceKey)
            try await bob.publish(signingKey: pair.bobKey)
            let (_, bobTally) = try await pair.openTally(limit: 100)
            let bobKey = pair.bobKey
            let pay = PayViewModel(session: bob, tally: bobTally, signer: { bobKey })
            pay.amount = "12.5"
            pay.memo = "Hedges"
            losing.loseNextAnswer(to: "chits_v_me")
            await pay.send()
            #expect(losing.armed.withLock { $0 } == nil, "the answer was lost")
            #expect(pay.sent?.state == "L.good" && pay.error == nil, "\(pay.error ?? "")")
            let chits = try await bob.chits(tally: bobTally.seq).filter { $0.core.type == .tran }
            #expect(chits.count == 1, "one payment: \(chits.map(\.uuid))")
            #expect(try await bob.tally(bobTally.seq).net == -12_500)
            await pair.done()
        }
    }
}

/// A websocket transport that, when told, swallows the provider's answer to the next request on a
/// view and closes the connection — as when a connection drops after the provider has done the work.
final class AnswerLosingTransport: WebSocketTransport {
    let inner = NIOWebSocketTransport()
    let armed = Mutex<String?>(nil)

    func loseNextAnswer(to view: String) { armed.withLock { $0 = view } }

    func connect(to url: URL, headerFields: HTTPFields) async throws -> any WebSocketConnection {
        LosingConnection(inner: try await inner.connect(to: url, headerFields: headerFields), transport: self)
    }

    final class LosingConnection: WebSocketConnection {
        let inner: any WebSocketConnection
        let transport: AnswerLosingTransport
        /// The id of the request whose answer is to be lost.
        final class Doomed: Sendable { let id = Mutex<Int64?>(nil) }
        let lose = Doomed()
        let messages: AsyncThrowingStream<String, any Error>

        init(inner: any WebSocketConnection, transport: AnswerLosingTransport) {
            self.inner = inner
            self.transport = transport
            let (stream, continuation) = AsyncThrowingStream<String, any Error>.makeStream()
            messages = stream
            let lose = lose
            Task {
                do {
                    for try await text in inner.messages {
                        let id = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["id"] as? Int64
                        if let id, lose.id.withLock({ $0 }) == id {
                            lose.id.withLock { $0 = nil }
                            await inner.close()
                            continue
                        }
                        continuation.yield(text)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
        }

        func send(_ text: String) async throws {
            if let view = transport.armed.withLock({ $0 }), text.contains(view),
               let id = (try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])?["id"] as? Int64 {
                transport.armed.withLock { $0 = nil }
                lose.id.withLock { $0 = id }
            }
            try await inner.send(text)
        }

        func close() async { await inner.close() }
    }
}

@testable import ConnectService
import Foundation
import HTTPTypes
import PurseDatabase
import PurseHTTP
import PurseServer
import PurseTestSupport
import SQLKit
import StripeConnect
import Testing

@Suite("Maly: paid events")
struct PaidEventsTests {
    /// An onboarded host (through the sandbox's hosted page and webhook) and its token.
    func onboardedHost(_ h: ConnectHarness) async throws -> String {
        let (token, service, _) = try await h.host()
        _ = try await service.createConnectAccount()
        let url = try #require(URL(string: try await service.createAccountLink().url))
        _ = try await h.completeOnboarding(at: url)
        _ = try await h.deliverWebhooksAndReadStatus(service)
        return token
    }

    func createEvent(_ h: ConnectHarness, token: String, price: Int = 2_500, capacity: Int? = nil) async throws -> LiveResponse {
        let capacityField = capacity.map { #", "capacity": \#($0)"# } ?? ""
        return try await h.client.json(.post, "/api/events", #"{"title": "Lagos Jazz Night", "startsAt": "2099-12-31T20:00:00Z", "price": \#(price)\#(capacityField)}"#, token: token)
    }

    func buy(_ h: ConnectHarness, event: String, token: String, card: String = "4242 4242 4242 4242", key: String = UUID().uuidString) async throws -> LiveResponse {
        try await h.client.json(.post, "/api/events/\(event)/tickets", #"{"testCard": "\#(card)"}"#, token: token, headers: [.idempotencyKey: key])
    }

    @Test func onlyOnboardedHostsCreateEvents() async throws {
        try await ConnectHarness.withServer { h in
            let (fresh, _, _) = try await h.host()
            let refused = try await createEvent(h, token: fresh)
            #expect(refused.status == .forbidden)
            #expect(refused.object["error"] as? String == "Complete Stripe Connect onboarding before creating paid events")
            let host = try await onboardedHost(h)
            let created = try await createEvent(h, token: host)
            #expect(created.status == .created)
            #expect(created.object["price"] as? Int == 2_500 && created.object["currency"] as? String == "usd")
            let list = try await h.client.json(.get, "/api/events")
            #expect((list.object["events"] as? [[String: Any]])?.count == 1)
            let past = try await h.client.json(.post, "/api/events", #"{"title": "Old", "startsAt": "2001-01-01T00:00:00Z", "price": 2500}"#, token: host)
            #expect(past.status == .badRequest)
        }
    }

    @Test func ticketIsADestinationChargeWithAThreePercentFee() async throws {
        try await ConnectHarness.withServer { h in
            let host = try await onboardedHost(h)
            let event = try #require(try await createEvent(h, token: host).object["id"] as? String)
            let (buyer, _, _) = try await h.host()
            let bought = try await buy(h, event: event, token: buyer, key: "order-1")
            #expect(bought.status == .created, "\(bought.text)")
            let ticket = try #require(bought.object["ticket"] as? [String: Any])
            #expect(ticket["amount"] as? Int == 2_500 && ticket["applicationFee"] as? Int == 75 && ticket["hostShare"] as? Int == 2_425)
            // The same Idempotency-Key is the same ticket, charged once.
            let again = try await buy(h, event: event, token: buyer, key: "order-1")
            #expect(again.text == bought.text)
            let (tickets, sold, audit) = try await h.server.environment.database.read { db in
                (try await db.raw("SELECT COUNT(*) AS n FROM connect_tickets").first()?.decode(column: "n", as: Int.self),
                 try await db.raw("SELECT tickets_sold FROM connect_events").first()?.decode(column: "tickets_sold", as: Int.self),
                 try await h.server.environment.ledger.audit(in: db))
            }
            #expect(tickets == 1 && sold == 1 && audit.isEmpty)
        }
    }

    /// A retry is decided before a seat is taken: the same key with a differently written card is
    /// 422 and holds no seat (a capacity-3 event still sells three), and the exact retry of the
    /// sale that filled a capacity-1 event gets its first 201, not "Sold out".
    @Test func retriesNeitherLeakSeatsNorLoseTheirAnswer() async throws {
        try await ConnectHarness.withServer { h in
            let host = try await onboardedHost(h)
            let three = try #require(try await createEvent(h, token: host, capacity: 3).object["id"] as? String)
            let (buyer, _, _) = try await h.host()
            #expect(try await buy(h, event: three, token: buyer, key: "order-1").status == .created)
            let rewritten = try await buy(h, event: three, token: buyer, card: "4242424242424242", key: "order-1")
            #expect(rewritten.status == .unprocessableContent)
            #expect(try await buy(h, event: three, token: buyer, key: "order-2").status == .created)
            #expect(try await buy(h, event: three, token: buyer, key: "order-3").status == .created)
            #expect(try await buy(h, event: three, token: buyer, key: "order-4").status == .conflict)

            let one = try #require(try await createEvent(h, token: host, capacity: 1).object["id"] as? String)
            let first = try await buy(h, event: one, token: buyer, key: "solo")
            #expect(first.status == .created)
            let retry = try await buy(h, event: one, token: buyer, key: "solo")
            #expect(retry.status == .created && retry.text == first.text && retry.headers[.idempotentReplayed] == "true")
            let (sold, holds, audit) = try await h.server.environment.database.read { db in
                (try await db.raw("SELECT SUM(tickets_sold) AS n FROM connect_events").first()?.decode(column: "n", as: Int.self),
                 try await db.raw("SELECT COUNT(*) AS n FROM connect_seat_holds").first()?.decode(column: "n", as: Int.self),
                 try await h.server.environment.ledger.audit(in: db))
            }
            #expect(sold == 4 && holds == 0 && audit.isEmpty)
        }
    }

    /// Twenty attempts with one key at once: one seat, one ticket, one answer.
    @Test func concurrentAttemptsWithOneKeyTakeOneSeat() async throws {
        try await ConnectHarness.withServer { h in
            let host = try await onboardedHost(h)
            let event = try #require(try await createEvent(h, token: host, capacity: 2).object["id"] as? String)
            let (buyer, _, _) = try await h.host()
            let answers = try await withThrowingTaskGroup(of: String.self, returning: Set<String>.self) { group in
                for _ in 0..<20 { group.addTask { try await buy(h, event: event, token: buyer, key: "same").text } }
                return try await group.reduce(into: []) { $0.insert($1) }
            }
            #expect(answers.count == 1)
            #expect(try await buy(h, event: event, token: buyer, key: "other").status == .created)
            let (sold, tickets) = try await h.server.environment.database.read { db in
                (try await db.raw("SELECT tickets_sold FROM connect_events").first()?.decode(column: "tickets_sold", as: Int.self),
                 try await db.raw("SELECT COUNT(*) AS n FROM connect_tickets").first()?.decode(column: "n", as: Int.self))
            }
            #expect(sold == 2 && tickets == 2)
        }
    }

    @Test func declinedCardsAndSoldOutEventsChangeNothing() async throws {
        try await ConnectHarness.withServer { h in
            let host = try await onboardedHost(h)
            let event = try #require(try await createEvent(h, token: host, capacity: 1).object["id"] as? String)
            let (buyer, _, _) = try await h.host()
            let declined = try await buy(h, event: event, token: buyer, card: "4000 0000 0000 0002")
            #expect(declined.status == HTTPResponse.Status(code: 402))
            #expect(declined.object["error"] as? String == "Your card was declined." && declined.object["code"] as? String == "card_declined")
            #expect(try await buy(h, event: event, token: buyer).status == .created)
            let soldOut = try await buy(h, event: event, token: buyer)
            #expect(soldOut.status == .conflict && soldOut.object["error"] as? String == "Sold out")
            let ledgerCount = try await h.server.environment.database.read { db in
                try await db.raw("SELECT COUNT(*) AS n FROM ledger_transactions WHERE kind = 'connect.ticket'").first()?.decode(column: "n", as: Int.self)
            }
            #expect(ledgerCount == 1)
        }
    }

    @Test func feeRounding() {
        #expect(EventsController.applicationFee(for: 2_500) == 75)
        #expect(EventsController.applicationFee(for: 50) == 2)  // 1.5 rounds half up
        #expect(EventsController.applicationFee(for: 99) == 3)
    }
}

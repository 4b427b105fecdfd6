@testable import ConnectService
import Foundation
import PurseDatabase
import PurseServer
import PurseTestSupport
import Testing

/// Maly's store on each engine: the statements hold the invariants the routes rely on.
@Suite("Maly store contract")
struct ConnectStoreTests {
    let store = ConnectStore()

    func withStore(_ engine: DatabaseEngine, _ body: (ServerEnvironment) async throws -> Void) async throws {
        let connect = try ConnectConfiguration.from(PurseConfiguration())
        let server = try await TestServer.make(engine: engine, modules: [ConnectModule(configuration: connect)]) { $0.runsJobsInBackground = false }
        do {
            try await body(server.environment)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    func user(_ env: ServerEnvironment) async throws -> UserID {
        try await env.accounts.create(email: JSONRequest.freshEmail(), phone: nil, name: nil, passwordHash: "x", now: env.now()).id
    }

    func event(host: UserID, capacity: Int?, startsIn seconds: TimeInterval, _ env: ServerEnvironment) async throws -> EventsController.Event {
        let event = EventsController.Event(id: RandomID.make("pev"), hostId: host.rawValue, title: "Gig", description: nil,
                                           startsAt: env.now().addingTimeInterval(seconds), price: 1_000, currency: "usd",
                                           capacity: capacity, ticketsSold: 0)
        try await env.database.transaction { db in try await store.insertEvent(event, now: env.now(), in: db) }
        return event
    }

    @Test("a full event holds exactly its capacity under 40 parallel buyers; a key holds one seat, for one request",
          arguments: TestEngines.all)
    func seatsHoldUnderConcurrency(engine: DatabaseEngine) async throws {
        try await withStore(engine) { env in
            let host = try await user(env)
            let gig = try await event(host: host, capacity: 3, startsIn: 3_600, env)
            var buyers: [UserID] = []
            for _ in 0..<40 { buyers.append(try await user(env)) }
            let outcomes = try await withThrowingTaskGroup(of: (UserID, ConnectStore.Hold).self, returning: [(UserID, ConnectStore.Hold)].self) { group in
                for buyer in buyers {
                    group.addTask {
                        do {
                            return (buyer, try await env.database.transaction { db in
                                let hold = try await store.holdSeat(buyer: buyer, key: "k", event: gig.id, requestHash: "h", now: env.now(), in: db)
                                // A sold-out hold rolls back with its transaction, as the route's does.
                                if hold == .soldOut { throw CancellationError() }
                                return hold
                            })
                        } catch is CancellationError {
                            return (buyer, .soldOut)
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let holds = outcomes.map(\.1)
            #expect(holds.filter { $0 == .held }.count == 3 && holds.filter { $0 == .soldOut }.count == 37)
            let sold = try await env.database.read { db in try await store.event(gig.id, in: db)?.ticketsSold }
            #expect(sold == 3)

            let other = try await event(host: host, capacity: nil, startsIn: 3_600, env)
            let holder = try #require(outcomes.first { $0.1 == .held }?.0)
            let (again, elsewhere, otherRequest) = try await env.database.transaction { db in
                (try await store.holdSeat(buyer: holder, key: "k", event: gig.id, requestHash: "h", now: env.now(), in: db),
                 try await store.holdSeat(buyer: holder, key: "k", event: other.id, requestHash: "h", now: env.now(), in: db),
                 try await store.holdSeat(buyer: holder, key: "k", event: gig.id, requestHash: "h2", now: env.now(), in: db))
            }
            #expect(again == .heldBefore && elsewhere == .keyReused && otherRequest == .keyReused)
            // Given back: the seat is free again, once.
            let (ended, endedAgain) = try await env.database.transaction { db in
                let ended = try await store.endHold(buyer: holder, key: "k", in: db)
                if ended { try await store.releaseSeat(of: gig.id, in: db) }
                return (ended, try await store.endHold(buyer: holder, key: "k", in: db))
            }
            #expect(ended && !endedAgain)
            #expect(try await env.database.read { db in try await store.event(gig.id, in: db)?.ticketsSold } == 2)
        }
    }

    @Test("a Stripe event is recorded once; an older account.updated never overwrites a newer one", arguments: TestEngines.all)
    func webhookEventsApplyInOrder(engine: DatabaseEngine) async throws {
        try await withStore(engine) { env in
            let host = try await user(env)
            let account = try JSONDecoder().decode(StripeAccount.self, from: Data("""
                {"id":"acct_1","object":"account","type":"express","business_profile":{},"capabilities":{},"country":"US","created":0,"default_currency":"usd","charges_enabled":false,"payouts_enabled":false,"details_submitted":false}
                """.utf8))
            @Sendable func state(_ complete: Bool) throws -> ConnectController.AccountState {
                try JSONDecoder().decode(ConnectController.AccountState.self, from: Data("""
                    {"id":"acct_1","charges_enabled":\(complete),"payouts_enabled":\(complete),"details_submitted":\(complete),"requirements":{"currently_due":[]}}
                    """.utf8))
            }
            let (first, second) = try await env.database.transaction { db in
                try await store.insertAccount(of: host, account, now: env.now(), in: db)
                return (try await store.recordEvent(id: "evt_1", type: "account.updated", now: env.now(), in: db),
                        try await store.recordEvent(id: "evt_1", type: "account.updated", now: env.now(), in: db))
            }
            #expect(first && !second)
            try await env.database.transaction { db in
                try await store.update(with: try state(true), eventCreated: 200, now: env.now(), in: db)
                try await store.update(with: try state(false), eventCreated: 100, now: env.now(), in: db)
            }
            let stored = try await env.database.read { db in try await store.account(of: host, in: db) }
            #expect(stored == ConnectStore.Account(stripeAccountID: "acct_1", onboardingComplete: true))
            #expect(try await env.database.read { db in try await store.payoutAccount(of: host.rawValue, in: db) } == "acct_1")
        }
    }

    @Test("upcoming events: soonest first, started ones left out", arguments: TestEngines.all)
    func upcomingEvents(engine: DatabaseEngine) async throws {
        try await withStore(engine) { env in
            let host = try await user(env)
            let later = try await event(host: host, capacity: nil, startsIn: 7_200, env)
            let soon = try await event(host: host, capacity: 10, startsIn: 600, env)
            _ = try await event(host: host, capacity: nil, startsIn: -600, env)
            let listed = try await env.database.read { db in try await store.upcomingEvents(now: env.now(), in: db) }
            #expect(listed.map(\.id) == [soon.id, later.id] && listed.first?.capacity == 10)
        }
    }
}

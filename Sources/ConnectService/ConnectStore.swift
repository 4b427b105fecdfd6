import Foundation
import PurseDatabase
import PurseServer
import SQLKit

/// Maly's rows: hosts' Connect accounts, the Stripe events applied to them, paid events, seat
/// holds and tickets. Every method runs in the session it is given, so a route decides what
/// one transaction holds; the invariants (one account per user, capacity) are the statements'.
struct ConnectStore: Sendable {
    /// A host's Connect account as stored.
    struct Account: Sendable, Equatable {
        var stripeAccountID: String
        var onboardingComplete: Bool
    }

    // MARK: Accounts

    func account(of user: UserID, in db: any DatabaseSession) async throws -> Account? {
        guard let row = try await db.raw("SELECT stripe_account_id, onboarding_complete FROM connect_accounts WHERE user_id = \(bind: user.rawValue)").first() else {
            return nil
        }
        return Account(stripeAccountID: try row.decode(column: "stripe_account_id", as: String.self),
                       onboardingComplete: try row.decode(column: "onboarding_complete", as: Bool.self))
    }

    /// Records a newly created account; a user who already has one keeps it.
    func insertAccount(of user: UserID, _ account: StripeAccount, now: Date, in db: any DatabaseSession) async throws {
        let millis = now.epochMillis
        try await db.raw("""
            INSERT INTO connect_accounts (user_id, stripe_account_id, onboarding_complete, charges_enabled, payouts_enabled, details_submitted, created_at, updated_at)
            VALUES (\(bind: user.rawValue), \(bind: account.id), \(bind: account.onboardingComplete), \(bind: account.charges_enabled),
                    \(bind: account.payouts_enabled), \(bind: account.details_submitted), \(bind: millis), \(bind: millis))
            ON CONFLICT DO NOTHING
            """).run()
    }

    /// Stores an account's status. With `eventCreated` (a webhook), it is applied only when the
    /// event is not older than the last one applied to this account — Stripe does not promise
    /// delivery order.
    func update(with account: ConnectController.AccountState, eventCreated: Int64? = nil, now: Date, in db: any DatabaseSession) async throws {
        var query = SQLQueryString("""
            UPDATE connect_accounts SET onboarding_complete = \(bind: account.onboardingComplete), charges_enabled = \(bind: account.charges_enabled),
            payouts_enabled = \(bind: account.payouts_enabled), details_submitted = \(bind: account.details_submitted),
            updated_at = \(bind: now.epochMillis)
            """)
        if let eventCreated {
            let set: SQLQueryString = ", last_event_created = \(bind: eventCreated)"
            query = query + set
        }
        let scope: SQLQueryString = " WHERE stripe_account_id = \(bind: account.id)"
        query = query + scope
        if let eventCreated {
            let newer: SQLQueryString = " AND last_event_created <= \(bind: eventCreated)"
            query = query + newer
        }
        try await db.raw(query).run()
    }

    /// Records a Stripe event's id; false when it was recorded before (a redelivery).
    func recordEvent(id: String, type: String, now: Date, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            INSERT INTO connect_stripe_events (id, type, received_at) VALUES (\(bind: id), \(bind: type), \(bind: now.epochMillis))
            ON CONFLICT DO NOTHING RETURNING id
            """).first() != nil
    }

    /// The Connect account a host is paid into, when onboarding is complete.
    func payoutAccount(of host: String, in db: any DatabaseSession) async throws -> String? {
        try await db.raw("""
            SELECT stripe_account_id FROM connect_accounts WHERE user_id = \(bind: host) AND onboarding_complete
            """).first()?.decode(column: "stripe_account_id", as: String.self)
    }

    // MARK: Events

    /// Events that have not started, soonest first (at most 200).
    func upcomingEvents(now: Date, in db: any DatabaseSession) async throws -> [EventsController.Event] {
        try await db.raw("SELECT * FROM connect_events WHERE starts_at >= \(bind: now.epochMillis) ORDER BY starts_at, id LIMIT 200")
            .all().map(Self.event)
    }

    func event(_ id: String, in db: any DatabaseSession) async throws -> EventsController.Event? {
        try await db.raw("SELECT * FROM connect_events WHERE id = \(bind: id)").first().map(Self.event)
    }

    func insertEvent(_ event: EventsController.Event, now: Date, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO connect_events (id, host_user_id, title, description, starts_at, price, currency, capacity, tickets_sold, created_at)
            VALUES (\(bind: event.id), \(bind: event.hostId), \(bind: event.title), \(bind: event.description), \(bind: event.startsAt.epochMillis),
                    \(bind: Int64(event.price)), \(bind: event.currency), \(bind: event.capacity), 0, \(bind: now.epochMillis))
            """).run()
    }

    static func event(_ row: any SQLRow) throws -> EventsController.Event {
        EventsController.Event(
            id: try row.decode(column: "id", as: String.self), hostId: try row.decode(column: "host_user_id", as: String.self),
            title: try row.decode(column: "title", as: String.self), description: try row.decode(column: "description", as: String?.self),
            startsAt: Date(epochMillis: try row.decode(column: "starts_at", as: Int64.self)), price: Int(try row.decode(column: "price", as: Int64.self)),
            currency: try row.decode(column: "currency", as: String.self), capacity: try row.decode(column: "capacity", as: Int?.self),
            ticketsSold: try row.decode(column: "tickets_sold", as: Int.self)
        )
    }

    // MARK: Seats and tickets

    /// What holding a seat for a purchase key came to.
    enum Hold: Sendable, Equatable {
        /// A seat is now held for the key.
        case held
        /// The event is full.
        case soldOut
        /// An earlier attempt with the key holds its seat (for this event and request).
        case heldBefore
        /// The key holds a seat for another event or request.
        case keyReused
    }

    /// Holds one seat for (`buyer`, `key`), so a sold-out event is never charged and a retry never
    /// takes a second seat.
    func holdSeat(buyer: UserID, key: String, event: String, requestHash: String, now: Date, in db: any DatabaseSession) async throws -> Hold {
        let held = try await db.raw("""
            INSERT INTO connect_seat_holds (buyer_user_id, idempotency_key, event_id, request_hash, created_at)
            VALUES (\(bind: buyer.rawValue), \(bind: key), \(bind: event), \(bind: requestHash), \(bind: now.epochMillis))
            ON CONFLICT DO NOTHING RETURNING event_id
            """).first() != nil
        if held {
            let seated = try await db.raw("""
                UPDATE connect_events SET tickets_sold = tickets_sold + 1 WHERE id = \(bind: event) AND (capacity IS NULL OR tickets_sold < capacity) RETURNING id
                """).first() != nil
            return seated ? .held : .soldOut
        }
        let earlier = try await db.raw("""
            SELECT event_id, request_hash FROM connect_seat_holds WHERE buyer_user_id = \(bind: buyer.rawValue) AND idempotency_key = \(bind: key)
            """).first()
        guard try earlier?.decode(column: "request_hash", as: String.self) == requestHash,
              try earlier?.decode(column: "event_id", as: String.self) == event else { return .keyReused }
        return .heldBefore
    }

    /// Removes the seat hold of (`buyer`, `key`); returns whether there was one. The caller
    /// decides what becomes of its seat: given back (``releaseSeat(of:in:)``), or the ticket's.
    func endHold(buyer: UserID, key: String, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            DELETE FROM connect_seat_holds WHERE buyer_user_id = \(bind: buyer.rawValue) AND idempotency_key = \(bind: key) RETURNING event_id
            """).first() != nil
    }

    func releaseSeat(of event: String, in db: any DatabaseSession) async throws {
        try await db.raw("UPDATE connect_events SET tickets_sold = tickets_sold - 1 WHERE id = \(bind: event) AND tickets_sold > 0").run()
    }

    func insertTicket(_ ticket: EventsController.Ticket, buyer: UserID, ledgerTransaction: LedgerTransactionID, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO connect_tickets (id, event_id, buyer_user_id, payment_intent_id, amount, application_fee, ledger_transaction_id, created_at)
            VALUES (\(bind: ticket.id), \(bind: ticket.eventId), \(bind: buyer.rawValue), \(bind: ticket.paymentIntentId), \(bind: Int64(ticket.amount)),
                    \(bind: Int64(ticket.applicationFee)), \(bind: ledgerTransaction.rawValue), \(bind: ticket.createdAt.epochMillis))
            """).run()
    }
}

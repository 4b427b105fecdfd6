import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PurseDatabase
import PurseServer
import SQLKit

/// Paid events (beyond the seed): onboarded hosts publish events, buyers purchase tickets as Stripe
/// destination charges — the platform keeps a 3 % application fee, the host gets the rest. Each sale is
/// recorded in the ledger as price, platform fee and host share.
struct EventsController: Sendable {
    static let feeBasisPoints = 300
    let configuration: ConnectConfiguration
    let environment: ServerEnvironment
    let stripe: StripeClient
    let store = ConnectStore()

    struct CreateEvent: Decodable {
        var title: String
        var description: String?
        /// ISO 8601, e.g. `2026-12-31T20:00:00Z`.
        var startsAt: String
        var price: Int
        var currency: String?
        var capacity: Int?
    }

    struct Event: Codable {
        var id: String
        var hostId: String
        var title: String
        var description: String?
        var startsAt: Date
        var price: Int
        var currency: String
        var capacity: Int?
        var ticketsSold: Int
    }

    struct BuyTicket: Decodable {
        /// A PaymentMethod id (`pm_…`) from Stripe.js or the iOS SDK.
        var paymentMethod: String?
        /// A test card number; only with the sandbox (`4242 4242 4242 4242` succeeds, `4000 0000 0000 0002` declines).
        var testCard: String?
    }

    struct Ticket: Codable {
        var id: String
        var eventId: String
        var amount: Int
        var applicationFee: Int
        var hostShare: Int
        var currency: String
        var paymentIntentId: String
        var createdAt: Date
    }

    /// 3 % of the price in minor units, rounded half up.
    static func applicationFee(for price: Int) -> Int { (price * feeBasisPoints + 5_000) / 10_000 }

    func mount(on router: Router<PurseRequestContext>) {
        router.get("api/events") { _, _ in
            let now = environment.now()
            let events = try await environment.database.read { db in try await store.upcomingEvents(now: now, in: db) }
            struct List: Encodable { var events: [Event] }
            return try Response.json(List(events: events))
        }
        let authed = router.group("api/events").add(middleware: RequireAuthentication())
        authed.post { request, context in
            var request = request
            let body = try await request.decodeJSON(as: CreateEvent.self, context: context)
            return try await createEvent(body, host: try context.requireUser().id)
        }
        authed.post("{id}/tickets") { request, context in
            var request = request
            let buffer = try await request.collectJSONBody(context: context)
            let body = try JSONBody.decode(BuyTicket.self, from: buffer)
            return try await buyTicket(body, eventID: try context.parameters.require("id"), request: request, buffer: buffer,
                                       buyer: try context.requireUser().id, logger: context.logger)
        }
    }

    /// An RFC 3339 date-time (JSON Schema's `date-time`), with or without fractional seconds.
    static func dateTime(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    func createEvent(_ body: CreateEvent, host: UserID) async throws -> Response {
        // Lengths count Unicode scalars, as JSON Schema's maxLength does; 120 of them are at most 480 bytes.
        let title = body.title.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !title.isEmpty, body.title.unicodeScalars.count <= 120 else { throw APIError.badRequest("Field 'title' must be 1 to 120 characters, not all blank") }
        if let description = body.description, description.unicodeScalars.count > 2_000 {
            throw APIError.badRequest("Field 'description' must be at most 2000 characters")
        }
        guard (50...10_000_000).contains(body.price) else { throw APIError.badRequest("Field 'price' must be between 50 and 10000000 (minor units)") }
        let currency = (body.currency ?? "usd").lowercased()
        guard currency.count == 3, currency.allSatisfy({ $0.isASCII && $0.isLetter }) else { throw APIError.badRequest("Field 'currency' must be an ISO 4217 code") }
        guard let startsAt = Self.dateTime(body.startsAt) else {
            throw APIError.badRequest("Field 'startsAt' must be an ISO 8601 date-time, e.g. 2026-12-31T20:00:00Z")
        }
        guard startsAt > environment.now() else { throw APIError.badRequest("Field 'startsAt' must be in the future") }
        if let capacity = body.capacity, !(1...1_000_000).contains(capacity) { throw APIError.badRequest("Field 'capacity' must be between 1 and 1000000") }
        let event = Event(id: RandomID.make("pev"), hostId: host.rawValue, title: title, description: body.description, startsAt: startsAt,
                          price: body.price, currency: currency, capacity: body.capacity, ticketsSold: 0)
        let now = environment.now()
        try await environment.database.transaction { db in
            guard try await store.account(of: host, in: db)?.onboardingComplete == true else {
                throw APIError(.forbidden, "Complete Stripe Connect onboarding before creating paid events")
            }
            try await store.insertEvent(event, now: now, in: db)
        }
        return try .json(event, status: .created)
    }

    func buyTicket(_ body: BuyTicket, eventID: String, request: Request, buffer: ByteBuffer, buyer: UserID, logger: Logger) async throws -> Response {
        let source: StripeClient.PaymentSource
        switch (body.paymentMethod, body.testCard) {
        case (let method?, nil) where method.hasPrefix("pm_"): source = .paymentMethod(method)
        case (nil, let card?) where configuration.usesSandbox:
            let digits = card.filter { $0.isASCII && $0.isNumber }
            guard (12...19).contains(digits.count) else { throw APIError.badRequest("Field 'testCard' is not a card number") }
            source = .testCard(digits)
        case (nil, .some):
            throw APIError.badRequest("Raw card numbers are accepted only by the Stripe sandbox; send a paymentMethod")
        default:
            throw APIError.badRequest("Send a paymentMethod (pm_…)")
        }
        struct Sale { var event: Event; var destination: String }
        // 1. Decide whether this is a retry, then hold a seat for this key (so a sold-out event
        //    is never charged, and a retry never takes a second seat).
        let call: IdempotentCall
        switch try await environment.begin(request, body: buffer, user: buyer) {
        case .replay(let answer): return answer
        case .fresh(let fresh): call = fresh
        }
        guard let key = call.key else { throw APIError.badRequest("Idempotency-Key header is required") }
        let requestHash = call.requestHash
        let sale: Sale
        do {
            sale = try await environment.database.transaction { db -> Sale in
                guard let event = try await store.event(eventID, in: db) else { throw APIError.notFound("Event not found") }
                guard event.startsAt > environment.now() else { throw APIError(.conflict, "This event has already started") }
                guard let destination = try await store.payoutAccount(of: event.hostId, in: db) else {
                    throw APIError(.conflict, "The host cannot receive payments right now")
                }
                switch try await store.holdSeat(buyer: buyer, key: key, event: eventID, requestHash: requestHash, now: environment.now(), in: db) {
                case .held, .heldBefore: break
                case .soldOut: throw APIError(.conflict, "Sold out")
                case .keyReused: throw IdempotencyError.keyReused
                }
                return Sale(event: event, destination: destination)
            }
        } catch IdempotencyError.keyReused {
            throw ServerEnvironment.keyReused
        }
        // Gives the seat back if this key still holds one (a failed charge, or a sale some
        // other attempt with this key recorded first).
        let release: @Sendable () async -> Void = {
            _ = try? await environment.database.transaction { db in
                if try await store.endHold(buyer: buyer, key: key, in: db) { try await store.releaseSeat(of: eventID, in: db) }
            }
        }
        // 2. Charge (Stripe's idempotency makes a retry return the same PaymentIntent).
        let fee = Self.applicationFee(for: sale.event.price)
        let intent: StripePaymentIntent
        do {
            intent = try await stripe.createDestinationCharge(
                amount: sale.event.price, currency: sale.event.currency, applicationFee: fee, destination: sale.destination, source: source,
                metadata: [("event_id", .string(eventID)), ("buyer_id", .string(buyer.rawValue))], idempotencyKey: "purse-ticket-\(buyer.rawValue)-\(key)"
            )
        } catch let failure as StripeClient.Failure {
            await release()
            logger.notice("ticket payment failed", metadata: ["stripe.type": "\(failure.type)", "stripe.request_id": "\(failure.requestID ?? "-")"])
            if failure.type == "card_error" {
                struct Declined: Encodable { var error: String; var code: String?; var decline_code: String? }
                throw APIError(HTTPResponse.Status(code: 402, reasonPhrase: "Payment Required"),
                               body: Declined(error: failure.message, code: failure.code, decline_code: failure.declineCode))
            }
            throw APIError(.badGateway, "Payment failed, try again")
        }
        guard intent.status == .succeeded else {
            await release()
            throw APIError(HTTPResponse.Status(code: 402, reasonPhrase: "Payment Required"), "Payment was not completed (\(intent.status))")
        }
        // 3. Record the sale once per Idempotency-Key: ticket and ledger in one transaction.
        let event = sale.event
        let response = try await environment.commit(call) { db in
            let now = environment.now()
            let currency = event.currency.uppercased()
            let clearing = try await environment.ledger.account(owner: nil, kind: "connect_card_clearing", currency: currency, allowNegative: true, now: now, in: db)
            let fees = try await environment.ledger.account(owner: nil, kind: "connect_platform_fees", currency: currency, now: now, in: db)
            let host = try await environment.ledger.account(owner: UserID(event.hostId), kind: "connect_host_earnings", currency: currency, now: now, in: db)
            // The hold becomes the ticket's seat.
            guard try await store.endHold(buyer: buyer, key: key, in: db) else {
                throw APIError(.conflict, "The seat held for this purchase was given back; try again")
            }
            let ticketID = RandomID.make("tkt")
            let ledgerID = try await environment.ledger.post(
                kind: "connect.ticket", memo: "Ticket for \(event.title)", reference: ticketID,
                entries: [LedgerEntry(clearing.id, -Int64(event.price)), LedgerEntry(fees.id, Int64(fee)), LedgerEntry(host.id, Int64(event.price - fee))],
                now: now, in: db
            )
            let ticket = Ticket(id: ticketID, eventId: eventID, amount: event.price, applicationFee: fee, hostShare: event.price - fee,
                                currency: event.currency, paymentIntentId: intent.id, createdAt: now)
            try await store.insertTicket(ticket, buyer: buyer, ledgerTransaction: ledgerID, in: db)
            struct Answer: Encodable { var ticket: Ticket }
            return IdempotentEffect((), status: .created, body: try JSONCoding.encoder.encode(Answer(ticket: ticket)))
        }
        if case .replayed = response { await release() }  // recorded by another attempt with this key
        return response.response
    }
}

import Foundation
import Logging
import PurseDatabase
import PurseServer
import SQLKit

/// Delivers paid top-ups through the supplier and settles them exactly once.
///
/// A top-up's money moves in two steps. Buying moves the price from the wallet (and any cashback
/// spent) to the buyer's hold account and leaves the transaction `pending` with a delivery job
/// queued. Settling moves it on: delivered → the hold pays the settlement account and the
/// cashback earned is credited (`completed`); refused or reversed → the hold goes back where it
/// came from (`failed`, the customer told why). Settling is one database transaction that starts
/// by flipping the transaction from `pending`, so of any number of settlers — the request that
/// bought, the job, another replica — exactly one moves the money.
struct AirtimeDelivery: Sendable {
    static let jobKind = "nexus.airtime.delivery"
    static let holdKind = "nexus_topup_hold"
    static let settlementKind = "nexus_airtime_settlement"
    static let promotionsKind = "nexus_promotions"

    struct Payload: Codable { var transactionId: String }

    /// Where a top-up stands after an attempt.
    enum State: Equatable, Sendable {
        case pending
        case completed
        case failed(reason: String)
    }

    let supplier: any AirtimeSupplier
    let store: NexusStore
    let environment: ServerEnvironment
    let configuration: NexusConfiguration

    /// The job that delivers a top-up if the request that bought it could not (it runs after
    /// the request's own attempt would have finished).
    func enqueue(transactionID: String, now: Date, in db: any DatabaseSession) async throws -> String {
        let firstCheck = now.addingTimeInterval(max(configuration.deliveryBackoff.base, Double(configuration.supplierTimeout.components.seconds) * 2))
        return try await environment.jobs.enqueue(
            kind: Self.jobKind, payload: Payload(transactionId: transactionID), runAt: firstCheck, maxAttempts: configuration.deliveryChecks, in: db
        )
    }

    var jobHandler: JobHandler {
        JobHandler(kind: Self.jobKind, backoff: configuration.deliveryBackoff) { job in
            let payload = try job.decode(Payload.self)
            let state = try await attempt(payload.transactionId)
            guard state == .pending else { return }
            if job.attempts >= job.maxAttempts {
                environment.logger.error("airtime delivery still pending after every check; settle it by hand", metadata: [
                    "transaction": "\(payload.transactionId)", "checks": "\(job.attempts)",
                ])
            }
            throw SupplierError("still pending at \(supplier.name)")
        }
    }

    /// One attempt: buy (or, after an earlier attempt, ask what became of the purchase) and
    /// settle on a verdict. Returns the top-up's state afterwards.
    @discardableResult
    func attempt(_ transactionID: String) async throws -> State {
        guard let delivery = try await environment.database.read({ db in try await store.delivery(of: transactionID, in: db) }) else {
            throw SupplierError("no delivery for \(transactionID)")
        }
        guard delivery.status == "pending" else { return try await state(of: transactionID) }
        var outcome: SupplierOutcome
        do {
            if delivery.attempts == 0 {
                outcome = try await supplier.purchase(delivery.order)
            } else {
                outcome = try await supplier.status(of: delivery.requestID)
                // Never reached the supplier: buy now, under the same request id.
                if outcome == .unknown { outcome = try await supplier.purchase(delivery.order) }
            }
        } catch {
            outcome = .pending(reason: "no answer: \(error)")
        }
        switch outcome {
        case .delivered(let reference):
            // When another settler was first, its verdict stands: read below.
            if try await settle(transactionID, as: .completed, reference: reference, answer: "delivered") { return .completed }
        case .failed(let reason):
            if try await settle(transactionID, as: .failed(reason: reason), reference: nil, answer: "failed: \(reason)") { return .failed(reason: reason) }
        case .pending(let reason):
            try await environment.database.transaction { db in
                try await store.recordAttempt(transactionID, answer: reason, now: environment.now(), in: db)
            }
            environment.logger.info("airtime delivery pending", metadata: ["transaction": "\(transactionID)", "reason": "\(reason)"])
        case .unknown:
            try await environment.database.transaction { db in
                try await store.recordAttempt(transactionID, answer: "unknown to the supplier", now: environment.now(), in: db)
            }
        }
        return try await state(of: transactionID)
    }

    func state(of transactionID: String) async throws -> State {
        let status = try await environment.database.read { db in
            try await db.raw("SELECT status, failure_reason FROM nexus_transactions WHERE id = \(bind: transactionID)").first().map {
                (try $0.decode(column: "status", as: String.self), try $0.decode(column: "failure_reason", as: String?.self))
            }
        }
        switch status?.0 {
        case "completed": return .completed
        case "failed": return .failed(reason: status?.1 ?? "Delivery failed")
        default: return .pending
        }
    }

    /// Settles a pending top-up once. A caller that finds it settled changes nothing.
    /// - Returns: Whether this call settled it.
    @discardableResult
    func settle(_ transactionID: String, as state: State, reference: String?, answer: String) async throws -> Bool {
        guard state != .pending else { return false }
        return try await environment.database.transaction { db in
            let now = environment.now()
            let reason: String? = if case .failed(let reason) = state { reason } else { nil }
            guard let topup = try await store.settle(transactionID, status: state == .completed ? "completed" : "failed", failureReason: reason, in: db) else {
                return false  // settled by another attempt
            }
            let ledger = environment.ledger
            let accounts = try await ledger.accountIDs([
                LedgerAccountSpec(owner: topup.user, kind: NexusController.walletKind, currency: Naira.currency),
                LedgerAccountSpec(owner: topup.user, kind: NexusController.cashbackKind, currency: Naira.currency),
                LedgerAccountSpec(owner: topup.user, kind: Self.holdKind, currency: Naira.currency),
                LedgerAccountSpec(owner: nil, kind: Self.settlementKind, currency: Naira.currency),
                LedgerAccountSpec(owner: nil, kind: Self.promotionsKind, currency: Naira.currency, allowNegative: true),
            ], now: now, in: db)
            let (wallet, cashback, hold, settlement, promotions) = (accounts[0], accounts[1], accounts[2], accounts[3], accounts[4])
            let amount = Naira.kobo(topup.amount)
            var entries = [LedgerEntry(hold, -amount)]
            if state == .completed {
                entries.append(LedgerEntry(settlement, amount))
                if topup.cashbackEarned > 0 {
                    entries += [LedgerEntry(promotions, -Naira.kobo(topup.cashbackEarned)), LedgerEntry(cashback, Naira.kobo(topup.cashbackEarned))]
                }
                _ = try await ledger.post(kind: "nexus.topup.delivered", memo: "Delivered by \(supplier.name)", reference: transactionID,
                                          entries: entries, now: now, in: db)
            } else {
                let used = Naira.kobo(topup.cashbackUsed)
                if amount - used > 0 { entries.append(LedgerEntry(wallet, amount - used)) }
                if used > 0 { entries.append(LedgerEntry(cashback, used)) }
                _ = try await ledger.post(kind: "nexus.topup.refund", memo: "Refund: \(reason ?? "not delivered")", reference: transactionID,
                                          entries: entries, now: now, in: db)
            }
            if let job = try await store.finishDelivery(transactionID, reference: reference, answer: answer, now: now, in: db) {
                try await environment.jobs.cancel(job, in: db)
            }
            return true
        }
    }
}

import Foundation
import Logging
import NexusVocabulary
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

    struct Payload: Codable { var transactionId: TransactionID }

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
    func enqueue(transactionID: TransactionID, now: Date, in db: any DatabaseSession) async throws -> String {
        let firstCheck = now.addingTimeInterval(max(configuration.deliveryBackoff.base, Double(configuration.supplierTimeout.components.seconds) * 2))
        return try await environment.jobs.enqueue(
            kind: Self.jobKind, payload: Payload(transactionId: transactionID), runAt: firstCheck, maxAttempts: configuration.deliveryChecks, in: db
        )
    }

    var jobHandler: JobHandler {
        JobHandler(kind: Self.jobKind, backoff: configuration.deliveryBackoff) { job in
            let payload = try job.decode(Payload.self)
            guard let delivery = try await environment.database.read({ db in try await store.delivery(of: payload.transactionId, in: db) }) else {
                throw SupplierError("no delivery for \(payload.transactionId)")
            }
            let state = try await attempt(delivery)
            guard state == .pending else { return }
            if job.attempts >= job.maxAttempts {
                environment.logger.error("airtime delivery still pending after every check; settle it by hand", metadata: [
                    "transaction": "\(payload.transactionId)", "checks": "\(job.attempts)",
                ])
            }
            throw SupplierError("still pending at \(supplier.name)")
        }
    }

    /// What an attempt came to: the top-up's state afterwards, and what the attempt's `settled`
    /// returned when this attempt is the one that settled it.
    struct Attempt<Answer: Sendable>: Sendable {
        var state: State
        var answer: Answer?
    }

    /// One attempt at the delivery it is handed (as read by its job, or as the buying request
    /// wrote it).
    @discardableResult
    func attempt(_ delivery: NexusStore.Delivery) async throws -> State {
        try await attempt(delivery) { _, _ in () }.state
    }

    /// One attempt at the delivery it is handed: buy (or, after an earlier attempt, ask what
    /// became of the purchase) and settle on a verdict, running `settled` in the settling
    /// transaction (the request that bought the top-up writes its final answer there).
    func attempt<Answer: Sendable>(
        _ delivery: NexusStore.Delivery, settled: @escaping @Sendable (State, any DatabaseSession) async throws -> Answer
    ) async throws -> Attempt<Answer> {
        let transactionID = delivery.transactionID
        guard delivery.status == .pending else { return Attempt(state: try await state(of: transactionID)) }
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
            if let answer = try await settle(transactionID, as: .completed, reference: reference, answer: "delivered", then: settled) {
                return Attempt(state: .completed, answer: answer)
            }
        case .failed(let reason):
            if let answer = try await settle(transactionID, as: .failed(reason: reason), reference: nil, answer: "failed: \(reason)", then: settled) {
                return Attempt(state: .failed(reason: reason), answer: answer)
            }
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
        return Attempt(state: try await state(of: transactionID))
    }

    func state(of transactionID: TransactionID) async throws -> State {
        let status = try await environment.database.read { db in
            try await db.raw("SELECT status, failure_reason FROM nexus_transactions WHERE id = \(bind: transactionID.rawValue)").first().map {
                (try $0.decode(column: "status", as: TransactionStatus.self, of: "nexus_transactions"),
                 try $0.decode(column: "failure_reason", as: String?.self))
            }
        }
        switch status?.0 {
        case .completed: return .completed
        case .failed: return .failed(reason: status?.1 ?? "Delivery failed")
        case .pending, nil: return .pending
        }
    }

    /// Settles a pending top-up once, running `then` in the same transaction. A caller that finds
    /// it settled changes nothing.
    /// - Returns: What `then` returned when this call settled it; nil when another settler was first.
    func settle<Answer: Sendable>(
        _ transactionID: TransactionID, as state: State, reference: String?, answer: String,
        then: @escaping @Sendable (State, any DatabaseSession) async throws -> Answer
    ) async throws -> Answer? {
        guard state != .pending else { return nil }
        return try await environment.database.transaction { db -> Answer? in
            let now = environment.now()
            let reason: String? = if case .failed(let reason) = state { reason } else { nil }
            guard let topup = try await store.settle(transactionID, status: state == .completed ? .completed : .failed, failureReason: reason, in: db) else {
                return nil  // settled by another attempt
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
                _ = try await ledger.post(kind: "nexus.topup.delivered", memo: "Delivered by \(supplier.name)", reference: transactionID.rawValue,
                                          entries: entries, now: now, in: db)
            } else {
                let used = Naira.kobo(topup.cashbackUsed)
                if amount - used > 0 { entries.append(LedgerEntry(wallet, amount - used)) }
                if used > 0 { entries.append(LedgerEntry(cashback, used)) }
                _ = try await ledger.post(kind: "nexus.topup.refund", memo: "Refund: \(reason ?? "not delivered")", reference: transactionID.rawValue,
                                          entries: entries, now: now, in: db)
            }
            if let job = try await store.finishDelivery(transactionID, reference: reference, answer: answer, now: now, in: db) {
                try await environment.jobs.cancel(job, in: db)
            }
            return try await then(state, db)
        }
    }
}

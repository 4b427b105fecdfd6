import Foundation
import Logging
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit
import Starknet

/// Payments the provider received that no purchase claimed — a user's app that never came back
/// after paying, a payment claimed for a wallet that did not make it (refused, and left
/// alone then, so that nobody who sees it on chain can spoil it) — go back to where they came
/// from once a window has passed.
///
/// A pass reads the chain for what paid the payment address since the last pass (vault
/// `Withdraw`s to it, and STRK `Transfer`s to it from anyone but the vault, a mint or a funding
/// account) into `chippi_incoming_payments`, then queues the return of each payment still
/// unclaimed after the window. A claim (`POST /v1/sku-transactions`) and a return exclude each
/// other by one conditional update of the payment's row: whichever comes first wins, on any
/// replica, and a late claim is answered 422 `payment_returned`.
struct UnclaimedPayments: Sendable {
    let environment: ServerEnvironment
    let payments: VaultPayments
    let store = IncomingPaymentStore()
    /// How long a payment may stay unclaimed (`CHIPPI_UNCLAIMED_RETURN_SECONDS`).
    let window: TimeInterval
    /// Accounts whose transfers fund the provider's account (its gas), never payments.
    let funding: Set<Felt>

    static let returnJob = "chippi.return_payment"
    /// Events read per pass at most (ten pages); the rest waits for the next pass.
    static let pagesPerPass = 10

    var logger: Logger { environment.logger }

    /// One pass: what arrived, then what is due back. Returns how many returns it queued.
    @discardableResult
    func pass() async throws -> Int {
        try await scan()
        return try await sweep()
    }

    /// Reads the payments of the blocks since the last pass, up to the latest closed block.
    func scan() async throws {
        let latest = try await payments.provider.blockNumber()
        let from = try await environment.database.read { db in try await store.nextBlock(in: db) }
        guard from <= latest else { return }
        var hashes: [Felt: UInt64] = [:]
        var last = latest
        for (source, key) in [(payments.vaultAddress, VaultPayments.withdrawKey), (payments.tokenAddress, VaultPayments.transferKey)] {
            var token: String?
            for page in 0..<Self.pagesPerPass {
                let events = try await payments.provider.events(address: source, keys: [[key], [], [payments.paymentAddress]], from: .number(from),
                                                                to: .number(latest), chunkSize: 100, continuationToken: token)
                for event in events.events {
                    hashes[event.transactionHash] = event.blockNumber ?? latest
                }
                token = events.continuationToken
                guard token != nil else { break }
                if page == Self.pagesPerPass - 1, let reached = events.events.last?.blockNumber, reached > from {
                    // The rest of the range waits for the next pass (its block is read again).
                    last = min(last, reached - 1)
                }
            }
        }
        let now = environment.now().epochMillis
        for (hash, block) in hashes where block <= last {
            guard let payment = try? await payments.verify(hash) else { continue }
            guard !payment.payer.isZero, payment.payer != payments.paymentAddress, !funding.contains(payment.payer) else { continue }
            try await environment.database.transaction { db in
                try await store.record(hash, payer: payment.payer, amount: payment.amount, fromVault: payment.fromVault, block: block, now: now, in: db)
            }
        }
        let reached = last + 1
        try await environment.database.transaction { db in try await store.advance(to: reached, in: db) }
    }

    /// Queues the return of every payment unclaimed for longer than the window.
    func sweep() async throws -> Int {
        let now = environment.now()
        let due = try await environment.database.read { db in
            try await store.unclaimed(seenBefore: now.addingTimeInterval(-window).epochMillis, limit: 100, in: db)
        }
        var queued = 0
        for hash in due {
            let taken = try await environment.database.transaction { db -> Bool in
                guard try await store.startReturn(hash, now: now.epochMillis, in: db) else { return false }
                try await environment.jobs.enqueue(kind: Self.returnJob, payload: ReturnJob(transactionHash: hash.description), runAt: now,
                                                   maxAttempts: ProviderRoutes.fulfilmentAttempts, in: db)
                return true
            }
            if taken {
                queued += 1
                logger.notice("returning an unclaimed payment", metadata: ["transaction_hash": "\(hash)"])
            }
        }
        if queued > 0 { environment.jobs.wakeup.signal() }
        return queued
    }

    struct ReturnJob: Codable { var transactionHash: String }

    /// The return job: sends the payment back once (the refund already on chain when a crash came
    /// between sending and recording it), then records it.
    func returnPayment(_ job: Job) async throws {
        let payload = try job.decode(ReturnJob.self)
        guard let hash = Felt(payload.transactionHash),
              let payment = try await environment.database.read({ db in try await store.payment(hash, in: db) }),
              payment.state == .returning else { return }
        let refund = try await Fulfilment(environment: environment, payments: payments)
            .refundOnce(paidBy: hash, payer: payment.payer, amount: payment.amount)
        try await environment.database.transaction { db in
            try await store.finishReturn(hash, refund: refund, now: environment.now().epochMillis, in: db)
        }
    }
}

/// What the provider knows of the payments it received: `chippi_incoming_payments` and the
/// block its chain reading has reached.
struct IncomingPaymentStore: Sendable {
    /// Where a received payment stands.
    enum State: String, Sendable {
        /// Seen; no purchase has claimed it yet.
        case unclaimed
        /// A purchase claimed it (that purchase refunds it if it fails).
        case claimed
        /// Unclaimed past the window; its return is queued.
        case returning
        /// Sent back: `refund_transaction_hash`.
        case returned
    }

    struct Payment: Sendable {
        var payer: Felt
        var amount: UInt256
        var fromVault: Bool
        var state: State
        var refundHash: Felt?
    }

    func nextBlock(in db: any DatabaseSession) async throws -> UInt64 {
        guard let row = try await db.raw("SELECT next_block FROM chippi_payment_scan WHERE id = 1").first() else { return 0 }
        return UInt64(max(0, try row.decode(column: "next_block", as: Int64.self)))
    }

    /// Moves the reading on; never back (another replica may be ahead).
    func advance(to block: UInt64, in db: any DatabaseSession) async throws {
        let next = Int64(clamping: block)
        try await db.raw("""
            INSERT INTO chippi_payment_scan (id, next_block) VALUES (1, \(bind: next))
            ON CONFLICT (id) DO UPDATE SET next_block = \(bind: next) WHERE chippi_payment_scan.next_block < \(bind: next)
            """).run()
    }

    /// Records a payment seen on chain, once: a payment a purchase claimed already, or seen by
    /// another pass, stays as it is.
    func record(_ hash: Felt, payer: Felt, amount: UInt256, fromVault: Bool, block: UInt64, now: Int64, in db: any DatabaseSession) async throws {
        let claimed = try await db.raw("SELECT id FROM chippi_sku_transactions WHERE vault_transaction_hash = \(bind: hash.description)").first() != nil
        try await db.raw("""
            INSERT INTO chippi_incoming_payments (transaction_hash, payer, amount_fri, from_vault, block_number, state, seen_at, updated_at)
            VALUES (\(bind: hash.description), \(bind: payer.description), \(bind: amount.description), \(bind: fromVault), \(bind: Int64(clamping: block)),
                \(bind: (claimed ? State.claimed : .unclaimed).rawValue), \(bind: now), \(bind: now))
            ON CONFLICT (transaction_hash) DO NOTHING
            """).run()
    }

    /// Marks a payment claimed by a purchase being recorded in `db`: true unless its return has
    /// begun (then the purchase must not be recorded). A payment not seen yet is recorded claimed.
    func claim(_ hash: Felt, payer: Felt, amount: UInt256, now: Int64, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            INSERT INTO chippi_incoming_payments (transaction_hash, payer, amount_fri, from_vault, block_number, state, seen_at, updated_at)
            VALUES (\(bind: hash.description), \(bind: payer.description), \(bind: amount.description), \(bind: false), \(bind: Int64(-1)),
                \(bind: State.claimed.rawValue), \(bind: now), \(bind: now))
            ON CONFLICT (transaction_hash) DO UPDATE SET state = \(bind: State.claimed.rawValue), updated_at = \(bind: now)
            WHERE chippi_incoming_payments.state IN ('unclaimed', 'claimed')
            RETURNING transaction_hash
            """).first() != nil
    }

    /// Payments still unclaimed that were seen before `millis`, oldest first.
    func unclaimed(seenBefore millis: Int64, limit: Int, in db: any DatabaseSession) async throws -> [Felt] {
        try await db.raw("""
            SELECT transaction_hash FROM chippi_incoming_payments WHERE state = 'unclaimed' AND seen_at < \(bind: millis)
            ORDER BY seen_at LIMIT \(unsafeRaw: String(limit))
            """).all().compactMap { Felt(try $0.decode(column: "transaction_hash", as: String.self)) }
    }

    /// Begins a return: true when this call moved the payment from unclaimed (and no purchase
    /// holds it), false when a claim or another replica came first.
    func startReturn(_ hash: Felt, now: Int64, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            UPDATE chippi_incoming_payments SET state = \(bind: State.returning.rawValue), updated_at = \(bind: now)
            WHERE transaction_hash = \(bind: hash.description) AND state = 'unclaimed'
                AND NOT EXISTS (SELECT 1 FROM chippi_sku_transactions t WHERE t.vault_transaction_hash = \(bind: hash.description))
            RETURNING transaction_hash
            """).first() != nil
    }

    func finishReturn(_ hash: Felt, refund: Felt, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE chippi_incoming_payments SET state = \(bind: State.returned.rawValue), refund_transaction_hash = \(bind: refund.description),
                updated_at = \(bind: now) WHERE transaction_hash = \(bind: hash.description) AND state = 'returning'
            """).run()
    }

    func payment(_ hash: Felt, in db: any DatabaseSession) async throws -> Payment? {
        guard let row = try await db.raw("""
            SELECT payer, amount_fri, CASE WHEN from_vault THEN 1 ELSE 0 END AS from_vault, state, refund_transaction_hash
            FROM chippi_incoming_payments WHERE transaction_hash = \(bind: hash.description)
            """).first(),
            let payer = Felt(try row.decode(column: "payer", as: String.self)),
            let amount = UInt256(try row.decode(column: "amount_fri", as: String.self)),
            let state = State(rawValue: try row.decode(column: "state", as: String.self)) else { return nil }
        return Payment(payer: payer, amount: amount, fromVault: try row.decode(column: "from_vault", as: Int.self) != 0, state: state,
                       refundHash: try row.decode(column: "refund_transaction_hash", as: String?.self).flatMap { Felt($0) })
    }
}

import Foundation
import PurseFormats
import Starknet

/// What is recorded before the vault pays, and updated as the purchase goes: enough to resume
/// it after a crash or a lost answer without paying twice.
struct PendingPurchase: Codable, Sendable, Equatable {
    var skuId: String
    var reference: String
    var amount: String
    /// The STRK the quote asked for, in fri, and where it goes.
    var fri: String
    var paymentAddress: String
    var vaultTransactionHash: String?
    var transactionId: PurchaseID?
    /// The signed outside execution handed to the paymaster, until its hash is known.
    var account: Felt?
    var outsideExecution: OutsideExecution?
    var signature: [Felt]?

    /// Signed, or sent: the vault may have paid, so the record is kept for resuming.
    var mayHavePaid: Bool { vaultTransactionHash != nil || outsideExecution != nil }
}

/// Why a purchase stopped, as a value; ``message`` is what the user reads.
public enum PurchaseFailure: Error, Sendable, Equatable {
    case noWallet
    /// The reference (a phone number, an account) does not have the service's form.
    case referenceRequired(label: String)
    /// A bill needs an amount within the service's bounds.
    case amountRequired(min: String?, max: String?)
    /// Another purchase was paid for and is not finished; it finishes first.
    case earlierPurchaseUnfinished(skuId: String, reference: String)
    case insufficientVault(needed: String, available: String)
    /// The vault withdrawal was included but failed: the vault paid nothing (only the fee).
    case withdrawalReverted(transactionHash: String, reason: String)
    /// The provider answered something this client cannot use.
    case malformedAnswer
    /// The provider failed the purchase (and refunded it).
    case notDelivered(reason: String?)
    /// A call failed: its message, and whether trying again can help.
    case call(message: String, transient: Bool)
    /// The vault paid (or may have: the withdrawal was signed and handed over) and a later step
    /// failed: the purchase is recorded and finishes, as this same order, the next time it is
    /// bought or resumed — never as a second payment.
    case paidNotFinished(vaultTransactionHash: String?, reason: String)

    public var message: String {
        switch self {
        case .noWallet: "Create a ChippiPay wallet first"
        case .referenceRequired(let label): "Enter a \(label)"
        case .amountRequired(let min, let max): "Enter an amount between \(min ?? "?") and \(max ?? "?") MXN"
        case .earlierPurchaseUnfinished(let sku, let reference):
            "An earlier purchase (\(sku), \(reference)) is still being completed; try again in a moment"
        case .insufficientVault(let needed, let available): "Not enough STRK in the vault: \(needed) STRK needed, \(available) available"
        case .withdrawalReverted(let hash, let reason): "The vault withdrawal \(hash) was reverted: \(reason)"
        case .malformedAnswer: "ChippiPay service error"
        case .notDelivered(let reason): reason ?? "The purchase failed"
        case .call(let message, _): message
        case .paidNotFinished(let hash, let reason):
            "Paid; finishing: the STRK left the vault" + (hash.map { " (transaction \($0))" } ?? "")
                + " but the purchase is not complete yet (\(reason)). Try again to finish this same purchase: nothing is paid twice."
        }
    }

    /// Whether the vault has paid for the purchase this failure stopped (it will finish it).
    public var isPaid: Bool {
        if case .paidNotFinished = self { return true }
        return false
    }
}

/// A purchase's seven steps as a pure state machine: quote, check the vault, link the paying
/// account, record, withdraw (gasless), wait for acceptance, create the purchase, poll it — and
/// resuming one an earlier run left unfinished. ``ChippiPayManager`` drives it: it runs each
/// ``Effect`` and reports what happened as an ``Event``. The rules that keep a purchase from
/// being paid twice live here: when the record is written, kept or forgotten, and which
/// purchase goes first.
struct PurchaseStateMachine: Sendable {
    /// What the user asked to buy.
    struct Order: Sendable, Equatable {
        var sku: ChippiSKU
        var reference: String
        /// MXN as the user entered it, for a bill; nil for a fixed price.
        var amount: String?
        /// What the order costs: the amount given, or the service's price.
        var price: String? { amount ?? sku.amount }

        func isSame(as record: PendingPurchase) -> Bool {
            record.skuId == sku.id && record.reference == reference && record.amount == price
        }
    }

    enum Event: Sendable {
        /// Buy `order`; `unfinished` is the record an earlier purchase left, if any.
        case start(Order, hasWallet: Bool, unfinished: PendingPurchase?)
        /// Carry on with the record an earlier run left.
        case resume(PendingPurchase)
        case quoted(ChippiQuote)
        /// The vault's balance (and its text), and whether the paying account is linked.
        case balanceChecked(vault: UInt256?, available: String?, payerLinked: Bool)
        case payerLinked
        /// The first record is written.
        case recorded
        /// The withdrawal was signed and is about to go to the paymaster.
        case signed(account: Felt?, execution: OutsideExecution, signature: [Felt])
        /// The paymaster relayed it (or relayed it earlier and says so now).
        case submitted(transactionHash: Felt)
        case withdrawn(transactionHash: Felt)
        case withdrawalReverted(transactionHash: String, reason: String)
        case accepted
        case created(SKUTransaction)
        case polled(ChippiPayManager.PollOutcome)
        /// Whether a record is still there, after the earlier purchase ran.
        case recordChecked(PendingPurchase?)
        /// A call failed; `permanent` when the provider refused it for good.
        case failed(PurchaseFailure, permanent: Bool)
    }

    enum Effect: Sendable, Equatable {
        case quote(skuId: String, amount: String?)
        /// Refresh the vault balance and tell whether the paying account is linked.
        case checkBalance
        case linkPayer
        /// Write the first record; the purchase stops if it cannot be written.
        case record(PendingPurchase)
        /// Update the record, best effort.
        case keep(PendingPurchase)
        case forget
        case withdraw(fri: UInt256, to: Felt)
        /// Ask the paymaster again for a signed withdrawal whose answer was lost.
        case relay(account: Felt, execution: OutsideExecution, signature: [Felt])
        case awaitAcceptance(Felt)
        case createPurchase(PendingPurchase, vaultTransactionHash: String)
        case poll(PurchaseID)
        /// Read the record again (an earlier purchase ran first).
        case checkRecord
    }

    private(set) var step: PurchaseStep = .idle
    private(set) var failure: PurchaseFailure?
    private(set) var record: PendingPurchase?
    /// The order waiting for an earlier purchase to finish.
    private var queued: Order?
    /// The quote's STRK in fri, where it goes, and its amount as the provider wrote it.
    private var quote: (fri: UInt256, payTo: Felt, strk: String)?
    /// The order being bought.
    private var current: Order?

    mutating func handle(_ event: Event) -> [Effect] {
        switch event {
        case .start(let order, let hasWallet, let unfinished):
            failure = nil
            queued = nil
            guard hasWallet else { return stop(.noWallet) }
            guard order.sku.accepts(reference: order.reference) else { return stop(.referenceRequired(label: order.sku.reference.label)) }
            guard order.price != nil else { return stop(.amountRequired(min: order.sku.minAmount, max: order.sku.maxAmount)) }
            guard let unfinished else { return begin(order) }
            // A record of a purchase that never signed a payment is dropped: nothing was paid.
            guard unfinished.mayHavePaid else { return [.forget] + begin(order) }
            // The same purchase again (a retry after a failure at steps 4 to 6) carries on with the
            // one already paid for, never a second payment; another one waits for it.
            if !order.isSame(as: unfinished) { queued = order }
            return handle(.resume(unfinished))

        case .resume(let pending):
            record = pending
            if pending.vaultTransactionHash != nil { return finish() }
            guard let execution = pending.outsideExecution, let account = pending.account, let signature = pending.signature else {
                // Recorded before anything was signed: nothing was paid.
                record = nil
                return [.forget] + end(.idle)
            }
            // Signed and handed to the paymaster, answer unknown: asking again gives the hash of
            // the relay that happened, or relays it now.
            step = .withdrawing
            return [.relay(account: account, execution: execution, signature: signature)]

        case .quoted(let answer):
            guard let fri = answer.fri, let payTo = Felt(answer.paymentAddress) else { return stop(.malformedAnswer) }
            quote = (fri, payTo, answer.strkAmount)
            step = .checkingBalance
            return [.checkBalance]

        case .balanceChecked(let vault, let available, let linked):
            guard let quote else { return stop(.malformedAnswer) }
            guard let vault, vault >= quote.fri else {
                return stop(.insufficientVault(needed: quote.strk, available: available ?? "0"))
            }
            return linked ? writeRecord() : [.linkPayer]

        case .payerLinked:
            return writeRecord()

        case .recorded:
            guard let quote else { return stop(.malformedAnswer) }
            step = .withdrawing
            return [.withdraw(fri: quote.fri, to: quote.payTo)]

        case .signed(let account, let execution, let signature):
            record?.account = account
            record?.outsideExecution = execution
            record?.signature = signature
            return record.map { [.keep($0)] } ?? []

        case .submitted(let hash):
            record?.vaultTransactionHash = hash.description
            return record.map { [.keep($0)] } ?? []

        case .withdrawn(let hash):
            record?.vaultTransactionHash = hash.description
            return (record.map { [.keep($0)] } ?? []) + finish()

        case .withdrawalReverted(let hash, let reason):
            record = nil
            return [.forget] + stop(.withdrawalReverted(transactionHash: hash, reason: reason))

        case .accepted:
            guard let record, let hash = record.vaultTransactionHash else { return stop(.malformedAnswer) }
            step = .creatingTransaction(vaultTransactionHash: hash)
            return [.createPurchase(record, vaultTransactionHash: hash)]

        case .created(let transaction):
            // The provider has the purchase: the record has done its work.
            record = nil
            step = .polling(transactionId: transaction.transactionId)
            return [.forget, .poll(transaction.transactionId)]

        case .polled(let outcome):
            switch outcome {
            case .completed(let done): return end(.completed(done))
            case .failed(let failed):
                let failure = PurchaseFailure.notDelivered(reason: failed.failureReason)
                self.failure = failure
                return end(.failed(message: failure.message, transactionId: failed.transactionId))
            case .pending(let id): return end(.pending(transactionId: id))
            }

        case .recordChecked(let pending):
            guard let order = queued else { return [] }
            queued = nil
            if let pending {
                return stop(.earlierPurchaseUnfinished(skuId: pending.skuId, reference: pending.reference))
            }
            return begin(order)

        case .failed(let failure, let permanent):
            return fail(failure, permanent: permanent)
        }
    }

    // MARK: Transitions

    private mutating func begin(_ order: Order) -> [Effect] {
        current = order
        quote = nil
        failure = nil
        step = .quoting
        return [.quote(skuId: order.sku.id, amount: order.amount)]
    }

    private mutating func writeRecord() -> [Effect] {
        guard let order = current, let price = order.price, let quote else { return stop(.malformedAnswer) }
        let pending = PendingPurchase(skuId: order.sku.id, reference: order.reference, amount: price, fri: quote.fri.description,
                                      paymentAddress: quote.payTo.description)
        record = pending
        return [.record(pending)]
    }

    /// Steps 5 to 7 for a paid purchase: the provider takes only accepted payments.
    private mutating func finish() -> [Effect] {
        guard let hash = record?.vaultTransactionHash, let felt = Felt(hash) else { return stop(.malformedAnswer) }
        return [.awaitAcceptance(felt)]
    }

    /// A failure, by the step it happened in: what becomes of the record decides whether the
    /// purchase can be resumed.
    private mutating func fail(_ failure: PurchaseFailure, permanent: Bool) -> [Effect] {
        var effects: [Effect] = []
        switch step {
        case .withdrawing where record?.vaultTransactionHash == nil && !(record?.mayHavePaid ?? false):
            // Never signed: nothing to resume.
            record = nil
            effects = [.forget]
        case .withdrawing where permanent && record?.vaultTransactionHash == nil:
            // The paymaster refused a signed withdrawal for good (its window closed unrelayed, or
            // the nonce went elsewhere): nothing was paid for this purchase.
            record = nil
            effects = [.forget]
        case .creatingTransaction where permanent:
            // The provider refused the payment for good: nothing to resume.
            record = nil
            effects = [.forget]
        case .polling(let id):
            // The purchase exists; it goes on, and can be checked later.
            return end(.pending(transactionId: id))
        default:
            // Retryable: the record stays, resuming tries again. When it may have paid, the user
            // is told so: the STRK has left the vault and this order will finish.
            if let record, record.mayHavePaid {
                return stop(.paidNotFinished(vaultTransactionHash: record.vaultTransactionHash, reason: failure.message))
            }
        }
        return effects + stop(failure)
    }

    private mutating func stop(_ failure: PurchaseFailure) -> [Effect] {
        self.failure = failure
        return end(.failed(message: failure.message, transactionId: nil))
    }

    /// Ends the purchase at `step`; an order waiting for it starts once the record is read again.
    private mutating func end(_ step: PurchaseStep) -> [Effect] {
        self.step = step
        return queued == nil ? [] : [.checkRecord]
    }
}

@testable import ChippiPay
import Foundation
import PurseFormats
import Starknet
import Testing

/// The purchase's rules, without a provider or a node: when the record is written, kept or
/// forgotten, and which purchase goes first.
@Suite("ChippiPay: purchase state machine")
struct PurchaseStateMachineTests {
    static let telcel = try! JSONDecoder().decode(ChippiSKU.self, from: Data("""
        {"id": "telcel-50", "name": "Telcel 50", "provider": "Telcel", "category": "phone_topup", "currency": "MXN", "amount": "50",
         "reference": {"label": "10-digit phone number", "pattern": "^[0-9]{10}$", "example": "5512345678"}}
        """.utf8))
    static let quote = try! JSONDecoder().decode(ChippiQuote.self, from: Data("""
        {"sku_id": "telcel-50", "amount": "50", "currency": "MXN", "rate_mxn_per_strk": "20", "strk_amount": "2.5",
         "strk_amount_fri": "2500000000000000000", "payment_address": "0x123", "vault_address": "0x456", "gas_fee": "0", "expires_at": 1}
        """.utf8))
    static let fri = UInt256("2500000000000000000")!
    static let order = PurchaseStateMachine.Order(sku: telcel, reference: "5512345678", amount: nil)
    static let execution = OutsideExecution(caller: OutsideExecution.anyCaller, nonce: Felt(7), executeAfter: 0, executeBefore: 10, calls: [])

    static func transaction(_ status: PurchaseStatus) throws -> SKUTransaction {
        try JSONDecoder().decode(SKUTransaction.self, from: Data("""
            {"transaction_id": "chipi_tx_1", "status": "\(status.rawValue)", "sku_id": "telcel-50", "reference": "5512345678", "amount": "50",
             "currency": "MXN", "strk_amount": "2.5", "wallet_id": "wallet_1", "vault_transaction_hash": "0xabc", "created_at": 1, "updated_at": 1}
            """.utf8))
    }

    /// A machine that has quoted, checked and recorded `order`.
    func recorded() -> PurchaseStateMachine {
        var machine = PurchaseStateMachine()
        _ = machine.handle(.start(Self.order, hasWallet: true, unfinished: nil))
        _ = machine.handle(.quoted(Self.quote))
        _ = machine.handle(.balanceChecked(vault: Self.fri, available: "2.5", payerLinked: true))
        return machine
    }

    @Test func aPurchaseWalksItsSevenSteps() throws {
        var machine = PurchaseStateMachine()
        #expect(machine.handle(.start(Self.order, hasWallet: true, unfinished: nil)) == [.quote(skuId: "telcel-50", amount: nil)])
        #expect(machine.step == .quoting)
        #expect(machine.handle(.quoted(Self.quote)) == [.checkBalance] && machine.step == .checkingBalance)
        #expect(machine.handle(.balanceChecked(vault: Self.fri, available: "2.5", payerLinked: false)) == [.linkPayer])
        let effects = machine.handle(.payerLinked)
        guard case .record(let record)? = effects.first else { Issue.record("no record: \(effects)"); return }
        #expect(record.skuId == "telcel-50" && record.amount == "50" && record.fri == Self.fri.description && !record.mayHavePaid)
        #expect(machine.handle(.recorded) == [.withdraw(fri: Self.fri, to: Felt("0x123")!)] && machine.step == .withdrawing)
        guard case .keep(let signed)? = machine.handle(.signed(account: Felt(1), execution: Self.execution, signature: [Felt(2)])).first else {
            Issue.record("the signed withdrawal is not kept"); return
        }
        #expect(signed.outsideExecution == Self.execution && signed.mayHavePaid)
        let withdrawn = machine.handle(.withdrawn(transactionHash: Felt(0xabc)))
        #expect(withdrawn.last == .awaitAcceptance(Felt(0xabc)))
        guard case .createPurchase(_, let hash)? = machine.handle(.accepted).first else { Issue.record("no purchase created"); return }
        #expect(hash == Felt(0xabc).description && machine.step == .creatingTransaction(vaultTransactionHash: hash))
        let done = try Self.transaction(.completed)
        #expect(machine.handle(.created(done)) == [.forget, .poll("chipi_tx_1")])
        #expect(machine.handle(.polled(.completed(done))) == [] && machine.step == .completed(done) && machine.failure == nil)
    }

    @Test func refusalsBeforeAnythingIsPaidSendNothing() {
        var machine = PurchaseStateMachine()
        #expect(machine.handle(.start(Self.order, hasWallet: false, unfinished: nil)) == [])
        #expect(machine.failure == .noWallet && machine.step == .failed(message: "Create a ChippiPay wallet first", transactionId: nil))
        let wrongPhone = PurchaseStateMachine.Order(sku: Self.telcel, reference: "55", amount: nil)
        #expect(machine.handle(.start(wrongPhone, hasWallet: true, unfinished: nil)) == [])
        #expect(machine.failure == .referenceRequired(label: "10-digit phone number"))
        _ = machine.handle(.start(Self.order, hasWallet: true, unfinished: nil))
        _ = machine.handle(.quoted(Self.quote))
        #expect(machine.handle(.balanceChecked(vault: UInt256(1), available: "0.000000000000000001", payerLinked: true)) == [])
        #expect(machine.failure == .insufficientVault(needed: "2.5", available: "0.000000000000000001"))
    }

    @Test func aWithdrawalThatFailsBeforeSigningForgetsTheRecord_afterSigningKeepsIt() {
        var unsigned = recorded()
        _ = unsigned.handle(.recorded)
        #expect(unsigned.handle(.failed(.call(message: "offline", transient: true), permanent: false)) == [.forget])
        var signed = recorded()
        _ = signed.handle(.recorded)
        _ = signed.handle(.signed(account: Felt(1), execution: Self.execution, signature: [Felt(2)]))
        #expect(signed.handle(.failed(.call(message: "offline", transient: true), permanent: false)) == [], "kept for resuming")
        #expect(signed.record?.outsideExecution == Self.execution)
    }

    @Test func resumingRelaysASignedWithdrawalAndDropsAnUnsignedRecord() {
        var pending = PendingPurchase(skuId: "telcel-50", reference: "5512345678", amount: "50", fri: Self.fri.description, paymentAddress: "0x123")
        var machine = PurchaseStateMachine()
        #expect(machine.handle(.resume(pending)) == [.forget] && machine.step == .idle)
        pending.account = Felt(1)
        pending.outsideExecution = Self.execution
        pending.signature = [Felt(2)]
        #expect(machine.handle(.resume(pending)) == [.relay(account: Felt(1), execution: Self.execution, signature: [Felt(2)])])
        #expect(machine.handle(.failed(.call(message: "window closed", transient: false), permanent: true)) == [.forget], "refused for good")
        var transient = PurchaseStateMachine()
        _ = transient.handle(.resume(pending))
        #expect(transient.handle(.failed(.call(message: "offline", transient: true), permanent: false)) == [], "tried again later")
        pending.vaultTransactionHash = Felt(0xabc).description
        var paid = PurchaseStateMachine()
        #expect(paid.handle(.resume(pending)) == [.awaitAcceptance(Felt(0xabc))])
    }

    @Test func anotherOrderWaitsForTheUnfinishedOne() {
        var paid = PendingPurchase(skuId: "cfe", reference: "123456789012", amount: "300", fri: "1", paymentAddress: "0x123")
        paid.vaultTransactionHash = Felt(0xdef).description
        var machine = PurchaseStateMachine()
        #expect(machine.handle(.start(Self.order, hasWallet: true, unfinished: paid)) == [.awaitAcceptance(Felt(0xdef))])
        // The earlier purchase fails for now (its record stays): the new order cannot start.
        #expect(machine.handle(.failed(.call(message: "offline", transient: true), permanent: false)) == [.checkRecord])
        #expect(machine.handle(.recordChecked(paid)) == [])
        #expect(machine.failure == .earlierPurchaseUnfinished(skuId: "cfe", reference: "123456789012"))
        // Once it is finished, the new order goes.
        _ = machine.handle(.start(Self.order, hasWallet: true, unfinished: paid))
        _ = machine.handle(.accepted)
        _ = machine.handle(.created(try! Self.transaction(.pending)))
        #expect(machine.handle(.polled(.pending(transactionId: "chipi_tx_1"))) == [.checkRecord])
        #expect(machine.handle(.recordChecked(nil)) == [.quote(skuId: "telcel-50", amount: nil)] && machine.step == .quoting)
    }

    @Test func theSameOrderAgainCarriesOnWithThePaidOne_andAnUnsignedRecordIsDropped() {
        var paid = PendingPurchase(skuId: "telcel-50", reference: "5512345678", amount: "50", fri: Self.fri.description, paymentAddress: "0x123")
        var machine = PurchaseStateMachine()
        #expect(machine.handle(.start(Self.order, hasWallet: true, unfinished: paid)) == [.forget, .quote(skuId: "telcel-50", amount: nil)])
        paid.vaultTransactionHash = Felt(0xabc).description
        #expect(machine.handle(.start(Self.order, hasWallet: true, unfinished: paid)) == [.awaitAcceptance(Felt(0xabc))])
        #expect(machine.handle(.failed(.call(message: "refused", transient: false), permanent: true)) == [], "no order waits")
    }

    @Test func aProviderRefusalForgetsTheRecord_aPollThatFailsLeavesThePurchasePending() throws {
        var machine = recorded()
        _ = machine.handle(.recorded)
        _ = machine.handle(.withdrawn(transactionHash: Felt(0xabc)))
        _ = machine.handle(.accepted)
        #expect(machine.handle(.failed(.call(message: "unverified", transient: false), permanent: true)) == [.forget])
        var polling = recorded()
        _ = polling.handle(.recorded)
        _ = polling.handle(.withdrawn(transactionHash: Felt(0xabc)))
        _ = polling.handle(.accepted)
        _ = polling.handle(.created(try Self.transaction(.pending)))
        _ = polling.handle(.failed(.call(message: "offline", transient: true), permanent: false))
        #expect(polling.step == .pending(transactionId: "chipi_tx_1"))
        var failed = recorded()
        _ = failed.handle(.recorded)
        _ = failed.handle(.withdrawn(transactionHash: Felt(0xabc)))
        _ = failed.handle(.accepted)
        _ = failed.handle(.created(try Self.transaction(.pending)))
        _ = failed.handle(.polled(.failed(try Self.transaction(.failed))))
        #expect(failed.failure == .notDelivered(reason: nil) && failed.step == .failed(message: "The purchase failed", transactionId: "chipi_tx_1"))
    }
}

import Foundation
import HTTPTypes
import PurseDatabase
import PurseFormats
import SQLKit
import PurseHTTP
import PurseServer
import Starknet

/// The provider's side of the chain: checks that a vault transaction paid it, and sends refunds
/// from its payment account. Talks to Starknet only through JSON-RPC (`StarknetProvider`), to
/// `STARKNET_RPC_URL` or, in the sandbox, to the node in this process.
struct VaultPayments: Sendable {
    let provider: StarknetProvider
    let account: StarknetAccount
    let vaultAddress: Felt
    let tokenAddress: Felt
    /// Whether refunds of vault payments go back into the payer's vault balance
    /// (`deposit_for`), or to the payer's account (`CHIPPI_REFUNDS=account`, for a vault without it).
    var refundsIntoVault = true
    let sender = SerialRunner()

    var paymentAddress: Felt { account.address }

    /// What a verified vault transaction paid.
    struct Payment: Sendable {
        var amount: UInt256
        var payer: Felt
        /// Whether it came out of the payer's vault balance (else straight from the account).
        var fromVault: Bool
    }

    static let withdrawKey = Selector.from(name: "Withdraw")
    static let depositKey = Selector.from(name: "Deposit")
    static let transferKey = Selector.from(name: "Transfer")

    /// The STRK `hash` paid to the payment address — a vault `Withdraw` to it, or a plain STRK
    /// `Transfer` to it — and who paid it, when the transaction succeeded and was accepted. Each
    /// failure is a 422 naming the check. Whether it is enough is the caller's to judge: a payment
    /// it refuses is refunded (``ProviderRoutes/purchase(_:body:merchant:)``).
    func verify(_ hash: Felt) async throws -> Payment {
        let receipt: TransactionReceipt
        do {
            receipt = try await provider.transactionReceipt(hash)
        } catch let error as StarknetRPCError where error.kind == .transactionNotFound {
            throw ProviderError.unverified("vault_transaction_hash was not found on Starknet")
        } catch let error as StarknetRPCError {
            throw APIError(.badGateway, "The Starknet node refused the receipt query: \(error.message)")
        } catch let error as PurseError {
            throw APIError(.badGateway, "The Starknet node cannot be reached: \(error.message)")
        }
        guard receipt.succeeded else {
            throw ProviderError.unverified("The vault transaction was reverted: \(receipt.revertReason ?? "no reason given")")
        }
        guard receipt.isAccepted else { throw ProviderError.unverified("The vault transaction is not accepted on L2 yet; retry once it is") }
        var paid = UInt256.zero
        var payer: Felt?
        for event in receipt.events where event.data.count == 2 {
            guard let amount = UInt256(low: event.data[0], high: event.data[1]) else { continue }
            if event.fromAddress == vaultAddress, event.keys.count == 3, event.keys[0] == Self.withdrawKey, event.keys[2] == paymentAddress {
                paid = paid.adding(amount) ?? paid
                payer = payer ?? event.keys[1]
            } else if event.fromAddress == tokenAddress, event.keys.count == 3, event.keys[0] == Self.transferKey, event.keys[2] == paymentAddress,
                      event.keys[1] != vaultAddress {
                paid = paid.adding(amount) ?? paid
                payer = payer ?? event.keys[1]
            }
        }
        guard let payer, paid > .zero else {
            throw ProviderError.unverified("The vault transaction does not pay the provider's payment address \(paymentAddress)")
        }
        return Payment(amount: paid, payer: payer, fromVault: paidFromVault(receipt))
    }

    /// Checks that `signature` is `account`'s over `hash`, by the account's own
    /// `is_valid_signature` (whatever kind of account it is): 404 when no account is deployed
    /// there, 422 when the account refuses it or cannot check it, 502 when the node is out of reach.
    func checkSignature(of account: Felt, over hash: Felt, signature: [Felt], what: String) async throws {
        let valid: [Felt]
        do {
            valid = try await provider.call(Call(to: account, entrypoint: "is_valid_signature", calldata: [hash, Felt(UInt64(signature.count))] + signature))
        } catch let error as StarknetRPCError where error.kind == .contractNotFound {
            throw APIError.notFound("No account is deployed at \(account)")
        } catch let error as StarknetRPCError {
            throw ProviderError.unverified("The account cannot check the signature: \(error.message)")
        } catch {
            throw APIError(.badGateway, "The Starknet node cannot be reached")
        }
        guard valid.first == Felt(shortString: "VALID") || valid.first == .one else {
            throw ProviderError.unverified("The signature is not the account's over \(what)")
        }
    }

    /// Sends `amount` of STRK back to `payer`; returns the refund's transaction hash once accepted.
    /// Whether a payment's transaction took the STRK out of the vault (else straight from the account).
    func paidFromVault(_ receipt: TransactionReceipt) -> Bool {
        receipt.events.contains { $0.fromAddress == vaultAddress && $0.keys.count == 3 && $0.keys[0] == Self.withdrawKey && $0.keys[2] == paymentAddress }
    }

    /// Sends `amount` back where it came from: into the payer's vault balance when the purchase
    /// was paid from the vault (approve, then `deposit_for`), else to the payer's account.
    func refund(_ amount: UInt256, to payer: Felt, intoVault: Bool) async throws -> Felt {
        let token = ERC20(address: tokenAddress, provider: provider)
        let calls = intoVault && refundsIntoVault
            ? Starknet.VaultContract(address: vaultAddress, token: token).depositCalls(for: payer, amount)
            : [token.transfer(to: payer, amount)]
        let hash = try await relay(calls)
        let receipt = try await provider.waitForTransaction(hash, poller: Poller(interval: .milliseconds(200), multiplier: 1.5, maxInterval: .seconds(5), maxAttempts: 30))
        guard receipt.succeeded else { throw RefundError(reason: receipt.revertReason ?? "reverted") }
        return hash
    }

    /// Relays an account's outside execution once: the transaction sent the first time for
    /// (account, nonce) is the answer to every later request for it, so a client whose answer was
    /// lost asks again and learns the hash instead of losing track of its payment.
    ///
    /// A new relay draws on `budget` before anything is sent: one relay and the transaction's max
    /// fee from the account's and the merchant's spending of the day (``RelayBudget/draw(fee:now:in:)``),
    /// or 429. A transaction the node refuses gives its draw back.
    func relayOnce(account: Felt, nonce: Felt, calls: [Call], budget: RelayBudget, database: Database,
                   now: @escaping @Sendable () -> Date) async throws -> (hash: Felt, replayed: Bool) {
        let provider = self.account
        return try await sender.run {
            let row = try await database.read { db in
                try await db.raw("SELECT transaction_hash FROM chippi_relays WHERE account = \(bind: account.description) AND nonce = \(bind: nonce.description)").first()
            }
            if let row, let hash = Felt(try row.decode(column: "transaction_hash", as: String.self)) {
                return (hash, true)
            }
            let day = String(JavaScriptDate.string(epochMillis: now().epochMillis).prefix(10))
            var hash: Felt?
            // A nonce the node refuses (another replica sent from the account meanwhile): the
            // draw is given back and the transaction made again with the node's nonce.
            for attempt in 1...5 where hash == nil {
                let transaction = try await provider.prepare(calls)
                let fee = Self.nanoSTRK(transaction.common.resourceBounds.maxFee) ?? .max
                try await database.transaction { db in try await budget.draw(account: account, fee: fee, day: day, in: db) }
                do {
                    hash = try await provider.send(transaction)
                } catch let error as StarknetRPCError where error.kind == .invalidNonce && attempt < 5 {
                    try? await database.transaction { db in try await budget.giveBack(account: account, fee: fee, day: day, in: db) }
                } catch {
                    try? await database.transaction { db in try await budget.giveBack(account: account, fee: fee, day: day, in: db) }
                    throw error
                }
            }
            guard let hash else { throw PurseError.server(status: 503, message: "the relayer's nonce kept moving: try again") }
            try await database.transaction { db in
                try await db.raw("""
                    INSERT INTO chippi_relays (account, nonce, transaction_hash, created_at, merchant_id)
                    VALUES (\(bind: account.description), \(bind: nonce.description), \(bind: hash.description), \(bind: now().epochMillis), \(bind: budget.merchant))
                    """).run()
            }
            return (hash, false)
        }
    }

    /// Fri in whole nano-STRK, rounded up; nil past Int64.
    static func nanoSTRK(_ fri: UInt256) -> Int64? {
        let digits = fri.description
        guard digits.count <= 27 else { return nil }
        let whole = digits.count > 9 ? Int64(digits.dropLast(9)) ?? 0 : 0
        let rest = digits.count > 9 ? String(digits.suffix(9)) : digits
        return whole + (rest.contains { $0 != "0" } ? 1 : 0)
    }

    /// Sends `calls` from the provider's account, one transaction at a time (each takes the
    /// next nonce, so concurrent sends must not interleave); returns the hash once the node has it.
    func relay(_ calls: [Call]) async throws -> Felt {
        let account = account
        return try await sender.run { try await account.execute(calls) }
    }

    /// How many relays an account and a merchant may have sponsored in any 24 hours.
    /// What the paymaster may sponsor per account and per merchant and UTC day: relays, and fees
    /// (nano-STRK, each relay counted at its transaction's max fee).
    struct RelayBudget: Sendable {
        var merchant: String
        var perAccount: Int
        var perMerchant: Int
        var feePerAccount: Int64
        var feePerMerchant: Int64

        /// Takes one relay and `fee` from both of the day's rows, or neither: each row moves only
        /// by a conditional update that keeps it within its limits, so concurrent draws on any
        /// replicas never pass them. Throws 429 when either is spent.
        func draw(account: Felt, fee: Int64, day: String, in db: any DatabaseSession) async throws {
            for (scope, relays, fees, whose) in [("account:" + account.description, perAccount, feePerAccount, "account \(account)"),
                                                 ("merchant:" + merchant, perMerchant, feePerMerchant, "this merchant")] {
                guard fee <= fees else {
                    throw APIError.tooManyRequests("The paymaster's daily fee budget for \(whose) cannot cover this transaction; pay the fee yourself", retryAfter: 3600)
                }
                try await db.raw("INSERT INTO chippi_paymaster_spend (scope, day) VALUES (\(bind: scope), \(bind: day)) ON CONFLICT (scope, day) DO NOTHING").run()
                let drawn = try await db.raw("""
                    UPDATE chippi_paymaster_spend SET relays = relays + 1, fee_nano = fee_nano + \(bind: fee)
                    WHERE scope = \(bind: scope) AND day = \(bind: day) AND relays < \(bind: relays) AND fee_nano <= \(bind: fees - fee)
                    RETURNING relays
                    """).first()
                guard drawn != nil else {
                    throw APIError.tooManyRequests("The paymaster's daily budget for \(whose) is spent; pay the fee yourself or try again tomorrow", retryAfter: 3600)
                }
            }
        }

        /// Returns a draw whose transaction was never sent.
        func giveBack(account: Felt, fee: Int64, day: String, in db: any DatabaseSession) async throws {
            for scope in ["account:" + account.description, "merchant:" + merchant] {
                try await db.raw("""
                    UPDATE chippi_paymaster_spend SET relays = relays - 1, fee_nano = fee_nano - \(bind: fee)
                    WHERE scope = \(bind: scope) AND day = \(bind: day) AND relays >= 1 AND fee_nano >= \(bind: fee)
                    """).run()
            }
        }
    }

    struct RefundError: Error, CustomStringConvertible {
        var reason: String
        var description: String { "the refund was reverted: \(reason)" }
    }
}

/// Runs operations one after another, in the order they arrive.
actor SerialRunner {
    private var tail: Task<Void, Never>?

    func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let previous = tail
        let task = Task<T, any Error> {
            await previous?.value
            return try await operation()
        }
        tail = Task { _ = try? await task.value }
        return try await task.value
    }
}

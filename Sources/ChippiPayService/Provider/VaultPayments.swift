import Foundation
import HTTPTypes
import PurseDatabase
import SQLKit
import PurseKit
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
    let sender = SerialRunner()

    var paymentAddress: Felt { account.address }

    /// What a verified vault transaction paid.
    struct Payment: Sendable {
        var amount: UInt256
        var payer: Felt
    }

    static let withdrawKey = Selector.from(name: "Withdraw")
    static let transferKey = Selector.from(name: "Transfer")

    /// The STRK `hash` paid to the payment address — a vault `Withdraw` to it, or a plain STRK
    /// `Transfer` to it — when that is at least `required` and the transaction succeeded and was
    /// accepted. Each failure is a 422 naming the check.
    func verify(_ hash: Felt, required: UInt256) async throws -> Payment {
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
        guard let payer else {
            throw ProviderError.unverified("The vault transaction does not pay the provider's payment address \(paymentAddress)")
        }
        guard paid >= required else {
            throw ProviderError.unverified("The vault transaction paid \(STRKAmount.format(paid)) STRK; the purchase needs \(STRKAmount.format(required)) STRK")
        }
        return Payment(amount: paid, payer: payer)
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
    func refund(_ amount: UInt256, to payer: Felt) async throws -> Felt {
        let transfer = ERC20(address: tokenAddress, provider: provider).transfer(to: payer, amount)
        let hash = try await relay([transfer])
        let receipt = try await provider.waitForTransaction(hash, poller: Poller(interval: .milliseconds(200), multiplier: 1.5, maxInterval: .seconds(5), maxAttempts: 30))
        guard receipt.succeeded else { throw RefundError(reason: receipt.revertReason ?? "reverted") }
        return hash
    }

    /// Relays an account's outside execution once: the transaction sent the first time for
    /// (account, nonce) is the answer to every later request for it, so a client whose answer was
    /// lost asks again and learns the hash instead of losing track of its payment.
    ///
    /// A new relay counts against `budget`: past the account's or the merchant's relays in the
    /// last 24 hours it is refused (429) before anything is sent. Relays run one at a time in this
    /// process, so a burst cannot pass the budget here; replicas may each take the last place.
    func relayOnce(account: Felt, nonce: Felt, calls: [Call], budget: RelayBudget, database: Database,
                   now: @escaping @Sendable () -> Date) async throws -> (hash: Felt, replayed: Bool) {
        let provider = self.account
        return try await sender.run {
            let since = now().addingTimeInterval(-86_400).epochMillis
            let (row, spent) = try await database.read { db in
                (try await db.raw("SELECT transaction_hash FROM chippi_relays WHERE account = \(bind: account.description) AND nonce = \(bind: nonce.description)").first(),
                 try await db.raw("""
                    SELECT (SELECT COUNT(*) FROM chippi_relays WHERE account = \(bind: account.description) AND created_at > \(bind: since)) AS by_account,
                           (SELECT COUNT(*) FROM chippi_relays WHERE merchant_id = \(bind: budget.merchant) AND created_at > \(bind: since)) AS by_merchant
                    """).first())
            }
            if let row, let hash = Felt(try row.decode(column: "transaction_hash", as: String.self)) {
                return (hash, true)
            }
            if let spent {
                if try spent.decode(column: "by_account", as: Int.self) >= budget.perAccount {
                    throw APIError.tooManyRequests("The paymaster's daily budget for account \(account) is spent; pay the fee yourself or try again later", retryAfter: 3600)
                }
                if try spent.decode(column: "by_merchant", as: Int.self) >= budget.perMerchant {
                    throw APIError.tooManyRequests("The paymaster's daily budget for this merchant is spent; try again later", retryAfter: 3600)
                }
            }
            let hash = try await provider.execute(calls)
            try await database.transaction { db in
                try await db.raw("""
                    INSERT INTO chippi_relays (account, nonce, transaction_hash, created_at, merchant_id)
                    VALUES (\(bind: account.description), \(bind: nonce.description), \(bind: hash.description), \(bind: now().epochMillis), \(bind: budget.merchant))
                    """).run()
            }
            return (hash, false)
        }
    }

    /// Sends `calls` from the provider's account, one transaction at a time (each takes the
    /// next nonce, so concurrent sends must not interleave); returns the hash once the node has it.
    func relay(_ calls: [Call]) async throws -> Felt {
        let account = account
        return try await sender.run { try await account.execute(calls) }
    }

    /// How many relays an account and a merchant may have sponsored in any 24 hours.
    struct RelayBudget: Sendable {
        var merchant: String
        var perAccount: Int
        var perMerchant: Int
    }

    struct RefundError: Error, CustomStringConvertible {
        var reason: String
        var description: String { "the refund was reverted: \(reason)" }
    }
}

/// JSON-RPC to the sandbox node in this process: the same request and response documents as
/// over HTTP, without the socket.
struct InProcessRPCTransport: HTTPTransport {
    let routes: StarknetRPCRoutes

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let answer = await routes.answer(request.body ?? Data())
        return TransportResponse(status: 200, headers: ["Content-Type": "application/json"], body: answer)
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

import ChippiPayVocabulary
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PurseDatabase
import PurseFormats
import PurseServer
import Starknet

/// Gasless purchases (the seed's "Gas fee: FREE"): the provider's relayer submits the user's
/// vault withdrawal as a SNIP-9 outside execution and pays its fee.
///
/// - `POST /v1/paymaster/build` `{account, calls}` → `{outside_execution, typed_data, message_hash}`:
///   the relayer as the only caller, a fresh nonce, a five-minute window.
/// - `POST /v1/paymaster/execute` `{account, outside_execution, signature}` → 202 `{transaction_hash}`;
///   the same execution again → 200 with the same hash (a client whose answer was lost asks again).
///
/// Only what the provider is paid by is sponsored: calls to the vault's `withdraw` with the
/// payment address as recipient. The signature is checked with the account's own
/// `is_valid_signature` and the transaction's fee estimated before anything is sent, so a request
/// that would revert costs the relayer nothing.
struct PaymasterRoutes: Sendable {
    let routes: ProviderRoutes
    var payments: VaultPayments { routes.payments }

    static let windowSeconds: UInt64 = 300

    struct BuildRequest: Decodable {
        var account: String
        var calls: [Call]
    }

    struct BuildResponse: Encodable {
        var outside_execution: OutsideExecution
        var typed_data: TypedData
        var message_hash: String
    }

    struct ExecuteRequest: Decodable {
        var account: String
        var outside_execution: OutsideExecution
        var signature: [Felt]
    }

    func mount(on group: RouterGroup<PurseRequestContext>) {
        group.post("paymaster/build") { request, context in
            var request = request
            let caller = try await routes.caller(request, area: .paymaster)
            let input = try JSONBody.decode(BuildRequest.self, from: try await request.collectJSONBody(context: context))
            let account = try Self.address(input.account, "account")
            try await checkSponsored(account, for: caller)
            let calls = try sponsored(input.calls)
            let now = UInt64(max(0, routes.environment.now().timeIntervalSince1970))
            let execution = OutsideExecution(caller: payments.paymentAddress, nonce: Felt(bigEndianBytes: [0] + RandomID.bytes(31))!,
                                             executeAfter: now - 60, executeBefore: now + Self.windowSeconds, calls: calls)
            let chainId = try await chain()
            return try Response.json(BuildResponse(outside_execution: execution, typed_data: execution.typedData(chainId: chainId),
                                                   message_hash: execution.messageHash(chainId: chainId, account: account).description))
        }
        group.post("paymaster/execute") { request, context in
            var request = request
            let caller = try await routes.caller(request, area: .paymaster)
            let merchant = caller.merchant
            let input = try JSONBody.decode(ExecuteRequest.self, from: try await request.collectJSONBody(context: context))
            let account = try Self.address(input.account, "account")
            try await checkSponsored(account, for: caller)
            var execution = input.outside_execution
            execution.calls = try sponsored(input.outside_execution.calls)
            guard execution.caller == payments.paymentAddress else {
                throw ProviderError.invalid("outside_execution must be one /v1/paymaster/build made (caller: the relayer)")
            }
            let signature = input.signature
            guard (1...8).contains(signature.count) else { throw ProviderError.invalid("signature must be 1 to 8 felts") }
            let (hash, replayed) = try await relay(execution, account: account, signature: signature, merchant: merchant.id)
            return try Response.json(["transaction_hash": hash.description], status: replayed ? .ok : .accepted)
        }
    }

    /// A user token has the relayer pay only for its own user: the wallet's account, or an account
    /// linked to that wallet (403 otherwise). The merchant's secret key reaches any account.
    func checkSponsored(_ account: Felt, for caller: Caller) async throws {
        guard let user = caller.user else { return }
        let store = WalletStore()
        let allowed = try await routes.environment.database.read { db -> Bool in
            guard let wallet = try await store.wallet(ofUser: user, merchant: caller.merchant.id, in: db), wallet.status == .active else { return false }
            if wallet.address.flatMap({ Felt($0) }) == account { return true }
            return try await store.isLinkedPayer(account.description, of: wallet.id, in: db)
        }
        guard allowed else {
            throw APIError(.forbidden, "A user token has the paymaster pay for its own wallet and the accounts linked to it only")
        }
    }

    /// The calls, when every one is a vault withdrawal to the payment address of at least the
    /// cheapest service's price at the current rate: what the provider is paid by, never a
    /// transfer of dust whose fee the relayer would pay for nothing.
    func sponsored(_ calls: [Call]) throws -> [Call] {
        guard (1...4).contains(calls.count) else { throw ProviderError.invalid("calls must hold 1 to 4 calls") }
        let minimum = routes.configuration.rate.fri(forCentavos: SKUCatalogue.all.map(\.minimum).min() ?? 1)
        for call in calls {
            guard call.to == payments.vaultAddress, call.selector == Selector.from(name: "withdraw"), call.calldata.count == 3,
                  call.calldata[0] == payments.paymentAddress else {
                throw APIError(.forbidden, "The paymaster sponsors vault withdrawals to the payment address \(payments.paymentAddress) only")
            }
            guard let amount = UInt256(low: call.calldata[1], high: call.calldata[2]), amount >= minimum else {
                throw APIError(.forbidden, "The paymaster sponsors withdrawals of at least \(STRKAmount.format(minimum)) STRK (the cheapest service's quote)")
            }
        }
        return calls
    }

    /// Checks the signature with the account, then submits `execute_from_outside_v2` from the relayer.
    func relay(_ execution: OutsideExecution, account: Felt, signature: [Felt], merchant: String) async throws -> (Felt, Bool) {
        let chainId = try await chain()
        let hash = execution.messageHash(chainId: chainId, account: account)
        try await payments.checkSignature(of: account, over: hash, signature: signature, what: "this outside execution")
        let call = Call(to: account, entrypoint: "execute_from_outside_v2", calldata: execution.calldata(signature: signature))
        do {
            let environment = routes.environment
            let configuration = routes.configuration
            let budget = VaultPayments.RelayBudget(merchant: merchant, perAccount: configuration.relaysPerAccountDay, perMerchant: configuration.relaysPerMerchantDay,
                                                   feePerAccount: configuration.feePerAccountDayNano, feePerMerchant: configuration.feePerMerchantDayNano)
            return try await payments.relayOnce(account: account, nonce: execution.nonce, calls: [call], budget: budget, database: environment.database,
                                                now: { environment.now() })
        } catch let error as StarknetRPCError {
            if error.kind == .contractError, let reason = error.revertReason { throw ProviderError.unverified("The outside execution would fail: \(reason)") }
            throw APIError(.badGateway, "The Starknet node refused the relayed transaction: \(error.message)")
        }
    }

    func chain() async throws -> Felt {
        do { return try await payments.provider.chainId() } catch {
            throw APIError(.badGateway, "The Starknet node cannot be reached")
        }
    }

    static func address(_ text: String, _ field: String) throws -> Felt {
        guard let felt = Felt(text), !felt.isZero, ContractAddress.isValid(felt) else {
            throw ProviderError.invalid("\(field) must be a contract address (0x-hex)")
        }
        return felt
    }
}

import HTTPTypes
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import PurseDatabase
import PurseServer
import SQLKit
import Starknet

/// The sandbox's developer routes: `POST /sandbox/starknet/mint` (the faucet: STRK to any
/// address, like starknet-devnet's `/mint`) and `GET /sandbox/starknet/accounts` (the
/// predeployed accounts with their keys, the STRK token and the vault).
struct SandboxFaucetRoutes: Sendable {
    let node: SandboxNode
    /// The ChippiPay provider's account (where purchases are paid), listed for developers.
    let paymentAddress: Felt

    /// At most this much per mint (1,000,000 STRK).
    static let maxMint = UInt256("1000000000000000000000000")!

    struct MintRequest: Decodable {
        var address: String
        /// STRK as decimal text ("10", "2.5").
        var amount: String
    }

    struct MintResponse: Codable {
        var address: String
        var minted: String
        var balance: String
        var balance_fri: String
    }

    struct AccountsResponse: Codable {
        var chain_id: String
        var rpc_path: String
        var strk_address: String
        var vault_address: String
        var account_class_hash: String
        var chippi_payment_address: String
        var accounts: [SandboxNode.PredeployedAccount]
    }

    func mount(on router: Router<PurseRequestContext>) {
        router.get("sandbox/starknet/accounts") { _, _ in
            try Response.json(AccountsResponse(
                chain_id: node.chainId.shortString ?? node.chainId.description, rpc_path: "/starknet/rpc",
                strk_address: SandboxNode.strkAddress.description, vault_address: SandboxNode.vaultAddress.description,
                account_class_hash: SandboxClass.account.classHash.description, chippi_payment_address: paymentAddress.description,
                accounts: node.predeployedAccounts))
        }
        router.post("sandbox/starknet/mint") { request, context in
            var request = request
            let key: String
            do { key = try IdempotencyStore.validate(key: request.headers[.idempotencyKey]) } catch {
                throw APIError(.badRequest, "An Idempotency-Key header (1 to 255 printable ASCII characters) is required")
            }
            let body = try await request.collectJSONBody(context: context)
            let mint = try JSONBody.decode(MintRequest.self, from: body)
            guard let address = Felt(mint.address), ContractAddress.isValid(address), !address.isZero else {
                throw APIError(.badRequest, "Field 'address' must be a contract address (0x-prefixed hex below 2^251 - 256)")
            }
            let amount: UInt256
            do { amount = try STRKAmount.parse(mint.amount) } catch { throw APIError(.badRequest, "Field 'amount': \(error)") }
            guard amount > .zero, amount <= Self.maxMint else { throw APIError(.badRequest, "Field 'amount' must be more than 0 and at most 1000000 STRK") }
            let requestHash = IdempotencyStore.requestHash(scope: "POST /sandbox/starknet/mint", body: Data(buffer: body))
            let (status, data) = try await node.mint(to: address, amount: amount, idempotencyKey: key, requestHash: requestHash)
            var headers: HTTPFields = [:]
            if status == 200 { headers[.idempotentReplayed] = "true" }
            return Response.jsonData(data, status: status == 200 ? .ok : .created, headers: headers)
        }
    }
}

import HTTPTypes
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import PurseDatabase
import PurseHTTP
import PurseServer
import SQLKit
import Starknet

/// The sandbox's developer routes: `POST /sandbox/starknet/mint` (the faucet: STRK to any
/// address, like starknet-devnet's `/mint`) and `GET /sandbox/starknet/accounts` (the
/// predeployed accounts with their keys, the STRK token and the vault).
package struct SandboxFaucetRoutes: Sendable {
    let node: SandboxNode
    /// More addresses the accounts document lists, by field name: the host's own accounts
    /// (ChippiPay lists `chippi_payment_address`, where purchases are paid).
    let listed: [(field: String, address: Felt)]

    package init(node: SandboxNode, listed: [(field: String, address: Felt)] = []) {
        self.node = node
        self.listed = listed
    }

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

    struct AccountsResponse: Encodable {
        var chain_id: String
        var rpc_path: String
        var strk_address: String
        var vault_address: String
        var account_class_hash: String
        var listed: [(field: String, address: Felt)]
        var accounts: [SandboxNode.PredeployedAccount]

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(_ stringValue: String) { self.stringValue = stringValue }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(chain_id, forKey: Key("chain_id"))
            try container.encode(rpc_path, forKey: Key("rpc_path"))
            try container.encode(strk_address, forKey: Key("strk_address"))
            try container.encode(vault_address, forKey: Key("vault_address"))
            try container.encode(account_class_hash, forKey: Key("account_class_hash"))
            for (field, address) in listed { try container.encode(address.description, forKey: Key(field)) }
            try container.encode(accounts, forKey: Key("accounts"))
        }
    }

    package func mount(on router: Router<PurseRequestContext>) {
        router.get("sandbox/starknet/accounts") { _, _ in
            try Response.json(AccountsResponse(
                chain_id: node.chainId.shortString ?? node.chainId.description, rpc_path: "/starknet/rpc",
                strk_address: SandboxNode.strkAddress.description, vault_address: SandboxNode.vaultAddress.description,
                account_class_hash: SandboxClass.account.classHash.description, listed: listed,
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

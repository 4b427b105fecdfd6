import ChippiPayService
import PurseHTTP
import StarknetDevnet
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PurseFormats
import PurseServer
import PurseTestSupport
import Testing
@testable import Starknet

/// The sandbox node through the real client (provider, account, contract wrappers) over the
/// in-process router.
@Suite("Starknet: the sandbox node")
struct SandboxNodeTests {
    struct Harness: Sendable {
        let provider: StarknetProvider
        let transport: RouterTransport
        let client: any TestClientProtocol
        let accounts: [(address: Felt, key: StarkKey)]
        let vault: Felt
        let paymentAddress: Felt

        var strk: ERC20 { ERC20(provider: provider) }
        var vaultContract: VaultContract { VaultContract(address: vault, token: strk) }

        func account(_ index: Int) -> StarknetAccount {
            StarknetAccount(address: accounts[index].address, key: accounts[index].key, provider: provider)
        }

        func rpc(_ body: String) async throws -> JSONValue {
            let response = try await client.execute(uri: "/starknet/rpc", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: body))
            #expect(response.status == .ok)
            return try JSONDecoder().decode(JSONValue.self, from: Data(buffer: response.body))
        }

        func mint(_ address: Felt, _ amount: String, key: String = UUID().uuidString) async throws -> (HTTPResponse.Status, JSONValue) {
            let response = try await client.execute(uri: "/sandbox/starknet/mint", method: .post,
                                                    headers: [.contentType: "application/json", .idempotencyKey: key],
                                                    body: ByteBuffer(string: #"{"address":"\#(address)","amount":"\#(amount)"}"#))
            return (response.status, try JSONDecoder().decode(JSONValue.self, from: Data(buffer: response.body)))
        }
    }

    static func withNode(_ body: @Sendable (Harness) async throws -> Void) async throws {
        var sandbox = StarknetSandboxConfiguration()
        sandbox.accountCount = 3
        let server = try await TestServer.make(modules: [ChippiPayModule(configuration: ChippiPayConfiguration(sandbox: sandbox))])
        try await server.withRouter { client in
            let transport = RouterTransport(client: client)
            let provider = StarknetProvider(url: URL(string: "http://127.0.0.1/starknet/rpc")!, transport: transport)
            let listing = try await client.execute(uri: "/sandbox/starknet/accounts", method: .get)
            #expect(listing.status == .ok, "\(String(buffer: listing.body))")
            let json = try JSONDecoder().decode(JSONValue.self, from: Data(buffer: listing.body))
            let accounts = try json["accounts"]!.arrayValue!.map { item in
                (Felt(item["address"]!.stringValue!)!, try StarkKey(privateKey: Felt(item["private_key"]!.stringValue!)!))
            }
            try await body(Harness(provider: provider, transport: transport, client: client, accounts: accounts,
                                   vault: Felt(json["vault_address"]!.stringValue!)!, paymentAddress: Felt(json["chippi_payment_address"]!.stringValue!)!))
        }
    }

    static let strk = UInt256("1000000000000000000")!
    /// Bounds that cover any transaction of these tests (at most 0.08 STRK).
    static let generousBounds = ResourceBounds(l1Gas: .zero, l2Gas: ResourceBound(maxAmount: 5_000_000, maxPricePerUnit: 16_000_000_000),
                                               l1DataGas: ResourceBound(maxAmount: 10_000, maxPricePerUnit: 2_000_000_000))
    static func strk(_ text: String) -> UInt256 { try! STRKAmount.parse(text) }

    /// Two replicas relay from one account, each with its own nonce sequence: each send finds
    /// the node's nonce past its own, and makes the transaction again with it. Alternating, and
    /// at once, every transfer lands and the account's nonce counts them.
    @Test("relays alternating between two senders of one account never fail on a stale nonce")
    func twoSendersOfOneAccount() async throws {
        try await Self.withNode { h in
            let (address, key) = h.accounts[0]
            let replicas = [StarknetAccount(address: address, key: key, provider: h.provider), StarknetAccount(address: address, key: key, provider: h.provider)]
            let start = try await h.provider.nonce(of: address)
            let recipient = h.accounts[1].address
            let token = h.strk
            for index in 0..<8 {
                _ = try await replicas[index % 2].execute([token.transfer(to: recipient, Self.strk("0.001"))])
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<6 {
                    // Distinct amounts: two identical transfers at one nonce are one transaction.
                    group.addTask { _ = try await replicas[index % 2].execute([token.transfer(to: recipient, Self.strk("0.00\(index + 2)"))]) }
                }
                try await group.waitForAll()
            }
            #expect(try await h.provider.nonce(of: address) == start + Felt(14))
        }
    }

    @Test func genesisHasTheTokenTheVaultAndFundedAccounts() async throws {
        try await Self.withNode { (h: Harness) async throws in
            #expect(try await h.provider.specVersion() == "0.10.2")
            #expect(try await h.provider.chainId() == Felt(shortString: "SN_SEPOLIA"))
            #expect(h.vault.paddedHex.hasPrefix("0x0299"), "the vault's documented address")
            #expect(h.vault == Felt("0x02992ef4a8340d2540fb8ef68ac345818a9f23e8803dfaec3a93b5bffda4eaef"))
            for account in h.accounts {
                #expect(try await h.strk.balance(of: account.address) == Self.strk("1000"))
                #expect(try await h.provider.nonce(of: account.address) == .zero)
                // The account contract holds the key's public half.
                #expect(try await h.provider.call(Call(to: account.address, entrypoint: "get_public_key")) == [account.key.publicKey])
            }
            #expect(try await h.provider.call(Call(to: ERC20.strkAddress, entrypoint: "decimals")) == [Felt(18)])
        }
    }

    @Test func depositAndWithdrawMoveBalancesAndPayFees() async throws {
        try await Self.withNode { (h: Harness) async throws in
            let account = h.account(0)
            let address = h.accounts[0].address
            let startBlock = try await h.provider.blockNumber()
            let deposit = try await account.executeAndWait(h.vaultContract.depositCalls(Self.strk("10")))
            #expect(deposit.succeeded && deposit.isAccepted, "\(deposit)")
            let fee1 = UInt256("0x" + deposit.actualFee.amount.description.dropFirst(2))!
            #expect(fee1 > .zero && deposit.actualFee.unit == "FRI")
            #expect(try await h.vaultContract.balance(of: address) == Self.strk("10"))
            let afterDeposit = Self.strk("990").subtracting(fee1)!
            #expect(try await h.strk.balance(of: address) == afterDeposit)
            // Approval, the vault's pull, Deposit, and the fee's Transfer.
            let names = deposit.events.map { $0.keys.first }
            #expect(names == [Selector.from(name: "Approval"), Selector.from(name: "Transfer"), Selector.from(name: "Deposit"), Selector.from(name: "Transfer")])
            #expect(try await h.provider.blockNumber() == startBlock + 1, "one block per transaction")

            let recipient = h.accounts[1].address
            let withdraw = try await account.executeAndWait([h.vaultContract.withdraw(to: recipient, Self.strk("2.5"))])
            #expect(withdraw.succeeded)
            #expect(try await h.vaultContract.balance(of: address) == Self.strk("7.5"))
            #expect(try await h.strk.balance(of: recipient) == Self.strk("1002.5"))
            #expect(try await h.provider.nonce(of: address) == Felt(2))

            // Beyond the vault balance: reverted, the fee paid, nothing else moved.
            let before = try await h.strk.balance(of: address)
            // Its fee cannot be estimated (estimation fails as the call reverts), so the bounds are given.
            await #expect { try await account.prepare([h.vaultContract.withdraw(to: recipient, Self.strk("8"))]) } throws: {
                ($0 as? StarknetRPCError)?.code == 41
            }
            let revertingHash = try await account.execute([h.vaultContract.withdraw(to: recipient, Self.strk("8"))], resourceBounds: Self.generousBounds)
            let tooMuch = try await h.provider.waitForTransaction(revertingHash)
            #expect(!tooMuch.succeeded)
            #expect(tooMuch.revertReason?.contains("Vault: insufficient balance") == true, "\(tooMuch.revertReason ?? "")")
            let fee3 = UInt256("0x" + tooMuch.actualFee.amount.description.dropFirst(2))!
            #expect(try await h.strk.balance(of: address) == before.subtracting(fee3)!)
            #expect(try await h.vaultContract.balance(of: address) == Self.strk("7.5"))
            #expect(try await h.provider.nonce(of: address) == Felt(3), "a reverted transaction uses its nonce")
            #expect(tooMuch.events.count == 1, "only the fee transfer")

            let status = try await h.provider.transactionStatus(tooMuch.transactionHash)
            #expect(status.executionStatus == .reverted && status.finalityStatus == .acceptedOnL2)
            // The supply is where it was: fees moved to the sequencer, nothing was created.
            try await Self.expectSupplyBalances(h, extra: [recipient])
        }
    }

    /// The STRK total supply equals the sum of the balances of every holder.
    static func expectSupplyBalances(_ h: Harness, extra: [Felt] = []) async throws {
        let supply = try ERC20.u256(try await h.provider.call(Call(to: ERC20.strkAddress, entrypoint: "total_supply")))
        let holders = Set(h.accounts.map(\.address) + [h.vault, h.paymentAddress, Felt("0x01176a1bd84444c89232ec27754698e5d2e7e1a7f1539f12027f28b23ec9f3d8")!] + extra)
        var sum = UInt256.zero
        for holder in holders { sum = sum.adding(try await h.strk.balance(of: holder))! }
        #expect(sum == supply)
    }

    @Test func refusedTransactionsChangeNothing() async throws {
        try await Self.withNode { (h: Harness) async throws in
            let account = h.account(0)
            let address = h.accounts[0].address
            let balance = try await h.strk.balance(of: address)
            let chainId = try await h.provider.chainId()

            // A corrupted signature.
            var tx = try await account.prepare([h.strk.transfer(to: h.accounts[1].address, Self.strk("1"))])
            tx.signature[1] = tx.signature[1] + .one
            await #expect { try await h.provider.addInvokeTransaction(tx) } throws: { ($0 as? StarknetRPCError)?.kind == .validationFailure }

            // A signature by another key.
            tx.signature = try h.accounts[1].key.sign(tx.hash(chainId: chainId)).felts
            await #expect { try await h.provider.addInvokeTransaction(tx) } throws: { ($0 as? StarknetRPCError)?.kind == .validationFailure }

            // Bounds below the price.
            var cheap = try await account.prepare([h.strk.transfer(to: h.accounts[1].address, Self.strk("1"))],
                                                  resourceBounds: ResourceBounds(l1Gas: .zero, l2Gas: ResourceBound(maxAmount: 10_000_000, maxPricePerUnit: 1),
                                                                                 l1DataGas: ResourceBound(maxAmount: 10_000, maxPricePerUnit: 1_000_000_000)))
            await #expect { try await h.provider.addInvokeTransaction(cheap) } throws: { ($0 as? StarknetRPCError)?.kind == .insufficientResources }

            // Bounds beyond the balance.
            cheap = try await account.prepare([h.strk.transfer(to: h.accounts[1].address, Self.strk("1"))],
                                              resourceBounds: ResourceBounds(l1Gas: .zero, l2Gas: ResourceBound(maxAmount: 10_000_000_000, maxPricePerUnit: 1_000_000_000_000),
                                                                             l1DataGas: ResourceBound(maxAmount: 10_000, maxPricePerUnit: 1_000_000_000)))
            await #expect { try await h.provider.addInvokeTransaction(cheap) } throws: { ($0 as? StarknetRPCError)?.kind == .insufficientBalance }

            #expect(try await h.strk.balance(of: address) == balance)
            #expect(try await h.provider.nonce(of: address) == .zero)

            // A good one, then its replay (duplicate) and a new transaction reusing its nonce.
            let good = try await account.prepare([h.strk.transfer(to: h.accounts[1].address, Self.strk("1"))])
            let hash = try await h.provider.addInvokeTransaction(good)
            await #expect { try await h.provider.addInvokeTransaction(good) } throws: { ($0 as? StarknetRPCError)?.kind == .duplicateTransaction }
            var reused = try await account.prepare([h.strk.transfer(to: h.accounts[1].address, Self.strk("2"))])
            reused.common.nonce = .zero
            reused.signature = try h.accounts[0].key.sign(reused.hash(chainId: chainId)).felts
            await #expect { try await h.provider.addInvokeTransaction(reused) } throws: { ($0 as? StarknetRPCError)?.kind == .invalidNonce }
            #expect(try await h.provider.transactionReceipt(hash).succeeded)
            #expect(try await h.provider.nonce(of: address) == Felt(1))
        }
    }

    @Test func aNewKeyDeploysItsAccount() async throws {
        try await Self.withNode { (h: Harness) async throws in
            let key = StarkKey.random()
            let classHash = try await h.provider.classHash(at: h.accounts[0].address)
            let address = ContractAddress.compute(classHash: classHash, salt: key.publicKey, constructorCalldata: [key.publicKey])
            // Not deployed yet: no nonce to read.
            await #expect { try await h.provider.nonce(of: address) } throws: { ($0 as? StarknetRPCError)?.kind == .contractNotFound }
            let (status, minted) = try await h.mint(address, "5")
            #expect(status == .created && minted["balance"] == "5", "\(minted)")
            let deployed = try await StarknetAccount.deploy(key: key, classHash: classHash, provider: h.provider)
            #expect(deployed.address == address)
            let receipt = try await h.provider.waitForTransaction(deployed.transactionHash)
            #expect(receipt.succeeded && receipt.contractAddress == address && receipt.type == "DEPLOY_ACCOUNT")
            #expect(try await h.provider.nonce(of: address) == Felt(1))
            let account = StarknetAccount(address: address, key: key, provider: h.provider)
            let transfer = try await account.executeAndWait([h.strk.transfer(to: h.accounts[0].address, Self.strk("1"))])
            #expect(transfer.succeeded)
            try await Self.expectSupplyBalances(h, extra: [address])
        }
    }

    @Test func theFaucetIsIdempotentAndChecksItsInput() async throws {
        try await Self.withNode { (h: Harness) async throws in
            let address = h.accounts[2].address
            let (first, body) = try await h.mint(address, "1.5", key: "mint-1")
            #expect(first == .created && body["balance"] == "1001.5")
            let (again, replay) = try await h.mint(address, "1.5", key: "mint-1")
            #expect(again == .ok && replay == body)
            let (reused, _) = try await h.mint(address, "2", key: "mint-1")
            #expect(reused == .unprocessableContent)
            for bad in ["-1", "1e3", "0.0000000000000000001", "0", "abc", ""] {
                let (status, _) = try await h.mint(address, bad)
                #expect(status == .badRequest, "\(bad)")
            }
            let (badAddress, _) = try await h.mint(Felt.max, "1")
            #expect(badAddress == .badRequest)
            #expect(try await h.strk.balance(of: address) == Self.strk("1001.5"))
        }
    }

    @Test func badRequestsGetJSONRPCErrors() async throws {
        try await Self.withNode { (h: Harness) async throws in
            #expect(try await h.rpc("{").self["error"]?["code"] == .int(-32700))
            #expect(try await h.rpc(#"{"jsonrpc":"2.0","id":1,"method":"starknet_nope"}"#)["error"]?["code"] == .int(-32601))
            #expect(try await h.rpc(#"{"jsonrpc":"1.0","id":1,"method":"starknet_chainId"}"#)["error"]?["code"] == .int(-32600))
            // An id that is not a string, number or null, or params that are neither object nor array, make an invalid request.
            let objectID = try await h.rpc(#"{"jsonrpc":"2.0","id":{},"method":"starknet_chainId"}"#)
            #expect(objectID["error"]?["code"] == .int(-32600) && objectID["id"] == .null)
            #expect(try await h.rpc(#"{"jsonrpc":"2.0","id":8,"method":"starknet_chainId","params":3}"#)["error"]?["code"] == .int(-32600))
            let badFelt = try await h.rpc(#"{"jsonrpc":"2.0","id":2,"method":"starknet_getNonce","params":["latest","0xzz"]}"#)
            #expect(badFelt["error"]?["code"] == .int(-32602) && badFelt["id"] == .int(2))
            let tooBig = try await h.rpc(#"{"jsonrpc":"2.0","id":3,"method":"starknet_getNonce","params":{"block_id":"latest","contract_address":"0x800000000000011000000000000000000000000000000000000000000000001"}}"#)
            #expect(tooBig["error"]?["code"] == .int(-32602))
            let unknownBlock = try await h.rpc(#"{"jsonrpc":"2.0","id":4,"method":"starknet_getBlockWithTxHashes","params":[{"block_number":999999}]}"#)
            #expect(unknownBlock["error"]?["code"] == .int(24))
            let missingTx = try await h.rpc(#"{"jsonrpc":"2.0","id":5,"method":"starknet_getTransactionReceipt","params":["0x1234"]}"#)
            #expect(missingTx["error"]?["code"] == .int(29))
            let noEntrypoint = try await h.rpc(#"{"jsonrpc":"2.0","id":6,"method":"starknet_call","params":[{"contract_address":"\#(ERC20.strkAddress)","entry_point_selector":"0x1","calldata":[]},"latest"]}"#)
            #expect(noEntrypoint["error"]?["code"] == .int(21))
            let wrongVersion = try await h.rpc(#"{"jsonrpc":"2.0","id":7,"method":"starknet_addInvokeTransaction","params":[{"type":"INVOKE","version":"0x1","sender_address":"0x1","calldata":[],"signature":[],"nonce":"0x0","max_fee":"0x0"}]}"#)
            #expect(wrongVersion["error"]?["code"] == .int(-32602))
            // Oversized calldata: refused as invalid params before anything runs.
            let many = Array(repeating: "\"0x1\"", count: 4_001).joined(separator: ",")
            let bigCall = try await h.rpc(#"{"jsonrpc":"2.0","id":9,"method":"starknet_call","params":[{"contract_address":"\#(ERC20.strkAddress)","entry_point_selector":"0x1","calldata":[\#(many)]},"latest"]}"#)
            #expect(bigCall["error"]?["code"] == .int(-32602))
            let nonce = try await h.provider.nonce(of: h.accounts[0].address)
            let bigInvoke = try await h.rpc(#"{"jsonrpc":"2.0","id":10,"method":"starknet_addInvokeTransaction","params":[{"type":"INVOKE","version":"0x3","sender_address":"\#(h.accounts[0].address)","calldata":[\#(many)],"signature":["0x1","0x2"],"nonce":"\#(nonce)","resource_bounds":{"l1_gas":{"max_amount":"0x0","max_price_per_unit":"0x0"},"l2_gas":{"max_amount":"0x0","max_price_per_unit":"0x0"},"l1_data_gas":{"max_amount":"0x0","max_price_per_unit":"0x0"}},"tip":"0x0","paymaster_data":[],"account_deployment_data":[],"nonce_data_availability_mode":"L1","fee_data_availability_mode":"L1"}]}"#)
            #expect(bigInvoke["error"]?["code"] == .int(-32602))
            #expect(try await h.provider.nonce(of: h.accounts[0].address) == nonce)
            // A batch answers each request in order.
            let batch = try await h.rpc(#"[{"jsonrpc":"2.0","id":1,"method":"starknet_chainId"},{"jsonrpc":"2.0","id":2,"method":"starknet_nope"}]"#)
            #expect(batch.arrayValue?.count == 2 && batch.arrayValue?[0]["result"] == "0x534e5f5345504f4c4941")
        }
    }

    @Test func eventsPageWithAContinuationToken() async throws {
        try await Self.withNode { (h: Harness) async throws in
            let account = h.account(0)
            for amount in ["1", "2", "3"] {
                _ = try await account.executeAndWait(h.vaultContract.depositCalls(Self.strk(amount)))
            }
            var tokens: [String] = []
            var deposits: [EventsPage.Emitted] = []
            var continuation: String?
            repeat {
                let page = try await h.provider.events(address: h.vault, keys: [[Selector.from(name: "Deposit")]], chunkSize: 2, continuationToken: continuation)
                deposits += page.events
                continuation = page.continuationToken
                if let continuation { tokens.append(continuation) }
            } while continuation != nil
            #expect(deposits.count == 3 && tokens.count == 1)
            #expect(deposits.map { $0.data[0] } == [Self.strk("1").low, Self.strk("2").low, Self.strk("3").low])
        }
    }

    /// 100 transactions with the same nonce at once: one is admitted, the others are refused,
    /// and the vault pays out once.
    @Test func oneNonceAdmitsOneTransactionUnderConcurrency() async throws {
        try await Self.withNode { (h: Harness) async throws in
            let account = h.account(0)
            _ = try await account.executeAndWait(h.vaultContract.depositCalls(Self.strk("10")))
            let chainId = try await h.provider.chainId()
            let template = try await account.prepare([h.vaultContract.withdraw(to: h.accounts[1].address, Self.strk("10"))])
            let key = h.accounts[0].key
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        var tx = template
                        tx.calldata = Call.executeCalldata([h.vaultContract.withdraw(to: h.accounts[1].address, Self.strk("10").subtracting(UInt256(UInt128(index)))!)])
                        tx.signature = try! key.sign(tx.hash(chainId: chainId)).felts
                        return (try? await h.provider.addInvokeTransaction(tx)) != nil
                    }
                }
                var admitted: [Bool] = []
                for await outcome in group { admitted.append(outcome) }
                return admitted
            }
            #expect(outcomes.filter { $0 }.count == 1)
            #expect(try await h.vaultContract.balance(of: h.accounts[0].address) < Self.strk("1"))
            #expect(try await h.provider.nonce(of: h.accounts[0].address) == Felt(2))
            try await Self.expectSupplyBalances(h)
        }
    }
}

import HTTPTypes
import Crypto
import Foundation
import Logging
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit
import Starknet

/// A JSON-RPC error as the Starknet specification numbers them.
struct RPCError: Error, Sendable {
    var code: Int
    var message: String
    var data: JSONValue?

    static func invalidParams(_ detail: String) -> RPCError { RPCError(code: -32602, message: "Invalid params", data: .string(detail)) }
    static let methodNotFound = RPCError(code: -32601, message: "Method not found")
    static let contractNotFound = RPCError(code: 20, message: "Contract not found")
    static let entrypointNotFound = RPCError(code: 21, message: "Requested entrypoint does not exist in the contract")
    static let blockNotFound = RPCError(code: 24, message: "Block not found")
    static let classHashNotFound = RPCError(code: 28, message: "Class hash not found")
    static let transactionNotFound = RPCError(code: 29, message: "Transaction hash not found")
    static let pageSizeTooBig = RPCError(code: 31, message: "Requested page size is too big")
    static let invalidContinuationToken = RPCError(code: 33, message: "The supplied continuation token is invalid or unknown")
    static func contractError(_ reason: String) -> RPCError {
        RPCError(code: 40, message: "Contract error", data: ["revert_error": .string(reason)])
    }
    static func executionError(index: Int, _ reason: String) -> RPCError {
        RPCError(code: 41, message: "Transaction execution error", data: ["transaction_index": .int(Int64(index)), "execution_error": .string(reason)])
    }
    static func invalidNonce(_ detail: String) -> RPCError { RPCError(code: 52, message: "Invalid transaction nonce", data: .string(detail)) }
    static func insufficientResources(_ detail: String) -> RPCError {
        RPCError(code: 53, message: "The transaction's resources don't cover validation or the minimal transaction fee", data: .string(detail))
    }
    static let insufficientBalance = RPCError(code: 54, message: "Account balance is smaller than the transaction's maximal fee (calculated as the sum of each resource's limit x max price)")
    static func validationFailure(_ detail: String) -> RPCError { RPCError(code: 55, message: "Account validation failed", data: .string(detail)) }
    static let duplicateTransaction = RPCError(code: 59, message: "A transaction with the same hash already exists in the mempool")
    static let unsupportedVersion = RPCError(code: 61, message: "The transaction version is not supported")
    static func unexpected(_ detail: String) -> RPCError { RPCError(code: 63, message: "An unexpected error occurred", data: .string(detail)) }
}

/// The sandbox's gas prices (fri per unit) and its gas model: deterministic, proportional to
/// the work a transaction asks for (calls, calldata, state changes).
struct SandboxGas: Sendable {
    static let l1GasPrice: UInt128 = 30_000_000_000_000
    static let l1DataGasPrice: UInt128 = 1_000_000_000
    static let l2GasPrice: UInt128 = 8_000_000_000

    var l1: UInt64 = 0
    var l1Data: UInt64
    var l2: UInt64

    static func consumed(calls: Int, calldata: Int, signature: Int, changedSlots: Int, deploy: Bool) -> SandboxGas {
        let l2 = 600_000 + 120_000 * UInt64(calls) + 5_000 * UInt64(calldata) + 60_000 * UInt64(signature)
            + 40_000 * UInt64(changedSlots) + (deploy ? 400_000 : 0)
        return SandboxGas(l1Data: 128 + 64 * UInt64(changedSlots), l2: l2)
    }

    /// The fee: every resource at its price, L2 gas at its price plus the tip.
    func fee(tip: UInt64) -> UInt256 {
        let l1Fee = UInt256(UInt128(l1) * Self.l1GasPrice)
        let dataFee = UInt256(UInt128(l1Data) * Self.l1DataGasPrice)
        let l2Fee = UInt256(UInt128(l2) * (Self.l2GasPrice + UInt128(tip)))
        return l1Fee.adding(dataFee)!.adding(l2Fee)!
    }
}

/// The sandbox Starknet node: chain state in the database, transactions checked as Starknet checks
/// them (hash, signature, nonce, resource bounds, balance), executed against native contracts,
/// and gathered into blocks.
public struct SandboxNode: Sendable {
    let environment: ServerEnvironment
    let configuration: StarknetSandboxConfiguration

    package init(environment: ServerEnvironment, configuration: StarknetSandboxConfiguration) {
        self.environment = environment
        self.configuration = configuration
    }

    var database: Database { environment.database }
    package var chainId: Felt { configuration.chainId }

    static let specVersion = "0.10.2"
    public static let strkAddress = Felt("0x04718f5a0fc34cc1af16a1cdee98ffb20c31f5cd61d6ab07201858f4287c938d")!
    static let vaultSalt = Felt(8539)
    /// The vault's address: deployed by the sandbox's genesis with `vaultSalt` and the STRK address.
    public static let vaultAddress = ContractAddress.compute(classHash: SandboxClass.vault.classHash, salt: vaultSalt, constructorCalldata: [strkAddress])
    /// Where fees go.
    static let sequencerAddress = Felt("0x01176a1bd84444c89232ec27754698e5d2e7e1a7f1539f12027f28b23ec9f3d8")!

    // MARK: Genesis

    /// A predeployed account: its key is derived from the sandbox's seed, so every fresh sandbox
    /// has the same accounts (test keys only; never hold real funds with them).
    package struct PredeployedAccount: Sendable, Codable {
        package var address: Felt
        package var privateKey: Felt
        package var publicKey: Felt

        enum CodingKeys: String, CodingKey { case address, privateKey = "private_key", publicKey = "public_key" }
    }

    package var predeployedAccounts: [PredeployedAccount] {
        (0..<configuration.accountCount).map { index in
            let key = derivedKey("account \(index)")
            return PredeployedAccount(address: Self.accountAddress(key), privateKey: key.privateKey, publicKey: key.publicKey)
        }
    }

    /// A key derived from the sandbox's seed and a label: the same in every fresh sandbox.
    package func derivedKey(_ label: String) -> StarkKey {
        let digest = SHA256.hash(data: Array("purse starknet sandbox \(configuration.seed) \(label)".utf8))
        // 252 bits below N; the chance of landing on N or above is below 2^-120.
        var bytes = Array(digest)
        bytes[0] &= 0x07
        return try! StarkKey(privateKey: Felt(bigEndianBytes: bytes)!)
    }

    /// Where an account for `key` is deployed (salt and constructor: the public key, deployer 0).
    static func accountAddress(_ key: StarkKey) -> Felt { accountAddress(publicKey: key.publicKey) }

    static func accountAddress(publicKey: Felt) -> Felt {
        ContractAddress.compute(classHash: SandboxClass.account.classHash, salt: publicKey, constructorCalldata: [publicKey])
    }

    /// Deploys the Universal Deployer when the chain has none (a chain created before it existed).
    package func ensureUniversalDeployer() async throws {
        try await database.transaction { db in
            guard try await db.raw("UPDATE starknet_chain SET latest_block = latest_block WHERE id = 1 RETURNING latest_block").first() != nil else {
                throw APIError(.serviceUnavailable, "The sandbox chain has no genesis")
            }
            let state = ChainState(db: db)
            if try await state.contract(at: UniversalDeployer.address) != nil { return }
            state.deploy(UniversalDeployer.address, classHash: SandboxClass.udc.classHash)
            try await state.flush(block: 0)
        }
    }

    /// Deploys and funds an account for `key` when the chain has none at its address (the
    /// provider's payment account, on a chain created before it existed too). Returns its address.
    @discardableResult
    package func ensureAccount(_ key: StarkKey, funding: UInt256) async throws -> Felt {
        let address = Self.accountAddress(key)
        try await database.transaction { db in
            guard try await db.raw("UPDATE starknet_chain SET latest_block = latest_block WHERE id = 1 RETURNING latest_block").first() != nil else {
                throw APIError(.serviceUnavailable, "The sandbox chain has no genesis")
            }
            let state = ChainState(db: db)
            if try await state.contract(at: address) != nil { return }
            state.deploy(address, classHash: SandboxClass.account.classHash)
            state.write(address, AccountContract.publicKeyKey, key.publicKey)
            try await ERC20Contract(vm: SandboxVM(state: state, chainId: chainId), address: Self.strkAddress).mint(to: address, funding)
            try await state.flush(block: 0)
        }
        return address
    }

    /// Creates the chain on first start: block 0 with the STRK token, the vault and the funded accounts.
    package func genesis() async throws {
        let accounts = predeployedAccounts
        let now = Int64(environment.now().timeIntervalSince1970)
        try await database.transaction { db in
            if try await db.raw("SELECT chain_id FROM starknet_chain WHERE id = 1").first() != nil { return }
            try await db.raw("""
                INSERT INTO starknet_chain (id, chain_id, latest_block) VALUES (1, \(bind: chainId.description), 0)
                """).run()
            let state = ChainState(db: db)
            state.deploy(Self.strkAddress, classHash: SandboxClass.erc20.classHash)
            state.write(Self.strkAddress, ERC20Contract.nameKey, Felt(shortString: "Starknet Token")!)
            state.write(Self.strkAddress, ERC20Contract.symbolKey, Felt(shortString: "STRK")!)
            state.write(Self.strkAddress, ERC20Contract.decimalsKey, Felt(18))
            state.deploy(Self.vaultAddress, classHash: SandboxClass.vault.classHash)
            state.write(Self.vaultAddress, VaultContract.assetKey, Self.strkAddress)
            let vm = SandboxVM(state: state, chainId: chainId)
            let token = ERC20Contract(vm: vm, address: Self.strkAddress)
            for account in accounts {
                state.deploy(account.address, classHash: SandboxClass.account.classHash)
                state.write(account.address, AccountContract.publicKeyKey, account.publicKey)
                try await token.mint(to: account.address, configuration.accountFunding)
            }
            let hash = Self.blockHash(number: 0, parent: .zero, timestamp: now, transactions: [])
            try await db.raw("""
                INSERT INTO starknet_blocks (number, hash, parent_hash, timestamp, closed)
                VALUES (0, \(bind: hash.description), '0x0', \(bind: now), TRUE)
                """).run()
            try await state.flush(block: 0)
        }
    }

    static func blockHash(number: Int64, parent: Felt, timestamp: Int64, transactions: [Felt]) -> Felt {
        Poseidon.hash(many: [Felt(shortString: "PURSE_SANDBOX_BLOCK")!, Felt(UInt64(number)), parent, Felt(UInt64(timestamp)),
                             Poseidon.hash(many: transactions)])
    }

    // MARK: Transactions

    /// The outcome of executing a transaction on a `ChainState`.
    struct Execution {
        var hash: Felt
        var reverted: String?
        var fee: UInt256
        var gas: SandboxGas
    }

    /// A signature checked before the chain was locked, and the key it was checked with.
    struct CheckedSignature: Sendable {
        var publicKey: Felt
        var isValid: Bool
    }

    /// Checks the transaction's signature against the key its account holds now (a deployment's
    /// key is in its calldata). Done before the chain is locked, so that the curve arithmetic of
    /// concurrent transactions runs side by side rather than one at a time under the lock; under
    /// the lock ``execute(_:hash:in:estimating:validate:checked:)`` reuses the verdict when the
    /// account's key is still the same, and checks again when it is not.
    func checkSignature(_ transaction: BroadcastedTransaction, hash: Felt) async throws -> CheckedSignature? {
        let publicKey: Felt
        switch transaction {
        case .invoke(let invoke):
            publicKey = try await database.read { db in try await ChainState(db: db).read(invoke.senderAddress, AccountContract.publicKeyKey) }
        case .deployAccount(let deployment):
            guard deployment.constructorCalldata.count == 1 else { return nil }
            publicKey = deployment.constructorCalldata[0]
        }
        let signature = transaction.signature
        let isValid = signature.count == 2 && StarkVerifier.verify(hash, signature: StarkSignature(r: signature[0], s: signature[1]), publicKey: publicKey)
        return CheckedSignature(publicKey: publicKey, isValid: isValid)
    }

    /// Checks and executes `transaction` on `state`. Throws the spec's errors for a transaction
    /// that is not admitted (nothing changes); a reverted one still pays its fee and uses its nonce.
    /// - Parameters:
    ///   - hash: the transaction's hash when the caller has it already.
    ///   - checked: the signature's verdict from before the chain was locked, if any.
    func execute(_ transaction: BroadcastedTransaction, hash known: Felt? = nil, in state: ChainState, estimating: Bool, validate: Bool = true,
                 checked: CheckedSignature? = nil) async throws -> Execution {
        let vm = SandboxVM(state: state, chainId: chainId, timestamp: UInt64(max(0, environment.now().timeIntervalSince1970)))
        let token = ERC20Contract(vm: vm, address: Self.strkAddress)
        let hash = known ?? transaction.hash(chainId: chainId)
        let common: TransactionV3Common
        let sender: Felt
        var calls: [Call] = []
        var deploy = false
        switch transaction {
        case .invoke(let invoke):
            common = invoke.common
            sender = invoke.senderAddress
            guard let record = try await state.contract(at: sender) else { throw RPCError.contractNotFound }
            guard SandboxClass(classHash: record.classHash) == .account else { throw RPCError.validationFailure("\(sender) is not an account") }
            guard let parsed = Call.parseExecuteCalldata(invoke.calldata) else {
                throw RPCError.validationFailure("The calldata is not a multicall of `__execute__`")
            }
            calls = parsed
        case .deployAccount(let deployment):
            common = deployment.common
            sender = deployment.contractAddress
            deploy = true
            guard SandboxClass(classHash: deployment.classHash) == .account else { throw RPCError.classHashNotFound }
            guard try await state.contract(at: sender) == nil else {
                throw RPCError.validationFailure("An account is already deployed at \(sender)")
            }
            guard deployment.constructorCalldata.count == 1 else {
                throw RPCError.validationFailure("The account's constructor takes one argument, the public key")
            }
        }
        if common.isQuery && !estimating { throw RPCError.unsupportedVersion }
        guard common.nonceDataAvailabilityMode == .l1, common.feeDataAvailabilityMode == .l1 else {
            throw RPCError.validationFailure("Only L1 data availability is supported")
        }
        guard common.paymasterData.isEmpty else { throw RPCError.validationFailure("Paymaster data is not supported") }

        // Nonce: exactly the next one.
        let expected = try await state.nonce(of: sender)
        guard common.nonce == Felt(expected) else {
            throw RPCError.invalidNonce("Invalid transaction nonce of contract at address \(sender). Account nonce: \(Felt(expected)); got: \(common.nonce).")
        }

        // Validation: the signature over the transaction hash with the account's key.
        let signature = transaction.signature
        if validate {
            let publicKey: Felt
            switch transaction {
            case .invoke: publicKey = try await state.read(sender, AccountContract.publicKeyKey)
            case .deployAccount(let deployment): publicKey = deployment.constructorCalldata[0]
            }
            let isValid = if let checked, checked.publicKey == publicKey {
                checked.isValid
            } else {
                signature.count == 2 && StarkVerifier.verify(hash, signature: StarkSignature(r: signature[0], s: signature[1]), publicKey: publicKey)
            }
            guard isValid else { throw RPCError.validationFailure("Account: invalid signature") }
        }

        // Balance: the sender must hold the most the transaction may cost.
        let maxFee = common.resourceBounds.maxFee
        let balanceBefore = try await token.balance(of: sender)
        if !estimating, balanceBefore < maxFee { throw RPCError.insufficientBalance }

        // Execution, on a checkpoint so that a revert drops its effects.
        let checkpoint = state.checkpoint()
        var reverted: String?
        do {
            if case .deployAccount(let deployment) = transaction {
                state.deploy(sender, classHash: deployment.classHash)
                state.write(sender, AccountContract.publicKeyKey, deployment.constructorCalldata[0])
            }
            for (index, call) in calls.enumerated() {
                do {
                    _ = try await vm.call(call.to, call.selector, call.calldata, caller: sender)
                } catch let revert as ContractRevert {
                    throw ContractRevert(reason: "Transaction execution has failed:\n\(index): Error in the called contract (\(call.to)):\nExecution failed. Failure reason: '\(revert.reason)'.")
                }
            }
        } catch let revert as ContractRevert {
            if deploy || estimating {
                state.rollback(to: checkpoint)
                if estimating { throw RPCError.executionError(index: 0, revert.reason) }
                throw RPCError.validationFailure(revert.reason)
            }
            reverted = revert.reason
            state.rollback(to: checkpoint)
        }

        let calldataCount: Int
        switch transaction {
        case .invoke(let invoke): calldataCount = invoke.calldata.count
        case .deployAccount(let deployment): calldataCount = deployment.constructorCalldata.count
        }
        // The fee transfer and the nonce change two more cells.
        let gas = SandboxGas.consumed(calls: calls.count, calldata: calldataCount, signature: signature.count,
                                      changedSlots: state.changedSlots + 3, deploy: deploy)
        let fee = gas.fee(tip: common.tip)
        if !estimating {
            let bounds = common.resourceBounds
            var shortfalls: [String] = []
            if bounds.l2Gas.maxAmount < gas.l2 { shortfalls.append("l2_gas max_amount \(bounds.l2Gas.maxAmount) < \(gas.l2)") }
            if bounds.l2Gas.maxPricePerUnit < SandboxGas.l2GasPrice { shortfalls.append("l2_gas max_price_per_unit below \(SandboxGas.l2GasPrice)") }
            if bounds.l1DataGas.maxAmount < gas.l1Data { shortfalls.append("l1_data_gas max_amount \(bounds.l1DataGas.maxAmount) < \(gas.l1Data)") }
            if bounds.l1DataGas.maxPricePerUnit < SandboxGas.l1DataGasPrice { shortfalls.append("l1_data_gas max_price_per_unit below \(SandboxGas.l1DataGasPrice)") }
            if bounds.l1Gas.maxAmount < gas.l1 { shortfalls.append("l1_gas max_amount \(bounds.l1Gas.maxAmount) < \(gas.l1)") }
            if !shortfalls.isEmpty { throw RPCError.insufficientResources(shortfalls.joined(separator: "; ")) }
            // The execution may have spent what was to pay the fee: then it reverts and the fee
            // comes from the balance before it (checked above to cover the maximal fee).
            if try await token.balance(of: sender) < fee, reverted == nil {
                state.rollback(to: checkpoint)
                reverted = "Insufficient fee token balance after execution"
            }
            do {
                try await token.transfer(from: sender, to: Self.sequencerAddress, fee)
            } catch let revert as ContractRevert {
                throw RPCError.unexpected(revert.reason)
            }
            try await state.incrementNonce(of: sender)
        }
        return Execution(hash: hash, reverted: reverted, fee: fee, gas: gas)
    }

    /// Admits a transaction: executes it and records it, its events and its block.
    func submit(_ transaction: BroadcastedTransaction) async throws -> Felt {
        let chainId = chainId
        let perTransactionBlocks = configuration.blockSeconds == nil
        let now = Int64(environment.now().timeIntervalSince1970)
        // Hashed before the chain is locked: the lock is held only for the state's own work.
        let hash = transaction.hash(chainId: chainId)
        let checked = try await checkSignature(transaction, hash: hash)
        return try await database.transaction { db in
            // One sequencer: admitting a transaction starts by locking the chain's head row.
            guard let head = try await db.raw("UPDATE starknet_chain SET latest_block = latest_block WHERE id = 1 RETURNING latest_block").first() else {
                throw RPCError.unexpected("The sandbox chain has no genesis")
            }
            let latest = try head.decode(column: "latest_block", as: Int64.self)
            if try await db.raw("SELECT hash FROM starknet_transactions WHERE hash = \(bind: hash.description)").first() != nil {
                throw RPCError.duplicateTransaction
            }
            let state = ChainState(db: db)
            let execution = try await execute(transaction, hash: hash, in: state, estimating: false, checked: checked)
            let block = latest + 1
            if try await db.raw("SELECT number FROM starknet_blocks WHERE number = \(bind: block)").first() == nil {
                try await db.raw("""
                    INSERT INTO starknet_blocks (number, hash, parent_hash, timestamp, closed) VALUES (\(bind: block), NULL, NULL, \(bind: now), FALSE)
                    """).run()
            }
            let position = try await db.raw("SELECT COUNT(*) AS n FROM starknet_transactions WHERE block_number = \(bind: block)").first()!
                .decode(column: "n", as: Int64.self)
            let body = String(decoding: try JSONEncoder().encode(transaction), as: UTF8.self)
            let type: String
            let sender: Felt
            switch transaction {
            case .invoke(let invoke): type = "INVOKE"; sender = invoke.senderAddress
            case .deployAccount(let deployment): type = "DEPLOY_ACCOUNT"; sender = deployment.contractAddress
            }
            try await db.raw("""
                INSERT INTO starknet_transactions (hash, block_number, position, type, sender, body, execution_status, revert_reason,
                    actual_fee, l1_gas, l1_data_gas, l2_gas, state_diff_length)
                VALUES (\(bind: hash.description), \(bind: block), \(bind: position), \(bind: type), \(bind: sender.description), \(bind: body),
                    \(bind: execution.reverted == nil ? "SUCCEEDED" : "REVERTED"), \(bind: execution.reverted), \(bind: execution.fee.hex),
                    \(bind: Int64(execution.gas.l1)), \(bind: Int64(execution.gas.l1Data)), \(bind: Int64(execution.gas.l2)),
                    \(bind: Int64(state.stateDiffLength)))
                """).run()
            for (index, event) in state.events.enumerated() {
                try await db.raw("""
                    INSERT INTO starknet_events (transaction_hash, position, block_number, from_address, keys, data)
                    VALUES (\(bind: hash.description), \(bind: index), \(bind: block), \(bind: event.from_address.description),
                        \(bind: Self.feltList(event.keys)), \(bind: Self.feltList(event.data)))
                    """).run()
            }
            try await state.flush(block: block)
            if perTransactionBlocks { try await Self.closeBlock(block, timestamp: now, in: db) }
            return hash
        }
    }

    /// Closes the open block, if it holds transactions (the interval mode's periodic step).
    package func closeOpenBlock() async throws {
        let now = Int64(environment.now().timeIntervalSince1970)
        try await database.transaction { db in
            guard let head = try await db.raw("UPDATE starknet_chain SET latest_block = latest_block WHERE id = 1 RETURNING latest_block").first() else { return }
            let block = try head.decode(column: "latest_block", as: Int64.self) + 1
            guard try await db.raw("SELECT number FROM starknet_blocks WHERE number = \(bind: block) AND closed = FALSE").first() != nil else { return }
            try await Self.closeBlock(block, timestamp: now, in: db)
        }
    }

    static func closeBlock(_ number: Int64, timestamp: Int64, in db: any DatabaseSession) async throws {
        let parent = try await db.raw("SELECT hash FROM starknet_blocks WHERE number = \(bind: number - 1)").first()!
            .decode(column: "hash", as: String.self)
        let transactions = try await db.raw("SELECT hash FROM starknet_transactions WHERE block_number = \(bind: number) ORDER BY position").all()
            .map { Felt(try $0.decode(column: "hash", as: String.self))! }
        let hash = blockHash(number: number, parent: Felt(parent)!, timestamp: timestamp, transactions: transactions)
        try await db.raw("""
            UPDATE starknet_blocks SET hash = \(bind: hash.description), parent_hash = \(bind: parent), timestamp = \(bind: timestamp), closed = TRUE
            WHERE number = \(bind: number)
            """).run()
        try await db.raw("UPDATE starknet_chain SET latest_block = \(bind: number) WHERE id = 1").run()
    }

    static func feltList(_ felts: [Felt]) -> String { felts.map(\.description).joined(separator: ",") }
    static func parseFeltList(_ text: String) -> [Felt] { text.isEmpty ? [] : text.split(separator: ",").compactMap { Felt($0) } }

    // MARK: Faucet

    /// Mints STRK to `address` outside any transaction (the sandbox faucet, like devnet's mint),
    /// once per idempotency key: a retry with the key gets the first answer (status 200), the key
    /// with another request is refused with 422.
    /// - Returns: 201 and the new balance, or 200 and the first answer.
    func mint(to address: Felt, amount: UInt256, idempotencyKey: String, requestHash: String) async throws -> (Int, Data) {
        let now = environment.now().epochMillis
        return try await database.transaction { db in
            guard try await db.raw("UPDATE starknet_chain SET latest_block = latest_block WHERE id = 1 RETURNING latest_block").first() != nil else {
                throw APIError(.serviceUnavailable, "The sandbox chain has no genesis")
            }
            if let row = try await db.raw("SELECT request_hash, response FROM starknet_mints WHERE idempotency_key = \(bind: idempotencyKey)").first() {
                guard try row.decode(column: "request_hash", as: String.self) == requestHash else {
                    throw APIError(.unprocessableContent, "Idempotency-Key was already used with a different request")
                }
                return (200, Data(try row.decode(column: "response", as: String.self).utf8))
            }
            let state = ChainState(db: db)
            let token = ERC20Contract(vm: SandboxVM(state: state, chainId: chainId), address: Self.strkAddress)
            do { try await token.mint(to: address, amount) } catch let revert as ContractRevert { throw APIError(.badRequest, revert.reason) }
            let balance = try await token.balance(of: address)
            try await state.flush(block: 0)
            let response = SandboxFaucetRoutes.MintResponse(address: address.description, minted: STRKAmount.format(amount),
                                                            balance: STRKAmount.format(balance), balance_fri: balance.description)
            let data = try JSONEncoder().encode(response)
            try await db.raw("""
                INSERT INTO starknet_mints (idempotency_key, request_hash, address, amount, response, created_at)
                VALUES (\(bind: idempotencyKey), \(bind: requestHash), \(bind: address.description), \(bind: amount.description),
                        \(bind: String(decoding: data, as: UTF8.self)), \(bind: now))
                """).run()
            return (201, data)
        }
    }
}

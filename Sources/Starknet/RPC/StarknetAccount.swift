import PurseHTTP

/// An account contract driven by its Stark key: executes calls as INVOKE v3 transactions.
///
/// The nonce comes from the node, then from a local sequence so that back-to-back sends do not
/// wait for each other. Another sender of the same account (another replica of a service) moves
/// the node's nonce past the local one: a nonce the node refuses, at the fee estimate or at the
/// send, drops the sequence, and the transaction is made again with the node's nonce (a refused
/// nonce means nothing was included, so making it again pays nothing twice). The fee is estimated
/// with a query-version signature (never valid as a real transaction) and the bounds raised by
/// `feeMargin`.
public actor StarknetAccount {
    public nonisolated let address: Felt
    let key: StarkKey
    public nonisolated let provider: StarknetProvider
    public var feeMargin: Double
    private var chainId: Felt?
    private var nextNonce: Felt?

    public init(address: Felt, key: StarkKey, provider: StarknetProvider, feeMargin: Double = 1.5) {
        self.address = address
        self.key = key
        self.provider = provider
        self.feeMargin = feeMargin
    }

    public nonisolated var publicKey: Felt { key.publicKey }

    public func setFeeMargin(_ margin: Double) { feeMargin = max(1, margin) }

    /// The account's signature over SNIP-12 typed data (its message hash for this account), as
    /// `is_valid_signature` checks it: an outside execution for a paymaster, an off-chain order.
    public nonisolated func signMessage(_ typedData: TypedData) throws -> [Felt] {
        try key.sign(try typedData.messageHash(account: address)).felts
    }

    /// The account's signature over a message hash a protocol defines (``PayerLink``), as
    /// `is_valid_signature` checks it.
    public nonisolated func sign(hash: Felt) throws -> [Felt] {
        try key.sign(hash).felts
    }

    /// The chain the account's provider is on.
    public func chainIdentifier() async throws -> Felt { try await chain() }

    func chain() async throws -> Felt {
        if let chainId { return chainId }
        let fetched = try await provider.chainId()
        chainId = fetched
        return fetched
    }

    func nonce() async throws -> Felt {
        if let nextNonce { return nextNonce }
        return try await provider.nonce(of: address)
    }

    /// Forgets the local nonce sequence: the next transaction takes the node's nonce.
    public func refreshNonce() { nextNonce = nil }

    /// How many times a transaction is made again after the node refused its nonce.
    static let nonceAttempts = 5

    /// The INVOKE for `calls`, signed, with bounds from a fee estimate (or the given ones). A
    /// stale local nonce the estimate refuses is dropped and the node's taken.
    public func prepare(_ calls: [Call], resourceBounds: ResourceBounds? = nil, tip: UInt64 = 0) async throws -> InvokeTransactionV3 {
        for attempt in 1... {
            do {
                return try await prepareOnce(calls, resourceBounds: resourceBounds, tip: tip)
            } catch let error as StarknetRPCError where error.kind == .invalidNonce && attempt < Self.nonceAttempts {
                nextNonce = nil
                try await Task.sleep(for: .milliseconds(Int.random(in: 20...80) * attempt))
            }
        }
        fatalError("unreachable")
    }

    private func prepareOnce(_ calls: [Call], resourceBounds: ResourceBounds?, tip: UInt64) async throws -> InvokeTransactionV3 {
        let chainId = try await chain()
        let nonce = try await nonce()
        let calldata = Call.executeCalldata(calls)
        var bounds = resourceBounds
        if bounds == nil {
            var query = InvokeTransactionV3(senderAddress: address, calldata: calldata,
                                            common: TransactionV3Common(nonce: nonce, resourceBounds: .zero, tip: tip, isQuery: true))
            query.signature = try key.sign(query.hash(chainId: chainId)).felts
            let estimates = try await provider.estimateFee([.invoke(query)])
            guard let estimate = estimates.first else { throw PurseError.invalidResponse("The node returned no fee estimate") }
            bounds = estimate.resourceBounds(margin: feeMargin)
        }
        var transaction = InvokeTransactionV3(senderAddress: address, calldata: calldata,
                                              common: TransactionV3Common(nonce: nonce, resourceBounds: bounds!, tip: tip))
        transaction.signature = try key.sign(transaction.hash(chainId: chainId)).felts
        return transaction
    }

    /// Signs and sends `calls` as one transaction; returns its hash. A nonce the node refuses
    /// (another sender of the account was first) makes the transaction again with the node's.
    public func execute(_ calls: [Call], resourceBounds: ResourceBounds? = nil, tip: UInt64 = 0) async throws -> Felt {
        for attempt in 1... {
            do {
                return try await send(try await prepare(calls, resourceBounds: resourceBounds, tip: tip))
            } catch let error as StarknetRPCError where error.kind == .invalidNonce && attempt < Self.nonceAttempts {
                try await Task.sleep(for: .milliseconds(Int.random(in: 20...80) * attempt))
            }
        }
        fatalError("unreachable")
    }

    /// Sends a transaction ``prepare(_:resourceBounds:tip:)`` made (with the account's next nonce);
    /// returns its hash. Between the two a caller can weigh its fee (`resourceBounds.maxFee`).
    public func send(_ transaction: InvokeTransactionV3) async throws -> Felt {
        do {
            let hash = try await provider.addInvokeTransaction(transaction)
            nextNonce = transaction.common.nonce + .one
            return hash
        } catch let error as StarknetRPCError where error.kind == .invalidNonce {
            nextNonce = nil
            throw error
        } catch let error as StarknetRPCError where error.kind == .duplicateTransaction && !transaction.common.isQuery {
            // This very transaction (same calls, nonce and bounds, so the same hash) is already
            // with the node — sent by an earlier try whose answer was lost, or by another sender
            // with the same intent: it is the answer, not a second transaction to make.
            nextNonce = transaction.common.nonce + .one
            return try transaction.hash(chainId: try await chain())
        }
    }

    /// Sends `calls` and waits for the receipt (accepted on L2, succeeded or reverted).
    public func executeAndWait(_ calls: [Call], poller: Poller? = nil) async throws -> TransactionReceipt {
        let hash = try await execute(calls)
        if let poller { return try await provider.waitForTransaction(hash, poller: poller) }
        return try await provider.waitForTransaction(hash)
    }

    /// Deploys an OpenZeppelin-style account for `key` (constructor: the public key; salt: the
    /// public key), paying from its future address, which must hold STRK first.
    public static func deploy(key: StarkKey, classHash: Felt, provider: StarknetProvider, feeMargin: Double = 1.5) async throws -> (transactionHash: Felt, address: Felt) {
        let chainId = try await provider.chainId()
        let calldata = [key.publicKey]
        var query = DeployAccountTransactionV3(classHash: classHash, contractAddressSalt: key.publicKey, constructorCalldata: calldata,
                                               common: TransactionV3Common(nonce: .zero, resourceBounds: .zero, isQuery: true))
        query.signature = try key.sign(query.hash(chainId: chainId)).felts
        guard let estimate = try await provider.estimateFee([.deployAccount(query)]).first else {
            throw PurseError.invalidResponse("The node returned no fee estimate")
        }
        var transaction = DeployAccountTransactionV3(classHash: classHash, contractAddressSalt: key.publicKey, constructorCalldata: calldata,
                                                     common: TransactionV3Common(nonce: .zero, resourceBounds: estimate.resourceBounds(margin: feeMargin)))
        transaction.signature = try key.sign(transaction.hash(chainId: chainId)).felts
        let sent = try await provider.addDeployAccountTransaction(transaction)
        return (sent.transactionHash, sent.contractAddress)
    }
}

/// An ERC-20 token contract (STRK): reads through `starknet_call`, writes as `Call`s.
public struct ERC20: Sendable {
    public let address: Felt
    public let provider: StarknetProvider

    /// STRK's address on mainnet and Sepolia.
    public static let strkAddress = Felt("0x04718f5a0fc34cc1af16a1cdee98ffb20c31f5cd61d6ab07201858f4287c938d")!

    public init(address: Felt = ERC20.strkAddress, provider: StarknetProvider) {
        self.address = address
        self.provider = provider
    }

    public func balance(of owner: Felt) async throws -> UInt256 {
        try Self.u256(try await provider.call(Call(to: address, entrypoint: "balance_of", calldata: [owner])))
    }

    public func allowance(owner: Felt, spender: Felt) async throws -> UInt256 {
        try Self.u256(try await provider.call(Call(to: address, entrypoint: "allowance", calldata: [owner, spender])))
    }

    public func approve(_ spender: Felt, _ amount: UInt256) -> Call {
        Call(to: address, entrypoint: "approve", calldata: [spender] + amount.felts)
    }

    public func transfer(to recipient: Felt, _ amount: UInt256) -> Call {
        Call(to: address, entrypoint: "transfer", calldata: [recipient] + amount.felts)
    }

    static func u256(_ felts: [Felt]) throws -> UInt256 {
        guard felts.count == 2, let value = UInt256(low: felts[0], high: felts[1]) else {
            throw PurseError.invalidResponse("Expected a u256 (two felts), got \(felts.count) felts")
        }
        return value
    }
}

/// The vault contract: per-depositor STRK balances. `deposit` pulls approved STRK from the
/// caller (`deposit_for` into another's balance); `withdraw(recipient, amount)` sends from the
/// caller's vault balance.
public struct VaultContract: Sendable {
    public let address: Felt
    public let token: ERC20

    public init(address: Felt, token: ERC20) {
        self.address = address
        self.token = token
    }

    public func balance(of owner: Felt) async throws -> UInt256 {
        try ERC20.u256(try await token.provider.call(Call(to: address, entrypoint: "balance_of", calldata: [owner])))
    }

    /// Approve and deposit, as one multicall.
    public func depositCalls(_ amount: UInt256) -> [Call] {
        [token.approve(address, amount), Call(to: address, entrypoint: "deposit", calldata: amount.felts)]
    }

    /// Approve and deposit into `recipient`'s vault balance (`deposit_for`), as one multicall.
    public func depositCalls(for recipient: Felt, _ amount: UInt256) -> [Call] {
        [token.approve(address, amount), Call(to: address, entrypoint: "deposit_for", calldata: [recipient] + amount.felts)]
    }

    public func withdraw(to recipient: Felt, _ amount: UInt256) -> Call {
        Call(to: address, entrypoint: "withdraw", calldata: [recipient] + amount.felts)
    }
}

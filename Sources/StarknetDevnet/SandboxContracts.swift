import Starknet

/// The sandbox's contracts, native Swift with the semantics and storage layout of their Cairo
/// counterparts: an OpenZeppelin-style ERC-20 (the STRK token), the vault, OpenZeppelin-style
/// accounts, and the Universal Deployer. Each class has a fixed class hash; a call is dispatched
/// on the selector.
public enum SandboxClass: String, CaseIterable, Sendable {
    case erc20
    case vault
    case account
    case udc

    /// The class hashes (Poseidon of the class's name and version; the sandbox's own classes, not
    /// hashes of a Sierra program).
    public var classHash: Felt { Self.classHashes[self]! }

    /// Computed once: every contract call looks its class up by hash.
    static let classHashes: [SandboxClass: Felt] = Dictionary(uniqueKeysWithValues: allCases.map { kind in
        (kind, Poseidon.hash(many: [Felt(shortString: "purse-sandbox")!, Felt(shortString: kind.rawValue)!, Felt(1)]))
    })
    static let byClassHash: [Felt: SandboxClass] = Dictionary(uniqueKeysWithValues: classHashes.map { ($1, $0) })

    init?(classHash: Felt) {
        guard let known = Self.byClassHash[classHash] else { return nil }
        self = known
    }

    /// Each class's entry points by selector, for dispatch (the selectors hashed once).
    static let entryPointsBySelector: [SandboxClass: [Felt: String]] = Dictionary(uniqueKeysWithValues: allCases.map { kind in
        (kind, Dictionary(kind.entryPoints.map { (Selector.from(name: $0), $0) }, uniquingKeysWith: { first, _ in first }))
    })

    /// External entry points, for `starknet_getClassAt` and dispatch.
    var entryPoints: [String] {
        switch self {
        case .erc20:
            ["name", "symbol", "decimals", "total_supply", "totalSupply", "balance_of", "balanceOf", "allowance",
             "transfer", "transfer_from", "transferFrom", "approve"]
        case .vault:
            ["deposit", "deposit_for", "withdraw", "balance_of", "total_assets", "asset"]
        case .account:
            ["__validate__", "__validate_deploy__", "__execute__", "get_public_key", "is_valid_signature", "supports_interface",
             "execute_from_outside_v2", "is_valid_outside_execution_nonce"]
        case .udc:
            ["deployContract", "deploy_contract"]
        }
    }
}

/// Executes calls against the contracts in a `ChainState`.
struct SandboxVM {
    let state: ChainState
    let chainId: Felt
    /// The block's time (Unix seconds), as `get_block_timestamp` gives it.
    var timestamp: UInt64 = 0

    static let maxCallDepth = 8

    /// Calls `selector` on `address` as `caller`; throws `ContractRevert` with the Cairo-style reason.
    func call(_ address: Felt, _ selector: Felt, _ calldata: [Felt], caller: Felt, depth: Int = 0) async throws -> [Felt] {
        guard depth < Self.maxCallDepth else { throw ContractRevert(reason: "Max call depth exceeded") }
        guard let record = try await state.contract(at: address) else {
            throw ContractRevert(reason: "Requested contract address \(address) is not deployed.")
        }
        guard let kind = SandboxClass(classHash: record.classHash) else {
            throw ContractRevert(reason: "Class with hash \(record.classHash) is not declared.")
        }
        guard let name = SandboxClass.entryPointsBySelector[kind]?[selector] else {
            throw ContractRevert(reason: "Entry point \(selector) not found in contract.")
        }
        var arguments = Arguments(calldata, entryPoint: name)
        let result: [Felt]
        switch kind {
        case .erc20: result = try await ERC20Contract(vm: self, address: address).invoke(name, &arguments, caller: caller)
        case .vault: result = try await VaultContract(vm: self, address: address, depth: depth).invoke(name, &arguments, caller: caller)
        case .account: result = try await AccountContract(vm: self, address: address).invoke(name, &arguments, caller: caller, depth: depth)
        case .udc: result = try await UniversalDeployer(vm: self, address: address).invoke(name, &arguments, caller: caller)
        }
        try arguments.finish()
        return result
    }
}

/// Reads a call's calldata the way Cairo's Serde does, reverting on short or malformed input.
struct Arguments {
    let felts: [Felt]
    let entryPoint: String
    var index = 0

    init(_ felts: [Felt], entryPoint: String) {
        self.felts = felts
        self.entryPoint = entryPoint
    }

    mutating func felt() throws -> Felt {
        guard index < felts.count else { throw ContractRevert(reason: "Failed to deserialize param #\(index + 1)") }
        defer { index += 1 }
        return felts[index]
    }

    mutating func u256() throws -> UInt256 {
        let low = try felt(), high = try felt()
        guard let value = UInt256(low: low, high: high) else { throw ContractRevert(reason: "Failed to deserialize param #\(index - 1): u256 out of range") }
        return value
    }

    mutating func array() throws -> [Felt] {
        guard let count = try felt().uint64, count <= UInt64(felts.count - index) else {
            throw ContractRevert(reason: "Failed to deserialize param #\(index): array length")
        }
        defer { index += Int(count) }
        return Array(felts[index..<(index + Int(count))])
    }

    func finish() throws {
        guard index == felts.count else { throw ContractRevert(reason: "Input too long for arguments of \(entryPoint)") }
    }
}

/// Balances, allowances and supply of an ERC-20 (OpenZeppelin's component: `ERC20_balances`,
/// `ERC20_allowances`, `ERC20_total_supply`), with its `Transfer` and `Approval` events.
struct ERC20Contract {
    let vm: SandboxVM
    let address: Felt
    var state: ChainState { vm.state }

    static func balanceKey(_ owner: Felt) -> Felt { StorageAddress.of("ERC20_balances", owner) }
    static func allowanceKey(_ owner: Felt, _ spender: Felt) -> Felt { StorageAddress.of("ERC20_allowances", owner, spender) }
    static let supplyKey = StorageAddress.of("ERC20_total_supply")
    static let nameKey = StorageAddress.of("ERC20_name")
    static let symbolKey = StorageAddress.of("ERC20_symbol")
    static let decimalsKey = StorageAddress.of("ERC20_decimals")

    func invoke(_ name: String, _ arguments: inout Arguments, caller: Felt) async throws -> [Felt] {
        switch name {
        case "name": return ByteArray.serialize(try await state.read(address, Self.nameKey).shortString ?? "")
        case "symbol": return ByteArray.serialize(try await state.read(address, Self.symbolKey).shortString ?? "")
        case "decimals": return [try await state.read(address, Self.decimalsKey)]
        case "total_supply", "totalSupply": return try await state.readU256(address, Self.supplyKey).felts
        case "balance_of", "balanceOf": return try await balance(of: try arguments.felt()).felts
        case "allowance":
            let owner = try arguments.felt(), spender = try arguments.felt()
            return try await state.readU256(address, Self.allowanceKey(owner, spender)).felts
        case "transfer":
            let recipient = try arguments.felt(), amount = try arguments.u256()
            try await transfer(from: caller, to: recipient, amount)
            return [.one]
        case "transfer_from", "transferFrom":
            let sender = try arguments.felt(), recipient = try arguments.felt(), amount = try arguments.u256()
            try await spendAllowance(owner: sender, spender: caller, amount)
            try await transfer(from: sender, to: recipient, amount)
            return [.one]
        case "approve":
            let spender = try arguments.felt(), amount = try arguments.u256()
            guard !caller.isZero else { throw ContractRevert(reason: "ERC20: approve from 0") }
            guard !spender.isZero else { throw ContractRevert(reason: "ERC20: approve to 0") }
            state.writeU256(address, Self.allowanceKey(caller, spender), amount)
            state.emit(ChainEvent(from_address: address, keys: [KnownSelector.approval, caller, spender], data: amount.felts))
            return [.one]
        default:
            throw ContractRevert(reason: "Entry point \(name) not found in contract.")
        }
    }

    func balance(of owner: Felt) async throws -> UInt256 {
        try await state.readU256(address, Self.balanceKey(owner))
    }

    func transfer(from sender: Felt, to recipient: Felt, _ amount: UInt256) async throws {
        guard !sender.isZero else { throw ContractRevert(reason: "ERC20: transfer from 0") }
        guard !recipient.isZero else { throw ContractRevert(reason: "ERC20: transfer to 0") }
        guard let remaining = try await balance(of: sender).subtracting(amount) else {
            throw ContractRevert(reason: "ERC20: insufficient balance")
        }
        state.writeU256(address, Self.balanceKey(sender), remaining)
        let credited = try await balance(of: recipient).adding(amount)!
        state.writeU256(address, Self.balanceKey(recipient), credited)
        state.emit(ChainEvent(from_address: address, keys: [KnownSelector.transfer, sender, recipient], data: amount.felts))
    }

    func spendAllowance(owner: Felt, spender: Felt, _ amount: UInt256) async throws {
        let key = Self.allowanceKey(owner, spender)
        let current = try await state.readU256(address, key)
        // An allowance of 2^256 − 1 is unlimited, as in OpenZeppelin's component.
        if current == UInt256("0x" + String(repeating: "f", count: 64))! { return }
        guard let remaining = current.subtracting(amount) else { throw ContractRevert(reason: "ERC20: insufficient allowance") }
        state.writeU256(address, key, remaining)
    }

    /// Creates tokens (the sandbox faucet and genesis; no entry point reaches it).
    func mint(to recipient: Felt, _ amount: UInt256) async throws {
        guard let supply = try await state.readU256(address, Self.supplyKey).adding(amount),
              let credited = try await balance(of: recipient).adding(amount) else {
            throw ContractRevert(reason: "ERC20: supply overflow")
        }
        state.writeU256(address, Self.supplyKey, supply)
        state.writeU256(address, Self.balanceKey(recipient), credited)
        state.emit(ChainEvent(from_address: address, keys: [KnownSelector.transfer, .zero, recipient], data: amount.felts))
    }
}

/// The vault: holds STRK for each depositor. `deposit(amount)` pulls the caller's STRK (after
/// an `approve`), `deposit_for(recipient, amount)` the same into another's vault balance (a
/// refund returning where a purchase was paid from), `withdraw(recipient, amount)` sends it out
/// of the caller's vault balance.
struct VaultContract {
    let vm: SandboxVM
    let address: Felt
    let depth: Int
    var state: ChainState { vm.state }

    static let assetKey = StorageAddress.of("Vault_asset")
    static let totalKey = StorageAddress.of("Vault_total_assets")
    static func balanceKey(_ owner: Felt) -> Felt { StorageAddress.of("Vault_balances", owner) }

    func invoke(_ name: String, _ arguments: inout Arguments, caller: Felt) async throws -> [Felt] {
        switch name {
        case "asset": return [try await state.read(address, Self.assetKey)]
        case "total_assets": return try await state.readU256(address, Self.totalKey).felts
        case "balance_of": return try await state.readU256(address, Self.balanceKey(try arguments.felt())).felts
        case "deposit":
            let amount = try arguments.u256()
            guard amount > .zero else { throw ContractRevert(reason: "Vault: amount is zero") }
            let asset = try await state.read(address, Self.assetKey)
            _ = try await vm.call(asset, KnownSelector.transferFromEntry, [caller, address] + amount.felts, caller: address, depth: depth + 1)
            try await credit(caller, amount)
            state.emit(ChainEvent(from_address: address, keys: [KnownSelector.deposit, caller], data: amount.felts))
            return []
        case "deposit_for":
            let recipient = try arguments.felt(), amount = try arguments.u256()
            guard amount > .zero else { throw ContractRevert(reason: "Vault: amount is zero") }
            let asset = try await state.read(address, Self.assetKey)
            _ = try await vm.call(asset, KnownSelector.transferFromEntry, [caller, address] + amount.felts, caller: address, depth: depth + 1)
            try await credit(recipient, amount)
            state.emit(ChainEvent(from_address: address, keys: [KnownSelector.deposit, caller, recipient], data: amount.felts))
            return []
        case "withdraw":
            let recipient = try arguments.felt(), amount = try arguments.u256()
            guard amount > .zero else { throw ContractRevert(reason: "Vault: amount is zero") }
            let balance = try await state.readU256(address, Self.balanceKey(caller))
            guard let remaining = balance.subtracting(amount) else { throw ContractRevert(reason: "Vault: insufficient balance") }
            state.writeU256(address, Self.balanceKey(caller), remaining)
            let total = try await state.readU256(address, Self.totalKey)
            state.writeU256(address, Self.totalKey, total.subtracting(amount) ?? .zero)
            let asset = try await state.read(address, Self.assetKey)
            _ = try await vm.call(asset, KnownSelector.transferEntry, [recipient] + amount.felts, caller: address, depth: depth + 1)
            state.emit(ChainEvent(from_address: address, keys: [KnownSelector.withdraw, caller, recipient], data: amount.felts))
            return []
        default:
            throw ContractRevert(reason: "Entry point \(name) not found in contract.")
        }
    }

    func credit(_ owner: Felt, _ amount: UInt256) async throws {
        let balance = try await state.readU256(address, Self.balanceKey(owner))
        let total = try await state.readU256(address, Self.totalKey)
        guard let newBalance = balance.adding(amount), let newTotal = total.adding(amount) else { throw ContractRevert(reason: "Vault: overflow") }
        state.writeU256(address, Self.balanceKey(owner), newBalance)
        state.writeU256(address, Self.totalKey, newTotal)
    }
}

/// An OpenZeppelin-style account: one Stark public key (`Account_public_key`), signatures
/// `[r, s]` over the transaction hash, and a multicall `__execute__`.
struct AccountContract {
    let vm: SandboxVM
    let address: Felt
    var state: ChainState { vm.state }

    static let publicKeyKey = StorageAddress.of("Account_public_key")
    static let validMagic = Felt(shortString: "VALID")!
    /// SRC-6 (ISRC6) and SRC-5 interface ids.
    static let src6 = Felt("0x2ceccef7f994940b3962a6c67e0ba4fcd37df7d131417c604f91e03caecc1cd")!
    static let src5 = Felt("0x3f918d17e5ee77373b56385708f855659a07f75997f365cf87748628532a055")!

    func invoke(_ name: String, _ arguments: inout Arguments, caller: Felt, depth: Int) async throws -> [Felt] {
        switch name {
        case "get_public_key":
            return [try await publicKey()]
        case "is_valid_signature":
            let hash = try arguments.felt(), signature = try arguments.array()
            return [try await isValid(hash: hash, signature: signature) ? Self.validMagic : .zero]
        case "supports_interface":
            let id = try arguments.felt()
            return [id == Self.src6 || id == Self.src5 || id == Self.src9 ? .one : .zero]
        case "execute_from_outside_v2":
            arguments.index = arguments.felts.count
            return try await executeFromOutside(arguments.felts, caller: caller, depth: depth)
        case "is_valid_outside_execution_nonce":
            let nonce = try arguments.felt()
            return [try await state.read(address, Self.outsideNonceKey(nonce)).isZero ? .one : .zero]
        case "__execute__", "__validate__", "__validate_deploy__":
            // Only the protocol calls these (caller 0), through the transaction flow.
            _ = arguments.felts
            throw ContractRevert(reason: "Account: invalid caller")
        default:
            throw ContractRevert(reason: "Entry point \(name) not found in contract.")
        }
    }

    static let src9 = Felt("0x1d1144bb2138366ff28d8e9ab57456b1d332ac42196230c3a602003c89872")!
    static func outsideNonceKey(_ nonce: Felt) -> Felt { StorageAddress.of("SRC9_nonces", nonce) }

    /// SNIP-9 v2: checks the submitter, the time window, the nonce and the signature over the
    /// typed-data hash, marks the nonce used, then runs the calls as this account.
    func executeFromOutside(_ calldata: [Felt], caller: Felt, depth: Int) async throws -> [Felt] {
        guard let (execution, signature) = OutsideExecution.parse(calldata: calldata) else {
            throw ContractRevert(reason: "Failed to deserialize param #1")
        }
        guard execution.caller == OutsideExecution.anyCaller || execution.caller == caller else {
            throw ContractRevert(reason: "SRC9: invalid caller")
        }
        guard vm.timestamp > execution.executeAfter else { throw ContractRevert(reason: "SRC9: now <= execute_after") }
        guard vm.timestamp < execution.executeBefore else { throw ContractRevert(reason: "SRC9: now >= execute_before") }
        let nonceKey = Self.outsideNonceKey(execution.nonce)
        guard try await state.read(address, nonceKey).isZero else { throw ContractRevert(reason: "SRC9: duplicated nonce") }
        let hash = execution.messageHash(chainId: vm.chainId, account: address)
        guard try await isValid(hash: hash, signature: signature) else { throw ContractRevert(reason: "SRC9: invalid signature") }
        state.write(address, nonceKey, .one)
        var results: [Felt] = [Felt(UInt64(execution.calls.count))]
        for call in execution.calls {
            let result = try await vm.call(call.to, call.selector, call.calldata, caller: address, depth: depth + 1)
            results.append(Felt(UInt64(result.count)))
            results += result
        }
        return results
    }

    func publicKey() async throws -> Felt { try await state.read(address, Self.publicKeyKey) }

    func isValid(hash: Felt, signature: [Felt]) async throws -> Bool {
        guard signature.count == 2 else { return false }
        return StarkVerifier.verify(hash, signature: StarkSignature(r: signature[0], s: signature[1]), publicKey: try await publicKey())
    }
}

/// The Universal Deployer Contract at Starknet's address: `deployContract(class_hash, salt,
/// unique, calldata)` deploys a contract of a known class (accounts, whose constructor takes the
/// public key) — with `unique` the salt is `pedersen(caller, salt)` and the deployer the UDC,
/// otherwise the deployer is 0, so the address is the one DEPLOY_ACCOUNT would give. Emits
/// `ContractDeployed`.
struct UniversalDeployer {
    let vm: SandboxVM
    let address: Felt
    var state: ChainState { vm.state }

    static let address = ContractAddress.universalDeployer

    func invoke(_ name: String, _ arguments: inout Arguments, caller: Felt) async throws -> [Felt] {
        let classHash = try arguments.felt(), salt = try arguments.felt(), unique = try arguments.felt(), calldata = try arguments.array()
        guard SandboxClass(classHash: classHash) == .account else {
            throw ContractRevert(reason: "Class with hash \(classHash) is not declared.")
        }
        guard calldata.count == 1, !calldata[0].isZero else { throw ContractRevert(reason: "Failed to deserialize param #1") }
        let (deploySalt, deployer) = unique.isZero ? (salt, Felt.zero) : (Pedersen.hash(caller, salt), address)
        let deployed = ContractAddress.compute(classHash: classHash, salt: deploySalt, constructorCalldata: calldata, deployer: deployer)
        guard try await state.contract(at: deployed) == nil else {
            throw ContractRevert(reason: "Requested contract address \(deployed) is unavailable for deployment.")
        }
        state.deploy(deployed, classHash: classHash)
        state.write(deployed, AccountContract.publicKeyKey, calldata[0])
        state.emit(ChainEvent(from_address: address, keys: [KnownSelector.contractDeployed],
                              data: [deployed, caller, unique, classHash, Felt(UInt64(calldata.count))] + calldata + [salt]))
        return [deployed]
    }
}

/// The selectors of the events the contracts emit and of the entry points they call, hashed once.
enum KnownSelector {
    static let approval = Selector.from(name: "Approval")
    static let contractDeployed = Selector.from(name: "ContractDeployed")
    static let deposit = Selector.from(name: "Deposit")
    static let transfer = Selector.from(name: "Transfer")
    static let withdraw = Selector.from(name: "Withdraw")
    static let transferEntry = Selector.from(name: "transfer")
    static let transferFromEntry = Selector.from(name: "transfer_from")
}

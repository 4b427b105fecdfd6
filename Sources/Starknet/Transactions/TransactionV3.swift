/// Version 3 transactions (SNIP-8): INVOKE and DEPLOY_ACCOUNT, their hashes and their JSON-RPC
/// form. Fees are paid in STRK (fri) within the resource bounds the sender signs.

/// The most the sender pays for one resource: an amount of it and a price per unit.
public struct ResourceBound: Hashable, Sendable, Codable {
    /// Units (u64).
    public var maxAmount: UInt64
    /// Fri per unit (u128).
    public var maxPricePerUnit: UInt128

    public init(maxAmount: UInt64, maxPricePerUnit: UInt128) {
        self.maxAmount = maxAmount
        self.maxPricePerUnit = maxPricePerUnit
    }

    public static let zero = ResourceBound(maxAmount: 0, maxPricePerUnit: 0)

    /// The most this bound lets the sender pay.
    public var maxFee: UInt256 {
        let (high, low) = UInt128(maxAmount).multipliedFullWidth(by: maxPricePerUnit)
        return UInt256(value: U256(UInt64(truncatingIfNeeded: low), UInt64(truncatingIfNeeded: low >> 64),
                                   UInt64(truncatingIfNeeded: high), UInt64(truncatingIfNeeded: high >> 64)))
    }

    enum CodingKeys: String, CodingKey {
        case maxAmount = "max_amount"
        case maxPricePerUnit = "max_price_per_unit"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let amount = try container.decode(Felt.self, forKey: .maxAmount)
        let price = try container.decode(Felt.self, forKey: .maxPricePerUnit)
        guard let amountValue = amount.uint64 else {
            throw DecodingError.dataCorruptedError(forKey: .maxAmount, in: container, debugDescription: "max_amount must fit 64 bits")
        }
        guard price.raw.l2 | price.raw.l3 == 0 else {
            throw DecodingError.dataCorruptedError(forKey: .maxPricePerUnit, in: container, debugDescription: "max_price_per_unit must fit 128 bits")
        }
        maxAmount = amountValue
        maxPricePerUnit = UInt128(price.raw.l1) << 64 | UInt128(price.raw.l0)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Felt(maxAmount), forKey: .maxAmount)
        try container.encode(Felt(raw: U256(UInt64(truncatingIfNeeded: maxPricePerUnit), UInt64(truncatingIfNeeded: maxPricePerUnit >> 64), 0, 0)), forKey: .maxPricePerUnit)
    }

    /// The bound as the transaction hash encodes it: name << 192 | amount << 128 | price.
    func hashWord(name: String) -> Felt {
        let prefix = Felt(shortString: name)!.raw
        return Felt(raw: U256(UInt64(truncatingIfNeeded: maxPricePerUnit), UInt64(truncatingIfNeeded: maxPricePerUnit >> 64),
                              maxAmount, prefix.l0))
    }
}

/// The three resources a v3 transaction bounds.
public struct ResourceBounds: Hashable, Sendable, Codable {
    public var l1Gas: ResourceBound
    public var l2Gas: ResourceBound
    public var l1DataGas: ResourceBound

    public init(l1Gas: ResourceBound, l2Gas: ResourceBound, l1DataGas: ResourceBound) {
        self.l1Gas = l1Gas
        self.l2Gas = l2Gas
        self.l1DataGas = l1DataGas
    }

    public static let zero = ResourceBounds(l1Gas: .zero, l2Gas: .zero, l1DataGas: .zero)

    /// The most the transaction can be charged: the sum over the three resources.
    public var maxFee: UInt256 {
        l1Gas.maxFee.adding(l2Gas.maxFee)!.adding(l1DataGas.maxFee)!
    }

    enum CodingKeys: String, CodingKey {
        case l1Gas = "l1_gas"
        case l2Gas = "l2_gas"
        case l1DataGas = "l1_data_gas"
    }

    var hashWords: [Felt] {
        [l1Gas.hashWord(name: "L1_GAS"), l2Gas.hashWord(name: "L2_GAS"), l1DataGas.hashWord(name: "L1_DATA")]
    }
}

/// Where a transaction's nonce and fee state live.
public enum DataAvailabilityMode: String, Hashable, Sendable, Codable {
    case l1 = "L1"
    case l2 = "L2"

    var value: UInt64 { self == .l1 ? 0 : 1 }
}

/// The fields every v3 transaction signs besides its own.
public struct TransactionV3Common: Hashable, Sendable {
    public var nonce: Felt
    public var resourceBounds: ResourceBounds
    public var tip: UInt64
    public var paymasterData: [Felt]
    public var nonceDataAvailabilityMode: DataAvailabilityMode
    public var feeDataAvailabilityMode: DataAvailabilityMode
    /// A query (fee estimation or simulation) signs version 2^128 + 3 so that its signature can
    /// never be replayed as a real transaction.
    public var isQuery: Bool

    public init(nonce: Felt, resourceBounds: ResourceBounds, tip: UInt64 = 0, paymasterData: [Felt] = [],
                nonceDataAvailabilityMode: DataAvailabilityMode = .l1, feeDataAvailabilityMode: DataAvailabilityMode = .l1,
                isQuery: Bool = false) {
        self.nonce = nonce
        self.resourceBounds = resourceBounds
        self.tip = tip
        self.paymasterData = paymasterData
        self.nonceDataAvailabilityMode = nonceDataAvailabilityMode
        self.feeDataAvailabilityMode = feeDataAvailabilityMode
        self.isQuery = isQuery
    }

    /// The version field: 3, or 2^128 + 3 for a query.
    public var version: Felt { isQuery ? Felt(raw: U256(3, 0, 1, 0)) : Felt(3) }

    func hashPrefix(_ type: String, address: Felt, chainId: Felt) -> [Felt] {
        [
            Felt(shortString: type)!, version, address,
            Poseidon.hash(many: [Felt(tip)] + resourceBounds.hashWords),
            Poseidon.hash(many: paymasterData),
            chainId, nonce,
            Felt(nonceDataAvailabilityMode.value << 32 | feeDataAvailabilityMode.value),
        ]
    }
}

/// An INVOKE v3: an account executes calls (`calldata` is its `__execute__` calldata).
public struct InvokeTransactionV3: Hashable, Sendable {
    public var senderAddress: Felt
    public var calldata: [Felt]
    public var accountDeploymentData: [Felt]
    public var common: TransactionV3Common
    public var signature: [Felt]

    public init(senderAddress: Felt, calldata: [Felt], common: TransactionV3Common, accountDeploymentData: [Felt] = [], signature: [Felt] = []) {
        self.senderAddress = senderAddress
        self.calldata = calldata
        self.accountDeploymentData = accountDeploymentData
        self.common = common
        self.signature = signature
    }

    /// The transaction hash on the chain `chainId` (a short string: `SN_MAIN`, `SN_SEPOLIA`).
    public func hash(chainId: Felt) -> Felt {
        Poseidon.hash(many: common.hashPrefix("invoke", address: senderAddress, chainId: chainId) + [
            Poseidon.hash(many: accountDeploymentData),
            Poseidon.hash(many: calldata),
        ])
    }
}

/// A DEPLOY_ACCOUNT v3: deploys an account contract at the address its class, salt and
/// constructor calldata determine, paying from that address.
public struct DeployAccountTransactionV3: Hashable, Sendable {
    public var classHash: Felt
    public var contractAddressSalt: Felt
    public var constructorCalldata: [Felt]
    public var common: TransactionV3Common
    public var signature: [Felt]

    public init(classHash: Felt, contractAddressSalt: Felt, constructorCalldata: [Felt], common: TransactionV3Common, signature: [Felt] = []) {
        self.classHash = classHash
        self.contractAddressSalt = contractAddressSalt
        self.constructorCalldata = constructorCalldata
        self.common = common
        self.signature = signature
    }

    /// The address the account gets.
    public var contractAddress: Felt {
        ContractAddress.compute(classHash: classHash, salt: contractAddressSalt, constructorCalldata: constructorCalldata)
    }

    public func hash(chainId: Felt) -> Felt {
        Poseidon.hash(many: common.hashPrefix("deploy_account", address: contractAddress, chainId: chainId) + [
            Poseidon.hash(many: constructorCalldata),
            classHash,
            contractAddressSalt,
        ])
    }
}

// MARK: - JSON-RPC form

/// The fields of a v3 transaction as the JSON-RPC specification writes them (`BROADCASTED_*_TXN_V3`).
struct TransactionV3JSON: Codable {
    var type: String
    var version: Felt
    var sender_address: Felt?
    var calldata: [Felt]?
    var account_deployment_data: [Felt]?
    var class_hash: Felt?
    var contract_address_salt: Felt?
    var constructor_calldata: [Felt]?
    var signature: [Felt]
    var nonce: Felt
    var resource_bounds: ResourceBounds
    var tip: Felt
    var paymaster_data: [Felt]
    var nonce_data_availability_mode: DataAvailabilityMode
    var fee_data_availability_mode: DataAvailabilityMode
}

/// A v3 transaction of either kind, as sent to and read from a node.
public enum BroadcastedTransaction: Hashable, Sendable {
    case invoke(InvokeTransactionV3)
    case deployAccount(DeployAccountTransactionV3)

    public var signature: [Felt] {
        switch self {
        case .invoke(let tx): tx.signature
        case .deployAccount(let tx): tx.signature
        }
    }

    public func hash(chainId: Felt) -> Felt {
        switch self {
        case .invoke(let tx): tx.hash(chainId: chainId)
        case .deployAccount(let tx): tx.hash(chainId: chainId)
        }
    }
}

/// Why a transaction in JSON was refused.
public struct TransactionFormatError: Error, CustomStringConvertible {
    public let description: String
}

extension BroadcastedTransaction: Codable {
    public init(from decoder: any Decoder) throws {
        let json = try TransactionV3JSON(from: decoder)
        let query: Bool
        switch json.version {
        case Felt(3): query = false
        case Felt(raw: U256(3, 0, 1, 0)): query = true
        default: throw TransactionFormatError(description: "Only version 3 transactions are supported (version \(json.version))")
        }
        guard let tip = json.tip.uint64 else { throw TransactionFormatError(description: "tip must fit 64 bits") }
        let common = TransactionV3Common(nonce: json.nonce, resourceBounds: json.resource_bounds, tip: tip, paymasterData: json.paymaster_data,
                                         nonceDataAvailabilityMode: json.nonce_data_availability_mode,
                                         feeDataAvailabilityMode: json.fee_data_availability_mode, isQuery: query)
        switch json.type {
        case "INVOKE":
            guard let sender = json.sender_address, let calldata = json.calldata else {
                throw TransactionFormatError(description: "An INVOKE needs sender_address and calldata")
            }
            self = .invoke(InvokeTransactionV3(senderAddress: sender, calldata: calldata, common: common,
                                               accountDeploymentData: json.account_deployment_data ?? [], signature: json.signature))
        case "DEPLOY_ACCOUNT":
            guard let classHash = json.class_hash, let salt = json.contract_address_salt, let calldata = json.constructor_calldata else {
                throw TransactionFormatError(description: "A DEPLOY_ACCOUNT needs class_hash, contract_address_salt and constructor_calldata")
            }
            self = .deployAccount(DeployAccountTransactionV3(classHash: classHash, contractAddressSalt: salt, constructorCalldata: calldata,
                                                             common: common, signature: json.signature))
        default:
            throw TransactionFormatError(description: "Unsupported transaction type \(json.type.prefix(40))")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        let json: TransactionV3JSON
        switch self {
        case .invoke(let tx):
            json = TransactionV3JSON(type: "INVOKE", version: tx.common.version, sender_address: tx.senderAddress, calldata: tx.calldata,
                                     account_deployment_data: tx.accountDeploymentData, signature: tx.signature, nonce: tx.common.nonce,
                                     resource_bounds: tx.common.resourceBounds, tip: Felt(tx.common.tip), paymaster_data: tx.common.paymasterData,
                                     nonce_data_availability_mode: tx.common.nonceDataAvailabilityMode,
                                     fee_data_availability_mode: tx.common.feeDataAvailabilityMode)
        case .deployAccount(let tx):
            json = TransactionV3JSON(type: "DEPLOY_ACCOUNT", version: tx.common.version, class_hash: tx.classHash,
                                     contract_address_salt: tx.contractAddressSalt, constructor_calldata: tx.constructorCalldata,
                                     signature: tx.signature, nonce: tx.common.nonce, resource_bounds: tx.common.resourceBounds,
                                     tip: Felt(tx.common.tip), paymaster_data: tx.common.paymasterData,
                                     nonce_data_availability_mode: tx.common.nonceDataAvailabilityMode,
                                     fee_data_availability_mode: tx.common.feeDataAvailabilityMode)
        }
        try json.encode(to: encoder)
    }
}

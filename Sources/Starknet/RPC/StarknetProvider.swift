import Foundation
import HTTPTypes
import PurseFormats
import PurseHTTP

/// A JSON-RPC error from a Starknet node, with the specification's codes sorted into what a
/// caller acts on.
public struct StarknetRPCError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Int
    public let message: String
    public let data: JSONValue?

    /// What the code means to a caller. A struct with static members, so a code the
    /// specification adds later breaks no caller's `switch` (which ends in `default`).
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let contractNotFound = Kind(rawValue: "contractNotFound")
        public static let entrypointNotFound = Kind(rawValue: "entrypointNotFound")
        public static let blockNotFound = Kind(rawValue: "blockNotFound")
        public static let transactionNotFound = Kind(rawValue: "transactionNotFound")
        public static let classHashNotFound = Kind(rawValue: "classHashNotFound")
        /// A call or simulated transaction failed; the reason is Cairo's (``StarknetRPCError/revertReason``).
        public static let contractError = Kind(rawValue: "contractError")
        public static let invalidNonce = Kind(rawValue: "invalidNonce")
        public static let insufficientResources = Kind(rawValue: "insufficientResources")
        public static let insufficientBalance = Kind(rawValue: "insufficientBalance")
        public static let validationFailure = Kind(rawValue: "validationFailure")
        public static let duplicateTransaction = Kind(rawValue: "duplicateTransaction")
        public static let unsupportedVersion = Kind(rawValue: "unsupportedVersion")
        public static let invalidParams = Kind(rawValue: "invalidParams")
        public static let methodNotFound = Kind(rawValue: "methodNotFound")
        public static let other = Kind(rawValue: "other")
    }

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public var kind: Kind {
        switch code {
        case 20: .contractNotFound
        case 21: .entrypointNotFound
        case 24: .blockNotFound
        case 28: .classHashNotFound
        case 29: .transactionNotFound
        case 40, 41: .contractError
        case 52: .invalidNonce
        case 53: .insufficientResources
        case 54: .insufficientBalance
        case 55: .validationFailure
        case 59: .duplicateTransaction
        case 61: .unsupportedVersion
        case -32602: .invalidParams
        case -32601: .methodNotFound
        default: .other
        }
    }

    /// Why a call or simulated transaction failed, in Cairo's words, for ``Kind/contractError``.
    public var revertReason: String? {
        switch code {
        case 40: data?["revert_error"]?.stringValue ?? detail ?? message
        case 41: data?["execution_error"]?.stringValue ?? detail ?? message
        default: nil
        }
    }

    /// The error's `data` when it is text.
    public var detail: String? { data?.stringValue }

    public var description: String {
        if let detail { return "\(message) (\(code)): \(detail)" }
        if let data, case .object = data, let text = (data["revert_error"] ?? data["execution_error"])?.stringValue { return "\(message) (\(code)): \(text)" }
        return "\(message) (\(code))"
    }
}

/// Which block a query reads.
public enum BlockID: Sendable, Hashable {
    case latest
    case preConfirmed
    case number(UInt64)
    case hash(Felt)

    var json: JSONValue {
        switch self {
        case .latest: "latest"
        case .preConfirmed: "pre_confirmed"
        case .number(let number): ["block_number": .uint(number)]
        case .hash(let hash): ["block_hash": .string(hash.description)]
        }
    }
}

/// A fee estimate: gas per resource, prices, and the total in fri.
public struct FeeEstimate: Sendable, Hashable, Decodable {
    public var l1GasConsumed: Felt
    public var l1GasPrice: Felt
    public var l2GasConsumed: Felt
    public var l2GasPrice: Felt
    public var l1DataGasConsumed: Felt
    public var l1DataGasPrice: Felt
    public var overallFee: Felt
    public var unit: String

    enum CodingKeys: String, CodingKey {
        case l1GasConsumed = "l1_gas_consumed", l1GasPrice = "l1_gas_price", l2GasConsumed = "l2_gas_consumed"
        case l2GasPrice = "l2_gas_price", l1DataGasConsumed = "l1_data_gas_consumed", l1DataGasPrice = "l1_data_gas_price"
        case overallFee = "overall_fee", unit
    }

    /// Resource bounds from the estimate, amounts and prices raised by `margin` (1.5 = 50 % more).
    public func resourceBounds(margin: Double = 1.5) -> ResourceBounds {
        func scaled(_ felt: Felt, _ limit: UInt128) -> UInt128 {
            let value = UInt128(felt.uint64 ?? UInt64.max)
            let factor = UInt128(max(1, margin) * 1_000)
            return min(limit, value * factor / 1_000)
        }
        func price(_ felt: Felt) -> UInt128 {
            let bytes = felt.bigEndianBytes.suffix(16)
            let value = bytes.reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
            let factor = UInt128(max(1, margin) * 1_000)
            let (product, overflow) = value.multipliedReportingOverflow(by: factor)
            return overflow ? UInt128.max : product / 1_000
        }
        return ResourceBounds(
            l1Gas: ResourceBound(maxAmount: UInt64(scaled(l1GasConsumed, UInt128(UInt64.max))), maxPricePerUnit: price(l1GasPrice)),
            l2Gas: ResourceBound(maxAmount: UInt64(scaled(l2GasConsumed, UInt128(UInt64.max))), maxPricePerUnit: price(l2GasPrice)),
            l1DataGas: ResourceBound(maxAmount: UInt64(scaled(l1DataGasConsumed, UInt128(UInt64.max))), maxPricePerUnit: price(l1DataGasPrice)))
    }
}

/// An event in a receipt.
public struct StarknetEvent: Sendable, Hashable, Decodable {
    public var fromAddress: Felt
    public var keys: [Felt]
    public var data: [Felt]

    enum CodingKeys: String, CodingKey { case fromAddress = "from_address", keys, data }
}

/// A transaction's receipt.
public struct TransactionReceipt: Sendable, Hashable, Decodable {
    public struct Fee: Sendable, Hashable, Decodable {
        public var amount: Felt
        public var unit: String
    }

    public var transactionHash: Felt
    public var type: String
    public var actualFee: Fee
    public var executionStatus: ExecutionStatus
    public var finalityStatus: FinalityStatus
    public var blockNumber: UInt64?
    public var blockHash: Felt?
    public var events: [StarknetEvent]
    public var revertReason: String?
    public var contractAddress: Felt?

    enum CodingKeys: String, CodingKey {
        case transactionHash = "transaction_hash", type, actualFee = "actual_fee", executionStatus = "execution_status"
        case finalityStatus = "finality_status", blockNumber = "block_number", blockHash = "block_hash", events
        case revertReason = "revert_reason", contractAddress = "contract_address"
    }

    public var succeeded: Bool { executionStatus == .succeeded }
    public var isAccepted: Bool { finalityStatus.isAccepted }
}

/// Whether a transaction ran to its end (`SUCCEEDED`) or was reverted (`REVERTED`).
public struct ExecutionStatus: OpenChoice {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let succeeded: ExecutionStatus = "SUCCEEDED"
    public static let reverted: ExecutionStatus = "REVERTED"
}

/// How final a transaction (or block) is: `RECEIVED`, `CANDIDATE`, `PRE_CONFIRMED`,
/// `ACCEPTED_ON_L2`, `ACCEPTED_ON_L1`; `PENDING` and `REJECTED` in older nodes' answers.
public struct FinalityStatus: OpenChoice {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let received: FinalityStatus = "RECEIVED"
    public static let preConfirmed: FinalityStatus = "PRE_CONFIRMED"
    public static let acceptedOnL2: FinalityStatus = "ACCEPTED_ON_L2"
    public static let acceptedOnL1: FinalityStatus = "ACCEPTED_ON_L1"

    /// In a block the sequencer has accepted: on L2, or proven on L1.
    public var isAccepted: Bool { self == .acceptedOnL2 || self == .acceptedOnL1 }
}

/// A transaction's status.
public struct TransactionStatus: Sendable, Hashable, Decodable {
    public var finalityStatus: FinalityStatus
    public var executionStatus: ExecutionStatus?
    public var failureReason: String?

    enum CodingKeys: String, CodingKey { case finalityStatus = "finality_status", executionStatus = "execution_status", failureReason = "failure_reason" }
}

/// A block with its transactions' hashes.
public struct BlockWithTxHashes: Sendable, Hashable, Decodable {
    public var blockNumber: UInt64
    public var blockHash: Felt?
    public var parentHash: Felt?
    public var status: FinalityStatus?
    public var timestamp: UInt64
    public var transactions: [Felt]

    enum CodingKeys: String, CodingKey {
        case blockNumber = "block_number", blockHash = "block_hash", parentHash = "parent_hash", status, timestamp, transactions
    }
}

/// A page of events from `starknet_getEvents`.
public struct EventsPage: Sendable, Hashable, Decodable {
    public struct Emitted: Sendable, Hashable, Decodable {
        public var fromAddress: Felt
        public var keys: [Felt]
        public var data: [Felt]
        public var blockNumber: UInt64?
        public var transactionHash: Felt

        enum CodingKeys: String, CodingKey {
            case fromAddress = "from_address", keys, data, blockNumber = "block_number", transactionHash = "transaction_hash"
        }
    }

    public var events: [Emitted]
    public var continuationToken: String?

    enum CodingKeys: String, CodingKey { case events, continuationToken = "continuation_token" }
}

/// A Starknet JSON-RPC client (specification 0.10) over any `HTTPTransport`.
///
/// Errors: transport failures and non-2xx answers as `PurseError`; JSON-RPC errors as
/// `StarknetRPCError`. Requests are not retried here: sending a transaction twice is harmless
/// (the node answers "duplicate"), but the caller decides.
public struct StarknetProvider: Sendable {
    public let url: URL
    let transport: any HTTPTransport
    let timeout: Duration

    public init(url: URL, transport: any HTTPTransport, timeout: Duration = .seconds(30)) {
        self.url = url
        self.transport = transport
        self.timeout = timeout
    }

    /// Calls `method` with params by name and decodes its result.
    public func request<Result: Decodable>(_ method: String, _ params: [String: JSONValue] = [:], as type: Result.Type = Result.self) async throws -> Result {
        try await send(method, JSONEncoder().encode(JSONValue.object(["jsonrpc": "2.0", "id": 1, "method": .string(method), "params": .object(params)])))
    }

    /// Calls `method` with params by name, encoded straight from `params`.
    func request<Params: Encodable, Result: Decodable>(_ method: String, params: Params, as type: Result.Type = Result.self) async throws -> Result {
        try await send(method, JSONEncoder().encode(RPCCall(method: method, params: params)))
    }

    /// A JSON-RPC request whose params are an `Encodable` value.
    struct RPCCall<Params: Encodable>: Encodable {
        var jsonrpc = "2.0"
        var id = 1
        var method: String
        var params: Params
    }

    func send<Result: Decodable>(_ method: String, _ body: Data) async throws -> Result {
        let response = try await transport.send(TransportRequest(method: .post, url: url, headerFields: [.contentType: "application/json", .accept: "application/json"],
                                                                 body: body, timeout: timeout))
        guard response.status.kind == .successful else { throw PurseError.from(response) }
        return try Self.result(of: method, from: response.body)
    }

    /// Reads a node's JSON-RPC answer to `method`: its result as `Result`, or its error as
    /// ``StarknetRPCError``. Whatever the node sends, this throws or returns; it never traps.
    public static func result<Result: Decodable>(of method: String, from body: Data, as type: Result.Type = Result.self) throws -> Result {
        // The usual answer, a result and no error, in one pass; anything else is read as a
        // document to say what it is.
        if let envelope = try? JSONDecoder().decode(Envelope<Result>.self, from: body), !envelope.hasError, let result = envelope.result {
            return result
        }
        let document: JSONValue
        do { document = try JSONDecoder().decode(JSONValue.self, from: body) } catch {
            throw PurseError.invalidResponse("The node's answer is not JSON")
        }
        if let error = document["error"] {
            throw StarknetRPCError(code: Int(error["code"]?.int64Value ?? 0), message: error["message"]?.stringValue ?? "error", data: error["data"])
        }
        guard let result = document["result"] else { throw PurseError.invalidResponse("The node's answer has neither result nor error") }
        do {
            return try JSONDecoder().decode(Result.self, from: JSONEncoder().encode(result))
        } catch {
            throw PurseError.invalidResponse("Unexpected \(method) result: \(error)")
        }
    }

    /// A JSON-RPC answer read straight into its result's type.
    struct Envelope<Result: Decodable>: Decodable {
        var result: Result?
        var hasError: Bool

        enum CodingKeys: String, CodingKey { case result, error }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            hasError = container.contains(.error)
            result = try container.decodeIfPresent(Result.self, forKey: .result)
        }
    }

    public func specVersion() async throws -> String { try await request("starknet_specVersion") }
    public func chainId() async throws -> Felt { try await request("starknet_chainId") }
    public func blockNumber() async throws -> UInt64 { try await request("starknet_blockNumber") }

    public func nonce(of address: Felt, block: BlockID = .preConfirmed) async throws -> Felt {
        try await request("starknet_getNonce", ["block_id": block.json, "contract_address": .string(address.description)])
    }

    public func classHash(at address: Felt, block: BlockID = .preConfirmed) async throws -> Felt {
        try await request("starknet_getClassHashAt", ["block_id": block.json, "contract_address": .string(address.description)])
    }

    public func storage(at address: Felt, key: Felt, block: BlockID = .preConfirmed) async throws -> Felt {
        try await request("starknet_getStorageAt", ["contract_address": .string(address.description), "key": .string(key.description), "block_id": block.json])
    }

    public func call(_ call: Call, block: BlockID = .preConfirmed) async throws -> [Felt] {
        try await request("starknet_call", [
            "request": ["contract_address": .string(call.to.description), "entry_point_selector": .string(call.selector.description),
                        "calldata": .array(call.calldata.map { .string($0.description) })],
            "block_id": block.json,
        ])
    }

    public func estimateFee(_ transactions: [BroadcastedTransaction], skipValidate: Bool = false, block: BlockID = .preConfirmed) async throws -> [FeeEstimate] {
        let encoded = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(transactions))
        return try await request("starknet_estimateFee", [
            "request": encoded, "simulation_flags": skipValidate ? ["SKIP_VALIDATE"] : [], "block_id": block.json,
        ])
    }

    struct Sent: Decodable {
        var transaction_hash: Felt
        var contract_address: Felt?
    }

    /// Sends an INVOKE; returns its hash.
    public func addInvokeTransaction(_ transaction: InvokeTransactionV3) async throws -> Felt {
        struct Params: Encodable { var invoke_transaction: BroadcastedTransaction }
        let sent: Sent = try await request("starknet_addInvokeTransaction", params: Params(invoke_transaction: .invoke(transaction)))
        return sent.transaction_hash
    }

    /// Sends a DEPLOY_ACCOUNT; returns its hash and the new account's address.
    public func addDeployAccountTransaction(_ transaction: DeployAccountTransactionV3) async throws -> (transactionHash: Felt, contractAddress: Felt) {
        struct Params: Encodable { var deploy_account_transaction: BroadcastedTransaction }
        let sent: Sent = try await request("starknet_addDeployAccountTransaction", params: Params(deploy_account_transaction: .deployAccount(transaction)))
        return (sent.transaction_hash, sent.contract_address ?? transaction.contractAddress)
    }

    public func transactionReceipt(_ hash: Felt) async throws -> TransactionReceipt {
        try await request("starknet_getTransactionReceipt", ["transaction_hash": .string(hash.description)])
    }

    public func transactionStatus(_ hash: Felt) async throws -> TransactionStatus {
        try await request("starknet_getTransactionStatus", ["transaction_hash": .string(hash.description)])
    }

    /// The transaction as the node stores it (its RPC JSON with `transaction_hash`).
    public func transaction(_ hash: Felt) async throws -> JSONValue {
        try await request("starknet_getTransactionByHash", ["transaction_hash": .string(hash.description)])
    }

    public func block(_ block: BlockID = .latest) async throws -> BlockWithTxHashes {
        try await request("starknet_getBlockWithTxHashes", ["block_id": block.json])
    }

    public func events(address: Felt? = nil, keys: [[Felt]] = [], from: BlockID? = nil, to: BlockID? = nil,
                       chunkSize: Int = 100, continuationToken: String? = nil) async throws -> EventsPage {
        var filter: [String: JSONValue] = ["chunk_size": .int(Int64(chunkSize)), "keys": .array(keys.map { .array($0.map { .string($0.description) }) })]
        if let address { filter["address"] = .string(address.description) }
        if let from { filter["from_block"] = from.json }
        if let to { filter["to_block"] = to.json }
        if let continuationToken { filter["continuation_token"] = .string(continuationToken) }
        return try await request("starknet_getEvents", ["filter": .object(filter)])
    }

    /// Polls the receipt until the transaction is accepted on L2 (succeeded or reverted).
    public func waitForTransaction(_ hash: Felt, poller: Poller = Poller(interval: .milliseconds(250), multiplier: 1.5, maxInterval: .seconds(5), maxAttempts: 40)) async throws -> TransactionReceipt {
        try await poller.poll {
            do {
                let receipt = try await transactionReceipt(hash)
                return receipt.isAccepted ? .done(receipt) : .pending
            } catch let error as StarknetRPCError where error.kind == .transactionNotFound {
                return .pending
            }
        }
    }
}

import HTTPTypes
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit
import Starknet

/// `POST /starknet/rpc`: the sandbox node's Starknet JSON-RPC (specification 0.10), single
/// requests and batches, params by name or by position, errors inside HTTP 200 as JSON-RPC does.
package struct StarknetRPCRoutes: Sendable {
    let node: SandboxNode

    package init(node: SandboxNode) { self.node = node }

    /// Calldata, signatures and event keys longer than this are refused (as Starknet bounds calldata).
    static let maxFeltsPerList = 4_000
    static let maxEventsChunk = 1_000

    package func mount(on router: Router<PurseRequestContext>) {
        router.post("starknet/rpc") { request, context in
            var request = request
            let body = try await request.collectLimitedBody(context: context)
            let data = Data(buffer: body)
            return Response.jsonData(await answer(data))
        }
    }

    /// The response document for a request document.
    /// The answer to a request body: written with `JavaScriptJSON` (keys sorted, no spaces),
    /// straight from the answer's `JSONValue`, which `JSONEncoder` walked through `Encodable`.
    func answer(_ data: Data) async -> Data {
        func written(_ value: JSONValue) -> Data { Data(JavaScriptJSON.stringify(value).utf8) }
        guard let document = try? StrictJSON.parse(data) else {
            return written(Self.failure(id: .null, RPCError(code: -32700, message: "Parse error")))
        }
        if case .array(let requests) = document {
            guard !requests.isEmpty, requests.count <= 100 else {
                return written(Self.failure(id: .null, RPCError(code: -32600, message: "Invalid Request")))
            }
            var answers: [JSONValue] = []
            for request in requests { answers.append(await answer(request)) }
            return written(.array(answers))
        }
        return written(await answer(document))
    }

    func answer(_ request: JSONValue) async -> JSONValue {
        // JSON-RPC 2.0: an id is a string, a number or null; params, when present, an object or an array.
        // A request that breaks either is answered as invalid with a null id.
        guard case .object(let members) = request, case .string(let method)? = members["method"],
              members["jsonrpc"] == .string("2.0"), let id = Self.requestID(members["id"]),
              members["params"].map({ $0.objectValue != nil || $0.arrayValue != nil }) ?? true else {
            return Self.failure(id: Self.requestID(request["id"]) ?? .null, RPCError(code: -32600, message: "Invalid Request"))
        }
        do {
            let result = try await dispatch(method, Params(members["params"]))
            return ["jsonrpc": "2.0", "id": id, "result": result]
        } catch let error as RPCError {
            return Self.failure(id: id, error)
        } catch let error as DecodingError {
            return Self.failure(id: id, .invalidParams(String(describing: error).prefix(300).description))
        } catch {
            node.environment.logger.error("starknet rpc failed", metadata: ["method": "\(method)", "error": "\(error)"])
            return Self.failure(id: id, .unexpected("The node could not complete the request"))
        }
    }

    /// The request's id when it is one JSON-RPC allows (a missing id reads as null).
    static func requestID(_ value: JSONValue?) -> JSONValue? {
        switch value {
        case nil, .null?: return .null
        case .string?, .int?, .uint?, .double?: return value
        default: return nil
        }
    }

    static func failure(id: JSONValue, _ error: RPCError) -> JSONValue {
        var body: [String: JSONValue] = ["code": .int(Int64(error.code)), "message": .string(error.message)]
        if let data = error.data { body["data"] = data }
        return ["jsonrpc": "2.0", "id": id, "error": .object(body)]
    }

    // MARK: Params

    /// A request's params, by name or by position.
    struct Params {
        let raw: JSONValue?
        init(_ raw: JSONValue?) { self.raw = raw }

        /// The param `name`, the `position`-th of the method's.
        func value(_ name: String, _ position: Int, required: Bool = true) throws -> JSONValue? {
            let found: JSONValue?
            switch raw {
            case .object(let members)?: found = members[name]
            case .array(let items)?: found = position < items.count ? items[position] : nil
            case nil, .null?: found = nil
            default: throw RPCError.invalidParams("params must be an object or an array")
            }
            if found == nil, required { throw RPCError.invalidParams("missing param \(name)") }
            return found
        }

        func felt(_ name: String, _ position: Int) throws -> Felt {
            guard case .string(let text)? = try value(name, position), let felt = Felt(text) else {
                throw RPCError.invalidParams("\(name) must be a felt: 0x-prefixed hex below P")
            }
            return felt
        }

        func decode<T: Decodable>(_ type: T.Type, _ name: String, _ position: Int) throws -> T {
            let value = try value(name, position)!
            do {
                return try Self.decoder.decode(T.self, from: Data(JavaScriptJSON.stringify(value, sortingKeys: false).utf8))
            } catch let error as TransactionFormatError {
                throw RPCError.invalidParams("\(name): \(error.description)")
            } catch {
                throw RPCError.invalidParams("\(name) is malformed: \(Self.describe(error))")
            }
        }

        /// One decoder for every param (decoding with it from several tasks at once is safe).
        static let decoder = JSONDecoder()

        static func describe(_ error: any Error) -> String {
            guard let decoding = error as? DecodingError else { return "\(error)".prefix(200).description }
            switch decoding {
            case .dataCorrupted(let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
                return "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
            case .keyNotFound(let key, let context):
                return "missing \((context.codingPath + [key]).map(\.stringValue).joined(separator: "."))"
            @unknown default:
                return "malformed"
            }
        }

        func blockID(_ position: Int, required: Bool = true) throws -> BlockID {
            guard let value = try value("block_id", position, required: required) else { return .tag("pre_confirmed") }
            switch value {
            case .string(let tag) where ["latest", "pre_confirmed", "l1_accepted"].contains(tag): return .tag(tag)
            case .object(let members):
                if let number = members["block_number"]?.int64Value, number >= 0, members.count == 1 { return .number(number) }
                if case .string(let text)? = members["block_hash"], let hash = Felt(text), members.count == 1 { return .hash(hash) }
            default: break
            }
            throw RPCError.invalidParams("block_id must be latest, pre_confirmed, l1_accepted, {block_number} or {block_hash}")
        }
    }

    enum BlockID {
        case tag(String)
        case number(Int64)
        case hash(Felt)
    }

    // MARK: Methods

    func dispatch(_ method: String, _ params: Params) async throws -> JSONValue {
        switch method {
        case "starknet_specVersion": return .string(SandboxNode.specVersion)
        case "starknet_chainId": return .string(node.chainId.description)
        case "starknet_blockNumber": return .int(try await latestBlock().number)
        case "starknet_blockHashAndNumber":
            let latest = try await latestBlock()
            return ["block_hash": .string(latest.hash.description), "block_number": .int(latest.number)]
        case "starknet_getNonce":
            try await requireBlock(try params.blockID(0))
            let address = try params.felt("contract_address", 1)
            return try await node.database.read { db in
                guard let contract = try await ChainState(db: db).contract(at: address) else { throw RPCError.contractNotFound }
                return .string(Felt(contract.nonce).description)
            }
        case "starknet_getStorageAt":
            let address = try params.felt("contract_address", 0), key = try params.felt("key", 1)
            try await requireBlock(try params.blockID(2))
            return try await node.database.read { db in
                let state = ChainState(db: db)
                guard try await state.contract(at: address) != nil else { throw RPCError.contractNotFound }
                return .string(try await state.read(address, key).description)
            }
        case "starknet_getClassHashAt", "starknet_getClassAt":
            try await requireBlock(try params.blockID(0))
            let address = try params.felt("contract_address", 1)
            let classHash = try await node.database.read { db in
                guard let contract = try await ChainState(db: db).contract(at: address) else { throw RPCError.contractNotFound }
                return contract.classHash
            }
            return method == "starknet_getClassHashAt" ? .string(classHash.description) : try Self.contractClass(classHash)
        case "starknet_getClass":
            try await requireBlock(try params.blockID(0))
            return try Self.contractClass(try params.felt("class_hash", 1))
        case "starknet_call":
            let call = try params.decode(FunctionCall.self, "request", 0)
            try await requireBlock(try params.blockID(1))
            guard call.calldata.count <= Self.maxFeltsPerList else { throw RPCError.invalidParams("calldata is longer than \(Self.maxFeltsPerList) felts") }
            return try await node.database.read { db in
                let state = ChainState(db: db)
                guard try await state.contract(at: call.contract_address) != nil else { throw RPCError.contractNotFound }
                do {
                    let result = try await SandboxVM(state: state, chainId: node.chainId, timestamp: UInt64(max(0, node.environment.now().timeIntervalSince1970))).call(call.contract_address, call.entry_point_selector, call.calldata, caller: .zero)
                    return .array(result.map { .string($0.description) })
                } catch let revert as ContractRevert {
                    if revert.reason.hasPrefix("Entry point") { throw RPCError.entrypointNotFound }
                    throw RPCError.contractError(revert.reason)
                }
            }
        case "starknet_estimateFee":
            let transactions = try params.decode([BroadcastedTransaction].self, "request", 0)
            let flags = try params.value("simulation_flags", 1, required: false)?.arrayValue ?? []
            try await requireBlock(try params.blockID(2, required: false))
            try transactions.forEach(Self.checkSizes)
            let skipValidate = flags.contains(.string("SKIP_VALIDATE"))
            // Estimation runs in a transaction that is never committed: nothing it does stays.
            return try await node.database.read { db in
                let state = ChainState(db: db)
                var estimates: [JSONValue] = []
                for (index, transaction) in transactions.enumerated() {
                    do {
                        let execution = try await node.execute(transaction, in: state, estimating: true, validate: !skipValidate)
                        estimates.append(Self.feeEstimate(execution))
                    } catch var error as RPCError where error.code == 41 {
                        error.data = ["transaction_index": .int(Int64(index)), "execution_error": error.data?["execution_error"] ?? .null]
                        throw error
                    }
                }
                return .array(estimates)
            }
        case "starknet_addInvokeTransaction":
            let transaction = try params.decode(BroadcastedTransaction.self, "invoke_transaction", 0)
            guard case .invoke = transaction else { throw RPCError.invalidParams("invoke_transaction must be an INVOKE") }
            try Self.checkSizes(transaction)
            return ["transaction_hash": .string(try await node.submit(transaction).description)]
        case "starknet_addDeployAccountTransaction":
            let transaction = try params.decode(BroadcastedTransaction.self, "deploy_account_transaction", 0)
            guard case .deployAccount(let deployment) = transaction else { throw RPCError.invalidParams("deploy_account_transaction must be a DEPLOY_ACCOUNT") }
            try Self.checkSizes(transaction)
            let hash = try await node.submit(transaction)
            return ["transaction_hash": .string(hash.description), "contract_address": .string(deployment.contractAddress.description)]
        case "starknet_getTransactionReceipt":
            return try await receipt(try params.felt("transaction_hash", 0))
        case "starknet_getTransactionStatus":
            let stored = try await storedTransaction(try params.felt("transaction_hash", 0))
            var status: [String: JSONValue] = [
                "finality_status": .string(stored.closed ? "ACCEPTED_ON_L2" : "PRE_CONFIRMED"),
                "execution_status": .string(stored.executionStatus),
            ]
            if let reason = stored.revertReason { status["failure_reason"] = .string(reason) }
            return .object(status)
        case "starknet_getTransactionByHash":
            let stored = try await storedTransaction(try params.felt("transaction_hash", 0))
            var body = try JSONDecoder().decode(JSONValue.self, from: Data(stored.bodyText.utf8)).objectValue ?? [:]
            body["transaction_hash"] = .string(stored.hash.description)
            return .object(body)
        case "starknet_getBlockWithTxHashes":
            return try await block(try params.blockID(0))
        case "starknet_getEvents":
            return try await events(try params.value("filter", 0)!)
        default:
            throw RPCError.methodNotFound
        }
    }

    static func checkSizes(_ transaction: BroadcastedTransaction) throws {
        let lists: [[Felt]]
        switch transaction {
        case .invoke(let invoke): lists = [invoke.calldata, invoke.signature, invoke.accountDeploymentData, invoke.common.paymasterData]
        case .deployAccount(let deployment): lists = [deployment.constructorCalldata, deployment.signature, deployment.common.paymasterData]
        }
        if lists.contains(where: { $0.count > maxFeltsPerList }) {
            throw RPCError.invalidParams("calldata and signatures are limited to \(maxFeltsPerList) felts")
        }
    }

    struct FunctionCall: Decodable {
        var contract_address: Felt
        var entry_point_selector: Felt
        var calldata: [Felt]
    }

    static func feeEstimate(_ execution: SandboxNode.Execution) -> JSONValue {
        [
            "l1_gas_consumed": .string(Felt(execution.gas.l1).description),
            "l1_gas_price": .string(UInt256(SandboxGas.l1GasPrice).hex),
            "l2_gas_consumed": .string(Felt(execution.gas.l2).description),
            "l2_gas_price": .string(UInt256(SandboxGas.l2GasPrice).hex),
            "l1_data_gas_consumed": .string(Felt(execution.gas.l1Data).description),
            "l1_data_gas_price": .string(UInt256(SandboxGas.l1DataGasPrice).hex),
            "overall_fee": .string(execution.fee.hex),
            "unit": "FRI",
        ]
    }

    /// A class as `starknet_getClass` shows it: the entry points and ABI of the sandbox's native
    /// contract, with an empty Sierra program (the contract is not Cairo).
    static func contractClass(_ classHash: Felt) throws -> JSONValue {
        guard let kind = SandboxClass(classHash: classHash) else { throw RPCError.classHashNotFound }
        let entryPoints: [JSONValue] = kind.entryPoints.enumerated().map { index, name in
            ["selector": .string(Selector.from(name: name).description), "function_idx": .int(Int64(index))]
        }
        let abi = "[" + kind.entryPoints.map { #"{"type":"function","name":"\#($0)","inputs":[],"outputs":[],"state_mutability":"external"}"# }.joined(separator: ",") + "]"
        return [
            "sierra_program": [],
            "contract_class_version": "0.1.0",
            "entry_points_by_type": ["CONSTRUCTOR": [], "EXTERNAL": .array(entryPoints), "L1_HANDLER": []],
            "abi": .string(abi),
        ]
    }

    // MARK: Reads

    struct BlockRow {
        var number: Int64
        var hash: Felt
    }

    func latestBlock() async throws -> BlockRow {
        try await node.database.read { db in
            guard let row = try await db.raw("""
                SELECT b.number, b.hash FROM starknet_blocks b JOIN starknet_chain c ON c.id = 1 AND b.number = c.latest_block
                """).first() else { throw RPCError(code: 32, message: "There are no blocks") }
            return BlockRow(number: try row.decode(column: "number", as: Int64.self), hash: Felt(try row.decode(column: "hash", as: String.self))!)
        }
    }

    /// State queries answer the current state; a block id must still name a block that exists.
    func requireBlock(_ id: BlockID) async throws {
        switch id {
        case .tag: return
        case .number(let number):
            let latest = try await latestBlock()
            if number > latest.number + 1 { throw RPCError.blockNotFound }
        case .hash(let hash):
            let found = try await node.database.read { db in
                try await db.raw("SELECT number FROM starknet_blocks WHERE hash = \(bind: hash.description)").first() != nil
            }
            if !found { throw RPCError.blockNotFound }
        }
    }

    struct StoredTransaction {
        var hash: Felt
        var type: String
        var sender: Felt
        var blockNumber: Int64
        var blockHash: Felt?
        var closed: Bool
        var executionStatus: String
        var revertReason: String?
        var actualFee: String
        var gas: (l1: Int64, l1Data: Int64, l2: Int64)
        /// The transaction as it was sent (JSON), read only by `starknet_getTransactionByHash`.
        var bodyText: String
        var events: [ChainEvent]
    }

    func storedTransaction(_ hash: Felt, events: Bool = false) async throws -> StoredTransaction {
        try await node.database.read { db in
            guard let row = try await db.raw("""
                SELECT t.*, b.hash AS block_hash, b.closed FROM starknet_transactions t JOIN starknet_blocks b ON b.number = t.block_number
                WHERE t.hash = \(bind: hash.description)
                """).first() else { throw RPCError.transactionNotFound }
            var list: [ChainEvent] = []
            if events {
                list = try await db.raw("SELECT * FROM starknet_events WHERE transaction_hash = \(bind: hash.description) ORDER BY position").all().map { row in
                    ChainEvent(from_address: Felt(try row.decode(column: "from_address", as: String.self))!,
                               keys: SandboxNode.parseFeltList(try row.decode(column: "keys", as: String.self)),
                               data: SandboxNode.parseFeltList(try row.decode(column: "data", as: String.self)))
                }
            }
            return StoredTransaction(
                hash: hash, type: try row.decode(column: "type", as: String.self),
                sender: Felt(try row.decode(column: "sender", as: String.self))!,
                blockNumber: try row.decode(column: "block_number", as: Int64.self),
                blockHash: try row.decode(column: "block_hash", as: String?.self).flatMap { Felt($0) },
                closed: try row.decode(column: "closed", as: Bool.self),
                executionStatus: try row.decode(column: "execution_status", as: String.self),
                revertReason: try row.decode(column: "revert_reason", as: String?.self),
                actualFee: try row.decode(column: "actual_fee", as: String.self),
                gas: (try row.decode(column: "l1_gas", as: Int64.self), try row.decode(column: "l1_data_gas", as: Int64.self), try row.decode(column: "l2_gas", as: Int64.self)),
                bodyText: try row.decode(column: "body", as: String.self), events: list)
        }
    }

    func receipt(_ hash: Felt) async throws -> JSONValue {
        let stored = try await storedTransaction(hash, events: true)
        var receipt: [String: JSONValue] = [
            "type": .string(stored.type),
            "transaction_hash": .string(hash.description),
            "actual_fee": ["amount": .string(stored.actualFee), "unit": "FRI"],
            "execution_status": .string(stored.executionStatus),
            "finality_status": .string(stored.closed ? "ACCEPTED_ON_L2" : "PRE_CONFIRMED"),
            "block_number": .int(stored.blockNumber),
            "messages_sent": [],
            "events": .array(stored.events.map(Self.event)),
            "execution_resources": ["l1_gas": .int(stored.gas.l1), "l1_data_gas": .int(stored.gas.l1Data), "l2_gas": .int(stored.gas.l2)],
        ]
        if stored.closed, let blockHash = stored.blockHash { receipt["block_hash"] = .string(blockHash.description) }
        if let reason = stored.revertReason { receipt["revert_reason"] = .string(reason) }
        if stored.type == "DEPLOY_ACCOUNT" {
            receipt["contract_address"] = .string(stored.sender.description)
        }
        return .object(receipt)
    }

    static func event(_ event: ChainEvent) -> JSONValue {
        ["from_address": .string(event.from_address.description),
         "keys": .array(event.keys.map { .string($0.description) }),
         "data": .array(event.data.map { .string($0.description) })]
    }

    func block(_ id: BlockID) async throws -> JSONValue {
        try await node.database.read { db in
            let row: (any SQLRow)?
            switch id {
            case .tag("pre_confirmed"):
                row = try await db.raw("""
                    SELECT b.* FROM starknet_blocks b JOIN starknet_chain c ON c.id = 1 WHERE b.number = c.latest_block + 1
                    """).first()
                if row == nil {
                    // No transactions pending: an empty pre-confirmed block on top of the latest.
                    let latest = try await latestBlock()
                    return Self.blockJSON(number: latest.number + 1, hash: nil, parent: latest.hash, timestamp: Int64(node.environment.now().timeIntervalSince1970),
                                          closed: false, transactions: [])
                }
            case .tag:
                row = try await db.raw("SELECT b.* FROM starknet_blocks b JOIN starknet_chain c ON c.id = 1 WHERE b.number = c.latest_block").first()
            case .number(let number):
                row = try await db.raw("SELECT * FROM starknet_blocks WHERE number = \(bind: number)").first()
            case .hash(let hash):
                row = try await db.raw("SELECT * FROM starknet_blocks WHERE hash = \(bind: hash.description)").first()
            }
            guard let row else { throw RPCError.blockNotFound }
            let number = try row.decode(column: "number", as: Int64.self)
            let transactions = try await db.raw("SELECT hash, state_diff_length FROM starknet_transactions WHERE block_number = \(bind: number) ORDER BY position").all()
            let hashes = try transactions.map { Felt(try $0.decode(column: "hash", as: String.self))! }
            let diff = try transactions.reduce(Int64(0)) { $0 + (try $1.decode(column: "state_diff_length", as: Int64.self)) }
            let events = try await db.raw("SELECT from_address, keys, data FROM starknet_events WHERE block_number = \(bind: number) ORDER BY transaction_hash, position").all()
            let eventFelts = try events.flatMap { row in
                [Felt(try row.decode(column: "from_address", as: String.self))!]
                    + SandboxNode.parseFeltList(try row.decode(column: "keys", as: String.self))
                    + SandboxNode.parseFeltList(try row.decode(column: "data", as: String.self))
            }
            let parent: Felt?
            if let text = try row.decode(column: "parent_hash", as: String?.self) {
                parent = Felt(text)
            } else {
                parent = try await db.raw("SELECT hash FROM starknet_blocks WHERE number = \(bind: number - 1)").first()
                    .flatMap { try $0.decode(column: "hash", as: String?.self) }.flatMap { Felt($0) }
            }
            var json = Self.blockJSON(number: number, hash: try row.decode(column: "hash", as: String?.self).flatMap { Felt($0) }, parent: parent ?? .zero,
                                      timestamp: try row.decode(column: "timestamp", as: Int64.self), closed: try row.decode(column: "closed", as: Bool.self),
                                      transactions: hashes).objectValue!
            if json["block_hash"] != nil {
                // The sandbox's commitments are Poseidon hashes of the block's contents, not Starknet's
                // Patricia-tree commitments; the counts are exact.
                json["transaction_commitment"] = .string(Poseidon.hash(many: hashes).description)
                json["event_commitment"] = .string(Poseidon.hash(many: eventFelts).description)
                json["receipt_commitment"] = .string(Poseidon.hash(many: hashes + [Felt(UInt64(events.count))]).description)
                json["state_diff_commitment"] = .string(Poseidon.hash(many: [Felt(UInt64(diff))] + hashes).description)
                json["transaction_count"] = .int(Int64(hashes.count))
                json["event_count"] = .int(Int64(events.count))
                json["state_diff_length"] = .int(diff)
            }
            return .object(json)
        }
    }

    static func blockJSON(number: Int64, hash: Felt?, parent: Felt, timestamp: Int64, closed: Bool, transactions: [Felt]) -> JSONValue {
        func price(_ fri: UInt128) -> JSONValue { ["price_in_fri": .string(UInt256(fri).hex), "price_in_wei": .string(UInt256(fri / 1_000).hex)] }
        var block: [String: JSONValue] = [
            "block_number": .int(number),
            "timestamp": .int(timestamp),
            "sequencer_address": .string(SandboxNode.sequencerAddress.description),
            "l1_gas_price": price(SandboxGas.l1GasPrice),
            "l2_gas_price": price(SandboxGas.l2GasPrice),
            "l1_data_gas_price": price(SandboxGas.l1DataGasPrice),
            "l1_da_mode": "BLOB",
            "starknet_version": "0.14.0",
            "transactions": .array(transactions.map { .string($0.description) }),
        ]
        if closed, let hash {
            block["status"] = "ACCEPTED_ON_L2"
            block["block_hash"] = .string(hash.description)
            block["parent_hash"] = .string(parent.description)
            block["new_root"] = .string(Poseidon.hash(many: [hash]).description)
        }
        return .object(block)
    }

    func events(_ filter: JSONValue) async throws -> JSONValue {
        guard case .object(let members) = filter else { throw RPCError.invalidParams("filter must be an object") }
        guard let chunkSize = members["chunk_size"]?.int64Value, chunkSize >= 1 else { throw RPCError.invalidParams("filter.chunk_size must be a positive integer") }
        guard chunkSize <= Int64(Self.maxEventsChunk) else { throw RPCError.pageSizeTooBig }
        let address: Felt? = try members["address"].map { value in
            guard let text = value.stringValue, let felt = Felt(text) else { throw RPCError.invalidParams("filter.address must be a felt") }
            return felt
        }
        let keys: [[Felt]] = try (members["keys"]?.arrayValue ?? []).map { level in
            try (level.arrayValue ?? []).map { value in
                guard let text = value.stringValue, let felt = Felt(text) else { throw RPCError.invalidParams("filter.keys must be felts") }
                return felt
            }
        }
        guard keys.count <= 16, keys.allSatisfy({ $0.count <= 64 }) else { throw RPCError(code: 34, message: "Too many keys provided in a filter") }
        let latest = try await latestBlock().number
        func blockNumber(_ value: JSONValue?, default fallback: Int64) async throws -> Int64 {
            guard let value else { return fallback }
            let params = Params(.array([value]))
            switch try params.blockID(0) {
            case .tag("pre_confirmed"): return latest + 1
            case .tag: return latest
            case .number(let number): return number
            case .hash(let hash):
                return try await node.database.read { db in
                    guard let row = try await db.raw("SELECT number FROM starknet_blocks WHERE hash = \(bind: hash.description)").first() else { throw RPCError.blockNotFound }
                    return try row.decode(column: "number", as: Int64.self)
                }
            }
        }
        let from = try await blockNumber(members["from_block"], default: 0)
        let to = try await blockNumber(members["to_block"], default: latest + 1)
        // The continuation token is "block:transaction:event" of the next event to return.
        var start: (Int64, Int64, Int64) = (from, -1, -1)
        if let token = members["continuation_token"]?.stringValue {
            let parts = token.split(separator: ":").compactMap { Int64($0) }
            guard parts.count == 3 else { throw RPCError.invalidContinuationToken }
            start = (parts[0], parts[1], parts[2])
        }
        let after = start
        let addressText = address?.description ?? ""
        let rows = try await node.database.read { db in
            try await db.raw("""
                SELECT e.*, t.position AS tx_position, b.hash AS block_hash, b.closed FROM starknet_events e
                JOIN starknet_transactions t ON t.hash = e.transaction_hash JOIN starknet_blocks b ON b.number = e.block_number
                WHERE e.block_number BETWEEN \(bind: from) AND \(bind: to)
                  AND (e.block_number > \(bind: after.0) OR (e.block_number = \(bind: after.0) AND (t.position > \(bind: after.1)
                       OR (t.position = \(bind: after.1) AND e.position >= \(bind: after.2)))))
                  AND (\(bind: addressText) = '' OR e.from_address = \(bind: addressText))
                ORDER BY e.block_number, t.position, e.position
                """).all()
        }
        var matched: [JSONValue] = []
        var next: String?
        for row in rows {
            let event = ChainEvent(from_address: Felt(try row.decode(column: "from_address", as: String.self))!,
                                   keys: SandboxNode.parseFeltList(try row.decode(column: "keys", as: String.self)),
                                   data: SandboxNode.parseFeltList(try row.decode(column: "data", as: String.self)))
            let keyMatch = keys.enumerated().allSatisfy { index, allowed in
                allowed.isEmpty || (index < event.keys.count && allowed.contains(event.keys[index]))
            }
            guard keyMatch else { continue }
            let block = try row.decode(column: "block_number", as: Int64.self)
            let txPosition = try row.decode(column: "tx_position", as: Int64.self)
            let position = try row.decode(column: "position", as: Int64.self)
            if matched.count == Int(chunkSize) {
                next = "\(block):\(txPosition):\(position)"
                break
            }
            var emitted = Self.event(event).objectValue!
            emitted["block_number"] = .int(block)
            emitted["transaction_hash"] = .string(try row.decode(column: "transaction_hash", as: String.self))
            emitted["transaction_index"] = .int(txPosition)
            emitted["event_index"] = .int(position)
            if try row.decode(column: "closed", as: Bool.self), let hash = try row.decode(column: "block_hash", as: String?.self) {
                emitted["block_hash"] = .string(hash)
            }
            matched.append(.object(emitted))
        }
        var page: [String: JSONValue] = ["events": .array(matched)]
        if let next { page["continuation_token"] = .string(next) }
        return .object(page)
    }
}

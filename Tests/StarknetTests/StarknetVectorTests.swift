import Foundation
import PurseFormats
import Testing
@testable import Starknet

/// Replays the known answers starknet-py produced (scripts/oracles/starknet_vectors.py).
@Suite("Starknet: starknet-py vectors")
struct StarknetVectorTests {
    static let vectors: JSONValue = {
        let url = Bundle.module.url(forResource: "Fixtures/starknet_vectors", withExtension: "json")!
        return try! JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: url))
    }()

    static func felt(_ value: JSONValue?) -> Felt { Felt(value!.stringValue!)! }
    static func felts(_ value: JSONValue?) -> [Felt] { value!.arrayValue!.map { felt($0) } }
    static func items(_ key: String) -> [JSONValue] { vectors[key]!.arrayValue! }

    @Test func selectors() {
        for item in Self.items("selectors") {
            #expect(Selector.from(name: item["name"]!.stringValue!) == Self.felt(item["selector"]), "\(item)")
        }
    }

    @Test func starknetKeccak() {
        for item in Self.items("keccak") {
            let hex = item["data"]!.stringValue!
            let bytes = stride(from: 0, to: hex.count, by: 2).map { offset -> UInt8 in
                let start = hex.index(hex.startIndex, offsetBy: offset)
                return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
            }
            #expect(Keccak.starknetKeccak(bytes) == Self.felt(item["hash"]), "\(bytes.count) bytes")
        }
    }

    @Test func pedersen() {
        for item in Self.items("pedersen") {
            #expect(Pedersen.hash(Self.felt(item["a"]), Self.felt(item["b"])) == Self.felt(item["hash"]), "\(item)")
        }
        for item in Self.items("hash_on_elements") {
            #expect(Pedersen.hash(elements: Self.felts(item["elements"])) == Self.felt(item["hash"]))
        }
    }

    @Test func poseidon() {
        let poseidon = Self.vectors["poseidon"]!
        for item in poseidon["pairs"]!.arrayValue! {
            #expect(Poseidon.hash(Self.felt(item["a"]), Self.felt(item["b"])) == Self.felt(item["hash"]), "\(item)")
        }
        for item in poseidon["singles"]!.arrayValue! {
            #expect(Poseidon.hash(single: Self.felt(item["x"])) == Self.felt(item["hash"]))
        }
        for item in poseidon["many"]!.arrayValue! {
            let elements = Self.felts(item["elements"])
            #expect(Poseidon.hash(many: elements) == Self.felt(item["hash"]), "\(elements.count) elements")
        }
    }

    @Test func publicKeys() throws {
        for item in Self.items("keys") {
            let key = try StarkKey(privateKey: Self.felt(item["private"]))
            #expect(key.publicKey == Self.felt(item["public"]), "\(item)")
        }
    }

    @Test func signaturesMatchAndVerify() throws {
        for item in Self.items("signatures") {
            let key = try StarkKey(privateKey: Self.felt(item["private"]))
            let hash = Self.felt(item["hash"])
            let signature = try key.sign(hash)
            #expect(signature.r == Self.felt(item["r"]) && signature.s == Self.felt(item["s"]), "hash \(hash)")
            let publicKey = Self.felt(item["public"])
            #expect(StarkVerifier.verify(hash, signature: signature, publicKey: publicKey))
            // (r, N − s) verifies too, and so does starknet-py's default signature (extra entropy).
            #expect(StarkVerifier.verify(hash, signature: StarkSignature(r: signature.r, s: StarkKey.curveOrder - signature.s), publicKey: publicKey))
            let seeded = item["seeded"]!
            #expect(StarkVerifier.verify(hash, signature: StarkSignature(r: Self.felt(seeded["r"]), s: Self.felt(seeded["s"])), publicKey: publicKey))
            // A changed s, another hash or another key does not.
            #expect(!StarkVerifier.verify(hash, signature: StarkSignature(r: signature.r, s: signature.s + 1), publicKey: publicKey))
            #expect(!StarkVerifier.verify(hash + 1, signature: signature, publicKey: publicKey))
            let otherKey = try StarkKey(privateKey: publicKey == (try StarkKey(privateKey: 7)).publicKey ? 8 : 7)
            #expect(!StarkVerifier.verify(hash, signature: signature, publicKey: otherKey.publicKey))
        }
    }

    static func bounds(_ json: JSONValue?) throws -> ResourceBounds {
        try JSONDecoder().decode(ResourceBounds.self, from: JSONEncoder().encode(json!))
    }

    static func mode(_ json: JSONValue?) -> DataAvailabilityMode { json!.stringValue! == "L1" ? .l1 : .l2 }

    @Test func invokeV3Hashes() throws {
        for item in Self.items("invoke_v3") {
            let calls = item["calls"]!.arrayValue!.map { call in
                Call(to: Self.felt(call["to"]), selector: Self.felt(call["selector"]), calldata: Self.felts(call["calldata"]))
            }
            let calldata = Call.executeCalldata(calls)
            #expect(calldata == Self.felts(item["calldata"]))
            #expect(Call.parseExecuteCalldata(calldata) == calls)
            let version = Self.felt(item["version"])
            let common = TransactionV3Common(
                nonce: Self.felt(item["nonce"]), resourceBounds: try Self.bounds(item["resource_bounds"]),
                tip: Self.felt(item["tip"]).uint64!, paymasterData: Self.felts(item["paymaster_data"]),
                nonceDataAvailabilityMode: Self.mode(item["nonce_data_availability_mode"]),
                feeDataAvailabilityMode: Self.mode(item["fee_data_availability_mode"]), isQuery: version != 3)
            #expect(common.version == version)
            let tx = InvokeTransactionV3(senderAddress: Self.felt(item["sender_address"]), calldata: calldata, common: common,
                                         accountDeploymentData: Self.felts(item["account_deployment_data"]))
            #expect(tx.hash(chainId: Self.felt(item["chain_id"])) == Self.felt(item["hash"]))
            // The RPC form round-trips to the same hash.
            let json = try JSONEncoder().encode(BroadcastedTransaction.invoke(tx))
            let decoded = try JSONDecoder().decode(BroadcastedTransaction.self, from: json)
            #expect(decoded.hash(chainId: Self.felt(item["chain_id"])) == Self.felt(item["hash"]))
        }
    }

    @Test func deployAccountV3Hashes() throws {
        for item in Self.items("deploy_account_v3") {
            let version = Self.felt(item["version"])
            let common = TransactionV3Common(nonce: Self.felt(item["nonce"]), resourceBounds: try Self.bounds(item["resource_bounds"]),
                                             tip: 0, isQuery: version != 3)
            let tx = DeployAccountTransactionV3(classHash: Self.felt(item["class_hash"]), contractAddressSalt: Self.felt(item["contract_address_salt"]),
                                                constructorCalldata: Self.felts(item["constructor_calldata"]), common: common)
            #expect(tx.contractAddress == Self.felt(item["contract_address"]))
            #expect(tx.hash(chainId: Self.felt(item["chain_id"])) == Self.felt(item["hash"]))
        }
    }

    @Test func contractAddresses() {
        for item in Self.items("addresses") {
            let address = ContractAddress.compute(classHash: Self.felt(item["class_hash"]), salt: Self.felt(item["salt"]),
                                                  constructorCalldata: Self.felts(item["constructor_calldata"]),
                                                  deployer: Self.felt(item["deployer_address"]))
            #expect(address == Self.felt(item["address"]))
        }
    }

    @Test func byteArraysAndShortStrings() {
        for item in Self.items("byte_arrays") {
            #expect(ByteArray.serialize(item["text"]!.stringValue!) == Self.felts(item["serialized"]), "\(item)")
        }
        for item in Self.items("short_strings") {
            let text = item["text"]!.stringValue!
            #expect(Felt(shortString: text) == Self.felt(item["felt"]))
            if !text.isEmpty { #expect(Self.felt(item["felt"]).shortString == text) }
        }
    }

    @Test func typedDataHashes() throws {
        for item in Self.items("typed_data") {
            let data = try JSONDecoder().decode(TypedData.self, from: JSONEncoder().encode(item["typed_data"]!))
            #expect(try data.messageHash(account: Self.felt(item["account"])) == Self.felt(item["message_hash"]), "\(item["name"]!)")
        }
    }

    /// `OutsideExecution` builds the typed data starknet-py's outside-execution helper builds.
    @Test func outsideExecutionsHashAsStarknetPy() throws {
        let items = Self.items("typed_data").filter { $0["name"] == "outside_execution_v2" }
        #expect(!items.isEmpty)
        for item in items {
            let message = item["typed_data"]!["message"]!
            let calls = message["Calls"]!.arrayValue!.map { call in
                Call(to: Self.felt(call["To"]), selector: Self.felt(call["Selector"]), calldata: call["Calldata"]!.arrayValue!.map { Self.felt($0) })
            }
            let execution = OutsideExecution(caller: Self.felt(message["Caller"]), nonce: Self.felt(message["Nonce"]),
                                             executeAfter: Self.felt(message["Execute After"]).uint64!, executeBefore: Self.felt(message["Execute Before"]).uint64!,
                                             calls: calls)
            let chainId = Felt(item["typed_data"]!["domain"]!["chainId"]!.stringValue!)!
            #expect(execution.messageHash(chainId: chainId, account: Self.felt(item["account"])) == Self.felt(item["message_hash"]))
            // Its calldata reads back.
            let calldata = execution.calldata(signature: [Felt(1), Felt(2)])
            #expect(OutsideExecution.parse(calldata: calldata)?.execution == execution && OutsideExecution.parse(calldata: calldata)?.signature == [Felt(1), Felt(2)])
        }
    }
}

import Foundation
import Starknet

/// The Starknet readers of values that arrive from clients and chain answers.
enum StarknetHarness {
    static func run(_ target: FuzzTarget, _ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        switch target {
        case .felt:
            if let felt = Felt(text) {
                require(Felt(felt.description) == felt, "felt round trip of \(text.prefix(80))")
                _ = felt.uint64
                _ = felt.shortString
            }
            if bytes.count <= 32, let felt = Felt(bigEndianBytes: bytes) { require(Felt(felt.description) == felt, "felt from bytes") }
        case .u256:
            guard let value = UInt256(text) else { return }
            require(UInt256(value.description) == value, "u256 round trip of \(text.prefix(80))")
            let felts = value.felts
            require(UInt256(low: felts[0], high: felts[1]) == value, "u256 through felts")
            _ = value.adding(value)
            _ = value.subtracting(UInt256.zero)
        case .strk:
            guard let amount = try? STRKAmount.parse(text) else { return }
            require((try? STRKAmount.parse(STRKAmount.format(amount))) == amount, "STRK round trip of \(text.prefix(80))")
        case .starknetrpc:
            rpc(bytes)
        default: return
        }
    }

    /// A node's answers, as the client reads them (a hostile or broken node must not stop a
    /// service), and a transaction as the sandbox node reads it from a request.
    static func rpc(_ bytes: [UInt8]) {
        let data = Data(bytes)
        if let fees = try? StarknetProvider.result(of: "starknet_estimateFee", from: data, as: [FeeEstimate].self) {
            for fee in fees { _ = fee.resourceBounds() }
        }
        if let receipt = try? StarknetProvider.result(of: "starknet_getTransactionReceipt", from: data, as: TransactionReceipt.self) { _ = receipt.hashValue }
        _ = try? StarknetProvider.result(of: "starknet_getTransactionStatus", from: data, as: TransactionStatus.self)
        _ = try? StarknetProvider.result(of: "starknet_getBlockWithTxHashes", from: data, as: BlockWithTxHashes.self)
        _ = try? StarknetProvider.result(of: "starknet_getEvents", from: data, as: EventsPage.self)
        if let felts = try? StarknetProvider.result(of: "starknet_call", from: data, as: [Felt].self) {
            _ = OutsideExecution.parse(calldata: felts)
        }
        // The body of starknet_addInvokeTransaction / starknet_estimateFee as the sandbox node reads it.
        guard let transaction = try? JSONDecoder().decode(BroadcastedTransaction.self, from: data) else { return }
        let written = (try? JSONEncoder().encode(transaction)) ?? Data()
        require((try? JSONDecoder().decode(BroadcastedTransaction.self, from: written)) == transaction, "transaction round trip of \(String(decoding: data.prefix(200), as: UTF8.self))")
        _ = transaction.hash(chainId: Felt("0x534e5f5345504f4c4941")!)
    }
}

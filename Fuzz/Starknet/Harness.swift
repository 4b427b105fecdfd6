// libFuzzer harness for the Starknet readers of values that arrive from clients and chain
// answers: felts, u256 amounts and STRK decimal text. Built by scripts/fuzz/libfuzzer.sh with the
// field, curve and Cairo sources (`swiftc -sanitize=fuzzer,address`), never by `swift build`.
import Foundation

enum FuzzTarget: String, CaseIterable { case felt, u256, strk }

let target = chosenTarget(FuzzTarget.self)

func fuzz(_ bytes: [UInt8]) {
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
    }
}

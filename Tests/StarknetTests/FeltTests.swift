import Foundation
import Testing
@testable import Starknet

@Suite("Starknet: felts and field arithmetic")
struct FeltTests {
    @Test func parsingRefusesWhatIsNotAFelt() {
        #expect(Felt("0x0") == .zero)
        #expect(Felt("0x800000000000011000000000000000000000000000000000000000000000000") == .max)
        #expect(Felt("0x800000000000011000000000000000000000000000000000000000000000001") == nil, "P itself")
        #expect(Felt("0x" + String(repeating: "f", count: 64)) == nil)
        #expect(Felt("0x" + String(repeating: "0", count: 70) + "1") == .one, "leading zeros are not significant")
        for bad in ["", "0x", "0xg", "12a", "-1", " 1", "0x1 ", "1.0"] {
            #expect(Felt(bad) == nil, "\(bad)")
        }
        #expect(Felt("3618502788666131213697322783095070105623107215331596699973092056135872020480") == .max)
        #expect(Felt("3618502788666131213697322783095070105623107215331596699973092056135872020481") == nil)
    }

    @Test func printsMinimalHexAndDecimal() {
        #expect(Felt(0).description == "0x0")
        #expect(Felt(255).description == "0xff")
        #expect(Felt(255).paddedHex == "0x" + String(repeating: "0", count: 62) + "ff")
        #expect(Felt.max.decimal == "3618502788666131213697322783095070105623107215331596699973092056135872020480")
        #expect(Felt(shortString: "SN_SEPOLIA")?.description == "0x534e5f5345504f4c4941")
        #expect(Felt(shortString: String(repeating: "a", count: 32)) == nil)
        #expect(Felt(shortString: "é") == nil)
    }

    @Test func montgomeryConstantsAreThoseOfTheModuli() {
        // R² mod m entered and left Montgomery form gives back the value.
        for value: UInt64 in [0, 1, 2, 0xffff_ffff_ffff_ffff] {
            #expect(Fp(value).value == U256(value))
            #expect(Fn(reducing: U256(value)).value == U256(value))
        }
        #expect(Fp.one.value == U256(1))
        #expect(Fn.one.value == U256(1))
        // (P − 1)² = 1 and a · a⁻¹ = 1.
        let minusOne = Fp(U256.subtract(Fp.modulus, U256(1)).0)
        #expect((minusOne * minusOne) == .one)
        let a = Fp(U256(hexDigits: "123456789abcdef0123456789abcdef0123456789abcdef")!)
        #expect(a * a.inverse == .one)
        let b = Fn(reducing: U256(hexDigits: "7123456789abcdef0123456789abcdef0123456789abcdef")!)
        #expect((b * b.inverse).value == U256(1))
        #expect((a.squared).squareRoot.map { $0 == a || $0 == -a } == true)
        #expect(Fp(3).squareRoot == nil, "3 generates the group, so it is not a square")
    }

    /// The multiplication written for the Stark prime gives what the generic one gives, on the
    /// edges of the field and on a fixed pseudo-random sequence of operands.
    @Test func starkPrimeMultiplyIsMontgomeryMultiply() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state
        }
        func element() -> U256 {
            var value = U256(next(), next(), next(), next() >> 4)
            while value >= Fp.modulus { value = U256.subtract(value, Fp.modulus).0 }
            return value
        }
        let p = Fp.modulus
        var operands = [U256.zero, U256(1), U256(2), U256.subtract(p, U256(1)).0, U256.subtract(p, U256(2)).0,
                        U256(0xffff_ffff_ffff_ffff, 0xffff_ffff_ffff_ffff, 0xffff_ffff_ffff_ffff, 0x0800_0000_0000_0010),
                        U256(0, 0, 0, 0x0800_0000_0000_0011), U256(0xffff_ffff_ffff_ffff, 0, 0, 0)]
        for _ in 0..<200 { operands.append(element()) }
        for a in operands {
            for b in operands.prefix(40) {
                #expect(starkPrimeMultiply(a, b) == montgomeryMultiply(a, b, modulus: p, n0: Fp.n0), "\(a) · \(b)")
            }
        }
    }

    @Test func arithmeticWrapsModP() {
        #expect(Felt.max + .one == .zero)
        #expect(Felt.zero - .one == .max)
        #expect(Felt.max * Felt.max == .one)
        #expect(Felt(6) * Felt(7) == Felt(42))
    }

    @Test func uint256HalvesAndText() {
        let amount = UInt256("2500000000000000000")!
        #expect(amount.low == Felt(2_500_000_000_000_000_000) && amount.high == .zero)
        let big = UInt256("0x" + String(repeating: "f", count: 64))!
        #expect(big.low == Felt("0x" + String(repeating: "f", count: 32)) && big.high == big.low)
        #expect(UInt256(low: big.low, high: big.high) == big)
        #expect(UInt256(low: Felt("0x1" + String(repeating: "0", count: 32))!, high: .zero) == nil, "a half is 128 bits")
        #expect(UInt256("115792089237316195423570985008687907853269984665640564039457584007913129639936") == nil, "2^256")
        #expect(big.adding(UInt256(1)) == nil)
        #expect(UInt256(1).subtracting(UInt256(2)) == nil)
        #expect(big.description == "115792089237316195423570985008687907853269984665640564039457584007913129639935")
    }

    @Test func privateKeysOutOfRangeAreRefused() {
        #expect(throws: StarkKeyError.privateKeyOutOfRange) { try StarkKey(privateKey: .zero) }
        #expect(throws: StarkKeyError.privateKeyOutOfRange) { try StarkKey(privateKey: StarkKey.curveOrder) }
        #expect(throws: StarkKeyError.messageHashTooLarge) { try StarkKey(privateKey: 1).sign(.max) }
        let key = StarkKey.random()
        #expect(!"\(key)".contains(key.privateKey.description.dropFirst(2)), "the description never shows the private key")
    }

    @Test func malformedCalldataIsNotAMulticall() {
        #expect(Call.parseExecuteCalldata([]) == nil)
        #expect(Call.parseExecuteCalldata([1, 2, 3]) == nil)
        #expect(Call.parseExecuteCalldata([1, 2, 3, 5, 0]) == nil, "declares five felts, has one")
        #expect(Call.parseExecuteCalldata([0]) == [])
        #expect(Call.parseExecuteCalldata([0, 9]) == nil, "trailing felts")
    }

    @Test func keccakMatchesKnownDigests() {
        // Keccak-256 (not SHA3-256) of "" and "abc".
        let empty = Keccak.keccak256([UInt8]())
        #expect(empty.map { String(format: "%02x", $0) }.joined() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470")
        let abc = Keccak.keccak256(Array("abc".utf8))
        #expect(abc.map { String(format: "%02x", $0) }.joined() == "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45")
    }
}

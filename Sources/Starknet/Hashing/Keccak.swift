/// Keccak-256 as Ethereum and Starknet use it (the original Keccak padding, 0x01 … 0x80, not
/// SHA3-256's 0x06), and `starknet_keccak`, its low 250 bits as a felt.
///
/// swift-crypto has SHA-3 on some platforms only and no Keccak with the original padding, so the
/// permutation (Keccak-f[1600], 24 rounds) is here.
public enum Keccak {
    static let roundConstants: [UInt64] = [
        0x0000_0000_0000_0001, 0x0000_0000_0000_8082, 0x8000_0000_0000_808a, 0x8000_0000_8000_8000,
        0x0000_0000_0000_808b, 0x0000_0000_8000_0001, 0x8000_0000_8000_8081, 0x8000_0000_0000_8009,
        0x0000_0000_0000_008a, 0x0000_0000_0000_0088, 0x0000_0000_8000_8009, 0x0000_0000_8000_000a,
        0x0000_0000_8000_808b, 0x8000_0000_0000_008b, 0x8000_0000_0000_8089, 0x8000_0000_0000_8003,
        0x8000_0000_0000_8002, 0x8000_0000_0000_0080, 0x0000_0000_0000_800a, 0x8000_0000_8000_000a,
        0x8000_0000_8000_8081, 0x8000_0000_0000_8080, 0x0000_0000_8000_0001, 0x8000_0000_8000_8008,
    ]
    /// Rotation offsets, indexed by x + 5y.
    static let rotations: [UInt64] = [
        0, 1, 62, 28, 27,
        36, 44, 6, 55, 20,
        3, 10, 43, 25, 39,
        41, 45, 15, 21, 8,
        18, 2, 61, 56, 14,
    ]

    static func permute(_ a: inout [UInt64]) {
        var c = [UInt64](repeating: 0, count: 5)
        var b = [UInt64](repeating: 0, count: 25)
        for round in 0..<24 {
            // θ
            for x in 0..<5 { c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20] }
            for x in 0..<5 {
                let d = c[(x + 4) % 5] ^ rotate(c[(x + 1) % 5], 1)
                for y in stride(from: 0, to: 25, by: 5) { a[x + y] ^= d }
            }
            // ρ and π
            for x in 0..<5 {
                for y in 0..<5 {
                    b[y + 5 * ((2 * x + 3 * y) % 5)] = rotate(a[x + 5 * y], rotations[x + 5 * y])
                }
            }
            // χ
            for y in stride(from: 0, to: 25, by: 5) {
                for x in 0..<5 { a[x + y] = b[x + y] ^ (~b[(x + 1) % 5 + y] & b[(x + 2) % 5 + y]) }
            }
            // ι
            a[0] ^= roundConstants[round]
        }
    }

    @inline(__always)
    static func rotate(_ value: UInt64, _ count: UInt64) -> UInt64 {
        count == 0 ? value : (value << count) | (value >> (64 - count))
    }

    /// Keccak-256 of `data` (32 bytes).
    public static func keccak256(_ data: some Collection<UInt8>) -> [UInt8] {
        let rate = 136
        var state = [UInt64](repeating: 0, count: 25)
        var block = [UInt8](repeating: 0, count: rate)
        var filled = 0
        func absorb() {
            for lane in 0..<(rate / 8) {
                var word: UInt64 = 0
                for byte in 0..<8 { word |= UInt64(block[lane * 8 + byte]) << UInt64(8 * byte) }
                state[lane] ^= word
            }
            permute(&state)
        }
        for byte in data {
            block[filled] = byte
            filled += 1
            if filled == rate {
                absorb()
                filled = 0
            }
        }
        for index in filled..<rate { block[index] = 0 }
        block[filled] ^= 0x01
        block[rate - 1] ^= 0x80
        absorb()
        var digest: [UInt8] = []
        digest.reserveCapacity(32)
        for lane in 0..<4 {
            for byte in 0..<8 { digest.append(UInt8(truncatingIfNeeded: state[lane] >> UInt64(8 * byte))) }
        }
        return digest
    }

    /// `starknet_keccak`: Keccak-256 of `data`, keeping its low 250 bits.
    public static func starknetKeccak(_ data: some Collection<UInt8>) -> Felt {
        let digest = keccak256(data)
        return Felt(raw: U256(bigEndian: digest)!.masked(to: 250))
    }
}

/// Entry point selectors: `starknet_keccak` of the function's name.
public enum Selector {
    /// The selector of `name`; `__default__` and `__l1_default__` are 0, as in Starknet.
    public static func from(name: String) -> Felt {
        if name == "__default__" || name == "__l1_default__" { return .zero }
        return Keccak.starknetKeccak(Array(name.utf8))
    }
}

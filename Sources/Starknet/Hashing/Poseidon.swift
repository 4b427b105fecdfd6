import Crypto

/// Starknet's Poseidon: the Hades permutation on three felts (8 full rounds around 83 partial
/// ones, cube S-box, MDS matrix [[3,1,1],[1,−1,1],[1,1,−2]]) and the sponge over it with rate 2.
///
/// The round constants are StarkWare's: constant `i` is SHA-256("Hades" + i) mod P, derived here
/// at first use instead of being copied into the source.
public enum Poseidon {
    static let fullRounds = 8
    static let partialRounds = 83

    /// Three constants per round, in Montgomery form.
    static let roundConstants: [Fp] = (0..<(3 * (fullRounds + partialRounds))).map { index in
        let digest = SHA256.hash(data: Array("Hades\(index)".utf8))
        var value = U256(bigEndian: Array(digest))!
        while value >= Fp.modulus { value = U256.subtract(value, Fp.modulus).0 }
        return Fp(value)
    }

    /// The constants as the rounds add them: three for each full round, one for each partial
    /// round. A partial round cubes only the third word, so the constants of the other two pass
    /// through its S-box unchanged; they are carried forward through the MDS matrix into the next
    /// round's constants instead (M · (x, y, 0) = (3x + y, x − y, x + y)), and what is carried out
    /// of the last partial round joins the constants of the full round after it. The permutation
    /// is the same; each partial round makes one addition instead of three.
    static let foldedConstants: [Fp] = {
        let half = fullRounds / 2
        var folded = Array(roundConstants[0..<(3 * half)])
        var carry = (Fp.zero, Fp.zero, Fp.zero)
        for round in half..<(half + partialRounds) {
            let x = roundConstants[3 * round] + carry.0
            let y = roundConstants[3 * round + 1] + carry.1
            folded.append(roundConstants[3 * round + 2] + carry.2)
            carry = (x.doubled + x + y, x - y, x + y)
        }
        let last = 3 * (half + partialRounds)
        folded += [roundConstants[last] + carry.0, roundConstants[last + 1] + carry.1, roundConstants[last + 2] + carry.2]
        folded += roundConstants[(last + 3)...]
        return folded
    }()

    /// The permutation, in place.
    static func permute(_ s0: inout Fp, _ s1: inout Fp, _ s2: inout Fp) {
        foldedConstants.withUnsafeBufferPointer { permute(&s0, &s1, &s2, constants: $0) }
    }

    /// The rounds over ``foldedConstants``, read without bounds checks (the round counts fix every index).
    @inline(__always)
    static func permute(_ s0: inout Fp, _ s1: inout Fp, _ s2: inout Fp, constants: UnsafeBufferPointer<Fp>) {
        var next = 0
        @inline(__always)
        func mix() {
            // [3 1 1; 1 −1 1; 1 1 −2] · s
            let sum = s0 + s1 + s2
            let n0 = sum + s0.doubled
            let n1 = sum - s1.doubled
            let n2 = sum - s2 - s2.doubled
            s0 = n0; s1 = n1; s2 = n2
        }
        @inline(__always)
        func fullRound() {
            s0 = s0 + constants[next]; s1 = s1 + constants[next + 1]; s2 = s2 + constants[next + 2]
            s0 = s0.squared * s0; s1 = s1.squared * s1; s2 = s2.squared * s2
            mix()
            next += 3
        }
        for _ in 0..<(fullRounds / 2) { fullRound() }
        for _ in 0..<partialRounds {
            s2 = s2 + constants[next]
            s2 = s2.squared * s2
            mix()
            next += 1
        }
        for _ in 0..<(fullRounds / 2) { fullRound() }
    }

    /// The permutation of three felts.
    public static func permutation(_ a: Felt, _ b: Felt, _ c: Felt) -> (Felt, Felt, Felt) {
        var s0 = a.fp, s1 = b.fp, s2 = c.fp
        permute(&s0, &s1, &s2)
        return (Felt(raw: s0.value), Felt(raw: s1.value), Felt(raw: s2.value))
    }

    /// `poseidon_hash(x, y)`: the first word of the permutation of (x, y, 2).
    public static func hash(_ x: Felt, _ y: Felt) -> Felt {
        var s0 = x.fp, s1 = y.fp, s2 = Fp(2)
        permute(&s0, &s1, &s2)
        return Felt(raw: s0.value)
    }

    /// `poseidon_hash_single(x)`: the first word of the permutation of (x, 0, 1).
    public static func hash(single x: Felt) -> Felt {
        var s0 = x.fp, s1 = Fp.zero, s2 = Fp.one
        permute(&s0, &s1, &s2)
        return Felt(raw: s0.value)
    }

    /// `poseidon_hash_many`: the sponge over the elements padded with 1 and then 0 to an even count.
    public static func hash(many elements: some Sequence<Felt>) -> Felt {
        var s0 = Fp.zero, s1 = Fp.zero, s2 = Fp.zero
        var pending: Fp?
        for element in elements {
            if let first = pending {
                s0 = s0 + first; s1 = s1 + element.fp
                permute(&s0, &s1, &s2)
                pending = nil
            } else {
                pending = element.fp
            }
        }
        if let first = pending {
            s0 = s0 + first; s1 = s1 + .one
        } else {
            s0 = s0 + .one
        }
        permute(&s0, &s1, &s2)
        return Felt(raw: s0.value)
    }
}

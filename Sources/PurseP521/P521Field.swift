/// An element of GF(p), p = 2^521 − 1, the field of NIST P-521: nine unsigned limbs of radix
/// 2^58 (the last holds 57 bits), unsaturated so that products of limbs fit in 128 bits with room
/// for their sums. Because p is a Mersenne prime, a product folds back without a division:
/// 2^521 ≡ 1 and 2^522 ≡ 2 (mod p).
///
/// Every operation returns a weakly reduced element: limbs below 2^58 except the second, which
/// may exceed it by a few bits, and the top one below 2^57. The value is then below 2p; `isZero`
/// and `canonical` finish the reduction where a unique form is needed. Nothing here runs in
/// constant time: it verifies signatures, whose inputs are all public.
struct P521Field: Sendable {
    var l0, l1, l2, l3, l4, l5, l6, l7, l8: UInt64

    static let mask58: UInt64 = (1 << 58) - 1
    static let mask57: UInt64 = (1 << 57) - 1

    static let zero = P521Field(l0: 0, l1: 0, l2: 0, l3: 0, l4: 0, l5: 0, l6: 0, l7: 0, l8: 0)
    static let one = P521Field(l0: 1, l1: 0, l2: 0, l3: 0, l4: 0, l5: 0, l6: 0, l7: 0, l8: 0)

    /// The element of a 66-byte big-endian integer, or nil when it is not below p.
    init?(bigEndian bytes: some Collection<UInt8>) {
        guard let words = P521Words(bigEndian: bytes), words < P521Words.p else { return nil }
        self.init(words)
    }

    init(l0: UInt64, l1: UInt64, l2: UInt64, l3: UInt64, l4: UInt64, l5: UInt64, l6: UInt64, l7: UInt64, l8: UInt64) {
        (self.l0, self.l1, self.l2, self.l3, self.l4, self.l5, self.l6, self.l7, self.l8) = (l0, l1, l2, l3, l4, l5, l6, l7, l8)
    }

    /// The element of an integer below 2^521 held in 64-bit words.
    init(_ words: P521Words) {
        func limb(_ index: Int) -> UInt64 {
            let bit = 58 * index
            let (word, shift) = (bit / 64, bit % 64)
            var value = words[word] >> shift
            if shift > 6, word + 1 < P521Words.count { value |= words[word + 1] << (64 - shift) }
            return value & (index == 8 ? Self.mask57 : Self.mask58)
        }
        self.init(l0: limb(0), l1: limb(1), l2: limb(2), l3: limb(3), l4: limb(4), l5: limb(5), l6: limb(6), l7: limb(7), l8: limb(8))
    }

    /// The integer this element stands for, fully reduced below p, in 64-bit words.
    var words: P521Words {
        let c = canonical
        let limbs = [c.l0, c.l1, c.l2, c.l3, c.l4, c.l5, c.l6, c.l7, c.l8]
        var words = P521Words.zero
        for (index, limb) in limbs.enumerated() {
            let bit = 58 * index
            let (word, shift) = (bit / 64, bit % 64)
            words[word] |= limb << shift
            if shift > 6, word + 1 < P521Words.count { words[word + 1] |= limb >> (64 - shift) }
        }
        return words
    }

    /// Limbs in radix 2^58, carried into a weakly reduced element: 128-bit limbs from a product,
    /// or 64-bit ones of at most 62 bits from sums and small multiples. The carry out of the top
    /// limb has weight 2^521 ≡ 1, so it joins the bottom limb.
    @inline(__always)
    static func carry<Limb: FixedWidthInteger & UnsignedInteger>(_ r0: Limb, _ r1: Limb, _ r2: Limb, _ r3: Limb, _ r4: Limb,
                                                                 _ r5: Limb, _ r6: Limb, _ r7: Limb, _ r8: Limb) -> P521Field {
        let r1 = r1 &+ (r0 &>> 58)
        let r2 = r2 &+ (r1 &>> 58)
        let r3 = r3 &+ (r2 &>> 58)
        let r4 = r4 &+ (r3 &>> 58)
        let r5 = r5 &+ (r4 &>> 58)
        let r6 = r6 &+ (r5 &>> 58)
        let r7 = r7 &+ (r6 &>> 58)
        let r8 = r8 &+ (r7 &>> 58)
        func low(_ limb: Limb, _ mask: UInt64) -> UInt64 { UInt64(truncatingIfNeeded: limb) & mask }
        // The top's carry is at most 2^71 (128-bit limbs) or 2^5, so it fits the bottom limb's sum.
        let s0 = UInt128(low(r0, mask58)) &+ UInt128(truncatingIfNeeded: r8 &>> 57)
        return P521Field(l0: UInt64(truncatingIfNeeded: s0) & mask58, l1: low(r1, mask58) &+ UInt64(truncatingIfNeeded: s0 &>> 58),
                         l2: low(r2, mask58), l3: low(r3, mask58), l4: low(r4, mask58), l5: low(r5, mask58),
                         l6: low(r6, mask58), l7: low(r7, mask58), l8: low(r8, mask57))
    }

    @inline(__always)
    static func + (a: P521Field, b: P521Field) -> P521Field {
        carry(a.l0 &+ b.l0, a.l1 &+ b.l1, a.l2 &+ b.l2, a.l3 &+ b.l3, a.l4 &+ b.l4,
              a.l5 &+ b.l5, a.l6 &+ b.l6, a.l7 &+ b.l7, a.l8 &+ b.l8)
    }

    /// a − b as a + 2p − b: 2p's limbs (2^59 − 2, and 2^58 − 2 at the top) exceed every limb of a
    /// weakly reduced b, so no limb goes below zero.
    @inline(__always)
    static func - (a: P521Field, b: P521Field) -> P521Field {
        let low: UInt64 = (1 << 59) - 2, top: UInt64 = (1 << 58) - 2
        return carry(a.l0 &+ low &- b.l0, a.l1 &+ low &- b.l1, a.l2 &+ low &- b.l2, a.l3 &+ low &- b.l3,
                     a.l4 &+ low &- b.l4, a.l5 &+ low &- b.l5, a.l6 &+ low &- b.l6, a.l7 &+ low &- b.l7,
                     a.l8 &+ top &- b.l8)
    }

    /// The element times a small constant (at most 8).
    @inline(__always)
    func times(_ k: UInt64) -> P521Field {
        P521Field.carry(l0 &* k, l1 &* k, l2 &* k, l3 &* k, l4 &* k, l5 &* k, l6 &* k, l7 &* k, l8 &* k)
    }

    /// The unique representative below p.
    var canonical: P521Field {
        var c = self
        // Carry until every limb is within its width; the value is then at most 2^521 − 1 = p.
        while c.l0 > Self.mask58 || c.l1 > Self.mask58 || c.l2 > Self.mask58 || c.l3 > Self.mask58 || c.l4 > Self.mask58
                || c.l5 > Self.mask58 || c.l6 > Self.mask58 || c.l7 > Self.mask58 || c.l8 > Self.mask57 {
            c = Self.carry(c.l0, c.l1, c.l2, c.l3, c.l4, c.l5, c.l6, c.l7, c.l8)
        }
        // p itself (every bit set) is zero.
        if c.l0 & c.l1 & c.l2 & c.l3 & c.l4 & c.l5 & c.l6 & c.l7 == Self.mask58, c.l8 == Self.mask57 { return .zero }
        return c
    }

    var isZero: Bool {
        let c = canonical
        return (c.l0 | c.l1 | c.l2 | c.l3 | c.l4 | c.l5 | c.l6 | c.l7 | c.l8) == 0
    }

    static func == (a: P521Field, b: P521Field) -> Bool { (a - b).isZero }

    /// The inverse by Fermat's little theorem, a^(p−2), p − 2 = 2^521 − 3: every bit set but the
    /// second. Zero has none and gives zero.
    var inverse: P521Field {
        var result = P521Field.one
        var base = self
        for bit in 0..<521 {
            if bit != 1 { result = result * base }
            base = base.squared()
        }
        return result
    }

    /// The product, weakly reduced: limb k sums a_i·b_j over i + j = k, plus twice the sum over
    /// i + j = k + 9 (2^522 ≡ 2 mod p), each at most 9 products of 61-bit limbs, under 2^127.
    @inline(__always)
    static func * (a: P521Field, b: P521Field) -> P521Field {
        let a0 = UInt128(a.l0)
        let a1 = UInt128(a.l1)
        let a2 = UInt128(a.l2)
        let a3 = UInt128(a.l3)
        let a4 = UInt128(a.l4)
        let a5 = UInt128(a.l5)
        let a6 = UInt128(a.l6)
        let a7 = UInt128(a.l7)
        let a8 = UInt128(a.l8)
        let b0 = UInt128(b.l0)
        let b1 = UInt128(b.l1)
        let b2 = UInt128(b.l2)
        let b3 = UInt128(b.l3)
        let b4 = UInt128(b.l4)
        let b5 = UInt128(b.l5)
        let b6 = UInt128(b.l6)
        let b7 = UInt128(b.l7)
        let b8 = UInt128(b.l8)
        let d1 = UInt128(b.l1 &<< 1)
        let d2 = UInt128(b.l2 &<< 1)
        let d3 = UInt128(b.l3 &<< 1)
        let d4 = UInt128(b.l4 &<< 1)
        let d5 = UInt128(b.l5 &<< 1)
        let d6 = UInt128(b.l6 &<< 1)
        let d7 = UInt128(b.l7 &<< 1)
        let d8 = UInt128(b.l8 &<< 1)
        let r0 = a0 &* b0 &+ a1 &* d8 &+ a2 &* d7 &+ a3 &* d6 &+ a4 &* d5 &+ a5 &* d4 &+ a6 &* d3 &+ a7 &* d2 &+ a8 &* d1
        let r1 = a0 &* b1 &+ a1 &* b0 &+ a2 &* d8 &+ a3 &* d7 &+ a4 &* d6 &+ a5 &* d5 &+ a6 &* d4 &+ a7 &* d3 &+ a8 &* d2
        let r2 = a0 &* b2 &+ a1 &* b1 &+ a2 &* b0 &+ a3 &* d8 &+ a4 &* d7 &+ a5 &* d6 &+ a6 &* d5 &+ a7 &* d4 &+ a8 &* d3
        let r3 = a0 &* b3 &+ a1 &* b2 &+ a2 &* b1 &+ a3 &* b0 &+ a4 &* d8 &+ a5 &* d7 &+ a6 &* d6 &+ a7 &* d5 &+ a8 &* d4
        let r4 = a0 &* b4 &+ a1 &* b3 &+ a2 &* b2 &+ a3 &* b1 &+ a4 &* b0 &+ a5 &* d8 &+ a6 &* d7 &+ a7 &* d6 &+ a8 &* d5
        let r5 = a0 &* b5 &+ a1 &* b4 &+ a2 &* b3 &+ a3 &* b2 &+ a4 &* b1 &+ a5 &* b0 &+ a6 &* d8 &+ a7 &* d7 &+ a8 &* d6
        let r6 = a0 &* b6 &+ a1 &* b5 &+ a2 &* b4 &+ a3 &* b3 &+ a4 &* b2 &+ a5 &* b1 &+ a6 &* b0 &+ a7 &* d8 &+ a8 &* d7
        let r7 = a0 &* b7 &+ a1 &* b6 &+ a2 &* b5 &+ a3 &* b4 &+ a4 &* b3 &+ a5 &* b2 &+ a6 &* b1 &+ a7 &* b0 &+ a8 &* d8
        let r8 = a0 &* b8 &+ a1 &* b7 &+ a2 &* b6 &+ a3 &* b5 &+ a4 &* b4 &+ a5 &* b3 &+ a6 &* b2 &+ a7 &* b1 &+ a8 &* b0
        return carry(r0, r1, r2, r3, r4, r5, r6, r7, r8)
    }

    /// The square: the product's terms with each cross term a_i·a_j (i ≠ j) taken once, doubled.
    @inline(__always)
    func squared() -> P521Field {
        let a0 = UInt128(l0)
        let a1 = UInt128(l1)
        let a2 = UInt128(l2)
        let a3 = UInt128(l3)
        let a4 = UInt128(l4)
        let a5 = UInt128(l5)
        let a6 = UInt128(l6)
        let a7 = UInt128(l7)
        let a8 = UInt128(l8)
        let t1 = UInt128(l1 &<< 1)
        let t2 = UInt128(l2 &<< 1)
        let t3 = UInt128(l3 &<< 1)
        let t4 = UInt128(l4 &<< 1)
        let t5 = UInt128(l5 &<< 1)
        let t6 = UInt128(l6 &<< 1)
        let t7 = UInt128(l7 &<< 1)
        let t8 = UInt128(l8 &<< 1)
        let f5 = UInt128(l5 &<< 2)
        let f6 = UInt128(l6 &<< 2)
        let f7 = UInt128(l7 &<< 2)
        let f8 = UInt128(l8 &<< 2)
        let r0 = a0 &* a0 &+ a1 &* f8 &+ a2 &* f7 &+ a3 &* f6 &+ a4 &* f5
        let r1 = a0 &* t1 &+ a2 &* f8 &+ a3 &* f7 &+ a4 &* f6 &+ a5 &* t5
        let r2 = a0 &* t2 &+ a1 &* a1 &+ a3 &* f8 &+ a4 &* f7 &+ a5 &* f6
        let r3 = a0 &* t3 &+ a1 &* t2 &+ a4 &* f8 &+ a5 &* f7 &+ a6 &* t6
        let r4 = a0 &* t4 &+ a1 &* t3 &+ a2 &* a2 &+ a5 &* f8 &+ a6 &* f7
        let r5 = a0 &* t5 &+ a1 &* t4 &+ a2 &* t3 &+ a6 &* f8 &+ a7 &* t7
        let r6 = a0 &* t6 &+ a1 &* t5 &+ a2 &* t4 &+ a3 &* a3 &+ a7 &* f8
        let r7 = a0 &* t7 &+ a1 &* t6 &+ a2 &* t5 &+ a3 &* t4 &+ a8 &* t8
        let r8 = a0 &* t8 &+ a1 &* t7 &+ a2 &* t6 &+ a3 &* t5 &+ a4 &* a4
        return P521Field.carry(r0, r1, r2, r3, r4, r5, r6, r7, r8)
    }
}

/// Montgomery arithmetic on four limbs, shared by the base field (`Fp`) and the curve's scalar
/// field (`Fn`).
///
/// Both moduli are below 2^252, so the most significant limb has its top bits clear and the
/// multiplication can drop the extra carry word (the "no-carry" CIOS variant).

/// `a * b * 2^-256 mod modulus` for `a, b < modulus`.
@inline(__always)
func montgomeryMultiply(_ a: U256, _ b: U256, modulus n: U256, n0: UInt64) -> U256 {
    var t0: UInt64 = 0, t1: UInt64 = 0, t2: UInt64 = 0, t3: UInt64 = 0

    @inline(__always)
    func row(_ bi: UInt64) {
        // t += a * bi, and the carry out of the top limb in `a3`.
        var (hi, lo) = a.l0.multipliedFullWidth(by: bi)
        var (s, c) = t0.addingReportingOverflow(lo)
        var carryA = hi &+ (c ? 1 : 0)
        t0 = s
        let m = t0 &* n0
        (hi, lo) = m.multipliedFullWidth(by: n.l0)
        (_, c) = t0.addingReportingOverflow(lo)
        var carryC = hi &+ (c ? 1 : 0)

        // j = 1
        (hi, lo) = a.l1.multipliedFullWidth(by: bi)
        (s, c) = t1.addingReportingOverflow(lo); var h = hi &+ (c ? 1 : 0)
        (s, c) = s.addingReportingOverflow(carryA); carryA = h &+ (c ? 1 : 0)
        (hi, lo) = m.multipliedFullWidth(by: n.l1)
        var (u, d) = s.addingReportingOverflow(lo); h = hi &+ (d ? 1 : 0)
        (u, d) = u.addingReportingOverflow(carryC); carryC = h &+ (d ? 1 : 0)
        t0 = u
        // j = 2
        (hi, lo) = a.l2.multipliedFullWidth(by: bi)
        (s, c) = t2.addingReportingOverflow(lo); h = hi &+ (c ? 1 : 0)
        (s, c) = s.addingReportingOverflow(carryA); carryA = h &+ (c ? 1 : 0)
        (hi, lo) = m.multipliedFullWidth(by: n.l2)
        (u, d) = s.addingReportingOverflow(lo); h = hi &+ (d ? 1 : 0)
        (u, d) = u.addingReportingOverflow(carryC); carryC = h &+ (d ? 1 : 0)
        t1 = u
        // j = 3
        (hi, lo) = a.l3.multipliedFullWidth(by: bi)
        (s, c) = t3.addingReportingOverflow(lo); h = hi &+ (c ? 1 : 0)
        (s, c) = s.addingReportingOverflow(carryA); carryA = h &+ (c ? 1 : 0)
        (hi, lo) = m.multipliedFullWidth(by: n.l3)
        (u, d) = s.addingReportingOverflow(lo); h = hi &+ (d ? 1 : 0)
        (u, d) = u.addingReportingOverflow(carryC); carryC = h &+ (d ? 1 : 0)
        t2 = u
        t3 = carryC &+ carryA
    }

    row(b.l0); row(b.l1); row(b.l2); row(b.l3)
    let t = U256(t0, t1, t2, t3)
    let (reduced, borrow) = U256.subtract(t, n)
    return borrow ? t : reduced
}

/// `a * b * 2^-256 mod P` for the Stark prime P = 2^251 + 17·2^192 + 1 and `a, b < P`.
///
/// The same no-carry CIOS as ``montgomeryMultiply(_:_:modulus:n0:)``, written for P's limbs
/// (1, 0, 0, 0x0800000000000011): −P⁻¹ mod 2^64 is 2^64 − 1, so each row's reduction factor is
/// the negated low word, and adding it times P is one addition at the bottom and one product at
/// the top — five word products a row instead of eight.
@inline(__always)
func starkPrimeMultiply(_ a: U256, _ b: U256) -> U256 {
    let top: UInt64 = 0x0800_0000_0000_0011
    var t0: UInt64 = 0, t1: UInt64 = 0, t2: UInt64 = 0, t3: UInt64 = 0

    @inline(__always)
    func row(_ bi: UInt64) {
        // (s0, s1, s2, s3, s4) = t + a · bi
        var (hi, lo) = a.l0.multipliedFullWidth(by: bi)
        var (s0, c) = t0.addingReportingOverflow(lo)
        var carry = hi &+ (c ? 1 : 0)
        (hi, lo) = a.l1.multipliedFullWidth(by: bi)
        var (s1, c1) = t1.addingReportingOverflow(lo)
        var (sum, c2) = s1.addingReportingOverflow(carry)
        s1 = sum; carry = hi &+ (c1 ? 1 : 0) &+ (c2 ? 1 : 0)
        (hi, lo) = a.l2.multipliedFullWidth(by: bi)
        var s2: UInt64
        (s2, c1) = t2.addingReportingOverflow(lo)
        (sum, c2) = s2.addingReportingOverflow(carry)
        s2 = sum; carry = hi &+ (c1 ? 1 : 0) &+ (c2 ? 1 : 0)
        (hi, lo) = a.l3.multipliedFullWidth(by: bi)
        var s3: UInt64
        (s3, c1) = t3.addingReportingOverflow(lo)
        (sum, c2) = s3.addingReportingOverflow(carry)
        s3 = sum
        let s4 = hi &+ (c1 ? 1 : 0) &+ (c2 ? 1 : 0)

        // + m · P with m = −s0 mod 2^64: the bottom word becomes zero (carrying one unless s0
        // was zero) and m · top lands on words 3 and 4; then everything moves down a word.
        let m = 0 &- s0
        c = s0 != 0
        (hi, lo) = m.multipliedFullWidth(by: top)
        (t0, c) = s1.addingReportingOverflow(c ? 1 : 0)
        (t1, c) = s2.addingReportingOverflow(c ? 1 : 0)
        (t2, c1) = s3.addingReportingOverflow(lo)
        (sum, c2) = t2.addingReportingOverflow(c ? 1 : 0)
        t2 = sum
        t3 = s4 &+ hi &+ (c1 ? 1 : 0) &+ (c2 ? 1 : 0)
    }

    row(b.l0); row(b.l1); row(b.l2); row(b.l3)
    let t = U256(t0, t1, t2, t3)
    let (reduced, borrow) = U256.subtract(t, U256(1, 0, 0, top))
    return borrow ? t : reduced
}

/// `a + b mod modulus` for `a, b < modulus < 2^255`.
@inline(__always)
func modularAdd(_ a: U256, _ b: U256, modulus: U256) -> U256 {
    let (sum, _) = U256.add(a, b)
    let (reduced, borrow) = U256.subtract(sum, modulus)
    return borrow ? sum : reduced
}

/// `a - b mod modulus` for `a, b < modulus`.
@inline(__always)
func modularSubtract(_ a: U256, _ b: U256, modulus: U256) -> U256 {
    let (difference, borrow) = U256.subtract(a, b)
    return borrow ? U256.add(difference, modulus).0 : difference
}

/// An element of the field of the Stark curve's coordinates, mod
/// P = 2^251 + 17·2^192 + 1, in Montgomery form (`value · 2^256 mod P`).

struct Fp: Hashable, Sendable {
    var montgomery: U256

    @inline(__always) init(montgomery: U256) { self.montgomery = montgomery }

    static var modulus: U256 { U256(0x0000_0000_0000_0001, 0, 0, 0x0800_0000_0000_0011) }
    static var n0: UInt64 { 0xffff_ffff_ffff_ffff }
    /// 2^512 mod P: multiplying by it enters Montgomery form.
    static var r2: U256 { U256(0xffff_fd73_7e00_0401, 0x0000_0001_330f_ffff, 0xffff_ffff_ff6f_8000, 0x07ff_d4ab_5e00_8810) }
    /// 2^256 mod P: one in Montgomery form.
    static var one: Fp { Fp(montgomery: U256(0xffff_ffff_ffff_ffe1, 0xffff_ffff_ffff_ffff, 0xffff_ffff_ffff_ffff, 0x07ff_ffff_ffff_fdf0)) }
    static var zero: Fp { Fp(montgomery: .zero) }

    /// The element for a canonical value (`value < P`).
    init(_ value: U256) { montgomery = montgomeryMultiply(value, Fp.r2, modulus: Fp.modulus, n0: Fp.n0) }
    init(_ value: UInt64) { self.init(U256(value)) }

    /// The canonical value.
    var value: U256 { montgomeryMultiply(montgomery, U256(1), modulus: Fp.modulus, n0: Fp.n0) }
    var isZero: Bool { montgomery.isZero }

    @inline(__always)
    static func + (a: Fp, b: Fp) -> Fp { Fp(montgomery: modularAdd(a.montgomery, b.montgomery, modulus: modulus)) }
    @inline(__always)
    static func - (a: Fp, b: Fp) -> Fp { Fp(montgomery: modularSubtract(a.montgomery, b.montgomery, modulus: modulus)) }
    @inline(__always)
    static func * (a: Fp, b: Fp) -> Fp { Fp(montgomery: starkPrimeMultiply(a.montgomery, b.montgomery)) }
    @inline(__always)
    static prefix func - (a: Fp) -> Fp { Fp.zero - a }
    @inline(__always)
    var squared: Fp { self * self }
    @inline(__always)
    var doubled: Fp { self + self }

    /// `self^exponent`, four exponent bits at a time.
    func power(_ exponent: U256) -> Fp {
        var table = [Fp](repeating: .one, count: 16)
        for index in 1..<16 { table[index] = table[index - 1] * self }
        var result = Fp.one
        for window in (0..<64).reversed() {
            result = result.squared.squared.squared.squared
            let digit = Int(exponent.bits(at: window * 4, width: 4))
            if digit != 0 { result = result * table[digit] }
        }
        return result
    }

    /// The multiplicative inverse (zero has none: the result is zero).
    var inverse: Fp { power(U256.subtract(Fp.modulus, U256(2)).0) }

    /// A square root, when one exists (Tonelli–Shanks: P − 1 = 2^192 · q with q = 2^59 + 17).
    var squareRoot: Fp? {
        if isZero { return .zero }
        let q = U256(0x0800_0000_0000_0011)
        // The 2^192-th root of unity from the field's generator 3 (a non-residue).
        var c = Fp(3).power(q)
        var t = power(q)
        var r = power(U256((0x0800_0000_0000_0011 + 1) / 2))
        var m = 192
        while t != .one {
            var i = 0
            var probe = t
            while probe != .one {
                probe = probe.squared
                i += 1
                if i == m { return nil }
            }
            var b = c
            for _ in 0..<(m - i - 1) { b = b.squared }
            m = i
            c = b.squared
            t = t * c
            r = r * b
        }
        return r
    }
}

/// An element of the Stark curve's scalar field, mod its order
/// N = 0x0800000000000010ffffffffffffffffb781126dcae7b2321e66a241adc64d2f, in Montgomery form.

struct Fn: Hashable, Sendable {
    var montgomery: U256

    @inline(__always) init(montgomery: U256) { self.montgomery = montgomery }

    static var modulus: U256 { U256(0x1e66_a241_adc6_4d2f, 0xb781_126d_cae7_b232, 0xffff_ffff_ffff_ffff, 0x0800_0000_0000_0010) }
    static var n0: UInt64 { 0xbb6b_3c4c_e8bd_e631 }
    static var r2: U256 { U256(0x6021_b3f1_ea1c_688d, 0x509c_f64d_14ce_60b9, 0xbaf0_ab4c_f78b_babb, 0x07d9_e57c_2333_766e) }
    static var one: Fn { Fn(montgomery: U256(0x5192_5a0b_f4fc_a74f, 0xc75e_c4b4_6df1_6bee, 0x0000_0000_0000_0008, 0x07ff_ffff_ffff_fdf1)) }

    /// The element for `value` reduced mod N (`value < 2^256`; N > 2^251, so at most 31 subtractions).
    init(reducing value: U256) {
        var reduced = value
        while reduced >= Fn.modulus { reduced = U256.subtract(reduced, Fn.modulus).0 }
        montgomery = montgomeryMultiply(reduced, Fn.r2, modulus: Fn.modulus, n0: Fn.n0)
    }

    var value: U256 { montgomeryMultiply(montgomery, U256(1), modulus: Fn.modulus, n0: Fn.n0) }
    var isZero: Bool { montgomery.isZero }

    static func + (a: Fn, b: Fn) -> Fn { Fn(montgomery: modularAdd(a.montgomery, b.montgomery, modulus: modulus)) }
    static func - (a: Fn, b: Fn) -> Fn { Fn(montgomery: modularSubtract(a.montgomery, b.montgomery, modulus: modulus)) }
    static func * (a: Fn, b: Fn) -> Fn { Fn(montgomery: montgomeryMultiply(a.montgomery, b.montgomery, modulus: modulus, n0: n0)) }

    /// The multiplicative inverse by Fermat's little theorem (a fixed sequence of operations).
    var inverse: Fn {
        let exponent = U256.subtract(Fn.modulus, U256(2)).0
        var table = [Fn](repeating: .one, count: 16)
        for index in 1..<16 { table[index] = table[index - 1] * self }
        var result = Fn.one
        for window in (0..<64).reversed() {
            result = result * result; result = result * result; result = result * result; result = result * result
            result = result * table[Int(exponent.bits(at: window * 4, width: 4))]
        }
        return result
    }
}

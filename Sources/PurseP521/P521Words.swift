import PurseFormats

/// An unsigned integer below 2^576 in nine 64-bit words, least significant first: coordinates
/// and scalars as they arrive, and the arithmetic modulo the group order that a verification
/// needs (a handful of operations per signature, so plain loops are enough).
struct P521Words: Sendable, Equatable, Comparable {
    static let count = 9
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    static let zero = P521Words(storage: (0, 0, 0, 0, 0, 0, 0, 0, 0))

    /// p = 2^521 − 1.
    static let p = P521Words(storage: (.max, .max, .max, .max, .max, .max, .max, .max, 0x1FF))

    /// n, the order of the base point.
    static let n = P521Words(hex: "01fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffa51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409")!

    private init(storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)) {
        self.storage = storage
    }

    init(_ small: UInt64) {
        self = .zero
        self[0] = small
    }

    /// A big-endian integer of at most 72 bytes; nil for a longer one.
    init?(bigEndian bytes: some Collection<UInt8>) {
        guard bytes.count <= 8 * Self.count else { return nil }
        self = .zero
        for (index, byte) in bytes.reversed().enumerated() {
            self[index / 8] |= UInt64(byte) << (8 * (index % 8))
        }
    }

    init?(hex: String) {
        guard let bytes = Hex.decode(hex) else { return nil }
        self.init(bigEndian: bytes)
    }

    /// A word by index: a switch the optimizer resolves where loops over the nine words unroll.
    subscript(index: Int) -> UInt64 {
        @inline(__always) get {
            switch index {
            case 0: storage.0
            case 1: storage.1
            case 2: storage.2
            case 3: storage.3
            case 4: storage.4
            case 5: storage.5
            case 6: storage.6
            case 7: storage.7
            default: storage.8
            }
        }
        @inline(__always) set {
            switch index {
            case 0: storage.0 = newValue
            case 1: storage.1 = newValue
            case 2: storage.2 = newValue
            case 3: storage.3 = newValue
            case 4: storage.4 = newValue
            case 5: storage.5 = newValue
            case 6: storage.6 = newValue
            case 7: storage.7 = newValue
            default: storage.8 = newValue
            }
        }
    }

    var isZero: Bool { (0..<Self.count).allSatisfy { self[$0] == 0 } }
    var isOdd: Bool { self[0] & 1 == 1 }
    var isOne: Bool { self[0] == 1 && (1..<Self.count).allSatisfy { self[$0] == 0 } }

    func bit(_ index: Int) -> Bool { (self[index / 64] >> (index % 64)) & 1 == 1 }

    /// The integer's big-endian bytes, the last `length` of them.
    func bigEndian(length: Int) -> [UInt8] {
        (0..<length).reversed().map { index in index / 8 < Self.count ? UInt8(truncatingIfNeeded: self[index / 8] >> (8 * (index % 8))) : 0 }
    }

    static func < (a: P521Words, b: P521Words) -> Bool {
        for index in (0..<count).reversed() where a[index] != b[index] { return a[index] < b[index] }
        return false
    }

    static func == (a: P521Words, b: P521Words) -> Bool {
        (0..<count).allSatisfy { a[$0] == b[$0] }
    }

    /// a + b, and whether it carried out of 576 bits.
    static func adding(_ a: P521Words, _ b: P521Words) -> (P521Words, Bool) {
        var sum = P521Words.zero
        var carry: UInt64 = 0
        for index in 0..<count {
            let (s1, o1) = a[index].addingReportingOverflow(b[index])
            let (s2, o2) = s1.addingReportingOverflow(carry)
            sum[index] = s2
            carry = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        return (sum, carry != 0)
    }

    /// a − b, for b ≤ a.
    static func subtracting(_ a: P521Words, _ b: P521Words) -> P521Words {
        var difference = P521Words.zero
        var borrow: UInt64 = 0
        for index in 0..<count {
            let (d1, o1) = a[index].subtractingReportingOverflow(b[index])
            let (d2, o2) = d1.subtractingReportingOverflow(borrow)
            difference[index] = d2
            borrow = (o1 ? 1 : 0) + (o2 ? 1 : 0)
        }
        return difference
    }

    mutating func shiftRightOne() {
        for index in 0..<Self.count {
            let high = index + 1 < Self.count ? self[index + 1] << 63 : 0
            self[index] = (self[index] >> 1) | high
        }
    }

    // MARK: Modulo n (operands below n < 2^521, so sums never leave 576 bits)

    static func addMod(_ a: P521Words, _ b: P521Words, _ m: P521Words) -> P521Words {
        let (sum, _) = adding(a, b)
        return sum < m ? sum : subtracting(sum, m)
    }

    static func subMod(_ a: P521Words, _ b: P521Words, _ m: P521Words) -> P521Words {
        b <= a ? subtracting(a, b) : subtracting(adding(a, m).0, b)
    }

    /// a · b mod n, for a and b below n: two Montgomery products (CIOS, R = 2^576), the second by
    /// R² mod n to take R⁻¹ out again.
    static func mulModN(_ a: P521Words, _ b: P521Words) -> P521Words {
        montgomeryN(montgomeryN(a, b), rSquaredModN)
    }

    /// −n⁻¹ mod 2^64, by Newton's iteration (each step doubles the correct low bits).
    static let nPrime: UInt64 = {
        var inverse: UInt64 = 1
        for _ in 0..<6 { inverse = inverse &* (2 &- n[0] &* inverse) }
        return 0 &- inverse
    }()

    /// R² mod n, R = 2^576, by doubling one 1,152 times.
    static let rSquaredModN: P521Words = {
        var value = P521Words(1)
        for _ in 0..<(2 * 64 * count) { value = addMod(value, value, n) }
        return value
    }()

    /// a · b · R⁻¹ mod n (coarsely integrated operand scanning), for a and b below n.
    static func montgomeryN(_ a: P521Words, _ b: P521Words) -> P521Words {
        var t = P521Words.zero
        var (t9, t10): (UInt64, UInt64) = (0, 0)
        for i in 0..<count {
            var carry: UInt64 = 0
            let bi = UInt128(b[i])
            for j in 0..<count {
                let product = UInt128(a[j]) &* bi &+ UInt128(t[j]) &+ UInt128(carry)
                t[j] = UInt64(truncatingIfNeeded: product)
                carry = UInt64(truncatingIfNeeded: product &>> 64)
            }
            let top = UInt128(t9) &+ UInt128(carry)
            t9 = UInt64(truncatingIfNeeded: top)
            t10 = UInt64(truncatingIfNeeded: top &>> 64)
            let m = UInt128(t[0] &* nPrime)
            var reduced = UInt128(t[0]) &+ m &* UInt128(n[0])
            carry = UInt64(truncatingIfNeeded: reduced &>> 64)
            for j in 1..<count {
                reduced = UInt128(t[j]) &+ m &* UInt128(n[j]) &+ UInt128(carry)
                t[j - 1] = UInt64(truncatingIfNeeded: reduced)
                carry = UInt64(truncatingIfNeeded: reduced &>> 64)
            }
            let last = UInt128(t9) &+ UInt128(carry)
            t[count - 1] = UInt64(truncatingIfNeeded: last)
            t9 = t10 &+ UInt64(truncatingIfNeeded: last &>> 64)
        }
        return t9 != 0 || !(t < n) ? subtracting(t, n) : t
    }

    /// a⁻¹ mod m for an odd m and 0 < a < m with gcd(a, m) = 1 (m is prime here), by the binary
    /// extended Euclidean algorithm. Nil for zero.
    static func inverseMod(_ a: P521Words, _ m: P521Words) -> P521Words? {
        guard !a.isZero else { return nil }
        var (u, v) = (a, m)
        var (x1, x2) = (P521Words(1), P521Words.zero)
        func halve(_ x: inout P521Words) {
            if x.isOdd {
                let (sum, carried) = adding(x, m)
                x = sum
                x.shiftRightOne()
                if carried { x[count - 1] |= 1 << 63 }
            } else {
                x.shiftRightOne()
            }
        }
        while !u.isOne && !v.isOne {
            guard !u.isZero, !v.isZero else { return nil }
            while !u.isOdd { u.shiftRightOne(); halve(&x1) }
            while !v.isOdd { v.shiftRightOne(); halve(&x2) }
            if v <= u {
                u = subtracting(u, v)
                x1 = subMod(x1, x2, m)
            } else {
                v = subtracting(v, u)
                x2 = subMod(x2, x1, m)
            }
        }
        return u.isOne ? x1 : x2
    }
}

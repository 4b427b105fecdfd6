/// A 256-bit unsigned integer in four 64-bit limbs, least significant first.
///
/// The representation under `Felt`, the curve's coordinates and its scalars: fixed width, no heap,
/// every operation a handful of machine instructions. Only what the field and the curve need is here.

struct U256: Hashable, Sendable {
    var l0: UInt64
    var l1: UInt64
    var l2: UInt64
    var l3: UInt64

    @inline(__always)
    init(_ l0: UInt64, _ l1: UInt64, _ l2: UInt64, _ l3: UInt64) {
        self.l0 = l0; self.l1 = l1; self.l2 = l2; self.l3 = l3
    }

    @inline(__always)
    init(_ value: UInt64) { self.init(value, 0, 0, 0) }

    static let zero = U256(0, 0, 0, 0)

    var isZero: Bool { (l0 | l1 | l2 | l3) == 0 }

    /// Limb `index` (0 is the least significant).
    @inline(__always)
    func limb(_ index: Int) -> UInt64 {
        switch index {
        case 0: l0
        case 1: l1
        case 2: l2
        default: l3
        }
    }

    /// The number of significant bits (0 for zero).
    var bitWidth: Int {
        if l3 != 0 { return 256 - l3.leadingZeroBitCount }
        if l2 != 0 { return 192 - l2.leadingZeroBitCount }
        if l1 != 0 { return 128 - l1.leadingZeroBitCount }
        return 64 - l0.leadingZeroBitCount
    }

    @inline(__always)
    func bit(_ index: Int) -> Bool { (limb(index >> 6) >> UInt64(index & 63)) & 1 == 1 }

    /// `width` bits starting at bit `start` (width ≤ 64; bits past 255 read as zero).
    @inline(__always)
    func bits(at start: Int, width: Int) -> UInt64 {
        let index = start >> 6, offset = UInt64(start & 63)
        var value = limb(index) >> offset
        if offset != 0, index < 3 { value |= limb(index + 1) << (64 - offset) }
        return width == 64 ? value : value & ((1 << UInt64(width)) - 1)
    }

    // MARK: Comparison and carries

    @inline(__always)
    static func < (a: U256, b: U256) -> Bool {
        if a.l3 != b.l3 { return a.l3 < b.l3 }
        if a.l2 != b.l2 { return a.l2 < b.l2 }
        if a.l1 != b.l1 { return a.l1 < b.l1 }
        return a.l0 < b.l0
    }

    @inline(__always)
    static func >= (a: U256, b: U256) -> Bool { !(a < b) }

    /// `a + b` and whether it overflowed 2^256.
    @inline(__always)
    static func add(_ a: U256, _ b: U256) -> (U256, Bool) {
        let (s0, c0) = a.l0.addingReportingOverflow(b.l0)
        var (s1, c1) = a.l1.addingReportingOverflow(b.l1)
        if c0 { let (t, c) = s1.addingReportingOverflow(1); s1 = t; c1 = c1 || c }
        var (s2, c2) = a.l2.addingReportingOverflow(b.l2)
        if c1 { let (t, c) = s2.addingReportingOverflow(1); s2 = t; c2 = c2 || c }
        var (s3, c3) = a.l3.addingReportingOverflow(b.l3)
        if c2 { let (t, c) = s3.addingReportingOverflow(1); s3 = t; c3 = c3 || c }
        return (U256(s0, s1, s2, s3), c3)
    }

    /// `a - b` and whether it borrowed.
    @inline(__always)
    static func subtract(_ a: U256, _ b: U256) -> (U256, Bool) {
        let (d0, b0) = a.l0.subtractingReportingOverflow(b.l0)
        var (d1, b1) = a.l1.subtractingReportingOverflow(b.l1)
        if b0 { let (t, c) = d1.subtractingReportingOverflow(1); d1 = t; b1 = b1 || c }
        var (d2, b2) = a.l2.subtractingReportingOverflow(b.l2)
        if b1 { let (t, c) = d2.subtractingReportingOverflow(1); d2 = t; b2 = b2 || c }
        var (d3, b3) = a.l3.subtractingReportingOverflow(b.l3)
        if b2 { let (t, c) = d3.subtractingReportingOverflow(1); d3 = t; b3 = b3 || c }
        return (U256(d0, d1, d2, d3), b3)
    }

    /// Shifted right by `count` bits (0 ≤ count < 64).
    func shiftedRight(_ count: Int) -> U256 {
        guard count > 0 else { return self }
        let c = UInt64(count), back = UInt64(64 - count)
        return U256((l0 >> c) | (l1 << back), (l1 >> c) | (l2 << back), (l2 >> c) | (l3 << back), l3 >> c)
    }

    /// Shifted left by `count` bits (0 ≤ count < 64), dropping what passes bit 255.
    func shiftedLeft(_ count: Int) -> U256 {
        guard count > 0 else { return self }
        let c = UInt64(count), back = UInt64(64 - count)
        return U256(l0 << c, (l1 << c) | (l0 >> back), (l2 << c) | (l1 >> back), (l3 << c) | (l2 >> back))
    }

    /// The low `count` bits (count ≤ 256).
    func masked(to count: Int) -> U256 {
        var limbs = [l0, l1, l2, l3]
        for index in 0..<4 {
            let start = index * 64
            if count <= start { limbs[index] = 0 } else if count < start + 64 { limbs[index] &= (1 << UInt64(count - start)) - 1 }
        }
        return U256(limbs[0], limbs[1], limbs[2], limbs[3])
    }

    // MARK: Bytes and text

    /// The 32-byte big-endian encoding.
    var bigEndianBytes: [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 32)
        for index in 0..<4 {
            let limb = limb(3 - index)
            for byte in 0..<8 { bytes[index * 8 + byte] = UInt8(truncatingIfNeeded: limb >> UInt64(56 - 8 * byte)) }
        }
        return bytes
    }

    /// Reads up to 32 big-endian bytes; nil when more significant bytes are nonzero.
    init?(bigEndian bytes: some Collection<UInt8>) {
        var limbs: [UInt64] = [0, 0, 0, 0]
        for (position, byte) in bytes.reversed().enumerated() {
            if position >= 32 {
                if byte != 0 { return nil }
                continue
            }
            limbs[position / 8] |= UInt64(byte) << UInt64(8 * (position % 8))
        }
        self.init(limbs[0], limbs[1], limbs[2], limbs[3])
    }

    /// Parses hexadecimal digits (no prefix); nil on anything else or more than 256 bits.
    init?(hexDigits: Substring) {
        var value = U256.zero
        var significant = 0
        for byte in hexDigits.utf8 {
            let digit: UInt64
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt64(byte - UInt8(ascii: "A") + 10)
            default: return nil
            }
            if significant > 0 || digit != 0 { significant += 1 }
            if significant > 64 { return nil }
            value = value.shiftedLeft(4)
            value.l0 |= digit
        }
        if hexDigits.isEmpty { return nil }
        self = value
    }

    /// Parses decimal digits; nil on anything else or a value of 2^256 or more.
    init?(decimalDigits: Substring) {
        if decimalDigits.isEmpty { return nil }
        var value = U256.zero
        for byte in decimalDigits.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            guard let next = value.multipliedAdding(10, UInt64(byte - UInt8(ascii: "0"))) else { return nil }
            value = next
        }
        self = value
    }

    /// `self * factor + addend`, or nil when it passes 2^256.
    func multipliedAdding(_ factor: UInt64, _ addend: UInt64) -> U256? {
        var carry = addend
        var limbs: [UInt64] = [0, 0, 0, 0]
        for index in 0..<4 {
            let (high, low) = limb(index).multipliedFullWidth(by: factor)
            let (sum, overflow) = low.addingReportingOverflow(carry)
            limbs[index] = sum
            carry = high &+ (overflow ? 1 : 0)
        }
        return carry == 0 ? U256(limbs[0], limbs[1], limbs[2], limbs[3]) : nil
    }

    /// `self / divisor` and the remainder.
    func dividedReportingRemainder(_ divisor: UInt64) -> (U256, UInt64) {
        var remainder: UInt64 = 0
        var limbs: [UInt64] = [0, 0, 0, 0]
        for index in (0..<4).reversed() {
            let (quotient, rest) = divisor.dividingFullWidth((remainder, limb(index)))
            limbs[index] = quotient
            remainder = rest
        }
        return (U256(limbs[0], limbs[1], limbs[2], limbs[3]), remainder)
    }

    /// Lowercase hexadecimal without leading zeros ("0" for zero), no prefix.
    var hexDigits: String {
        if isZero { return "0" }
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        var started = false
        for index in (0..<64).reversed() {
            let nibble = Int(bits(at: index * 4, width: 4))
            if nibble != 0 { started = true }
            if started { out.append(digits[nibble]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decimal digits.
    var decimalDigits: String {
        if isZero { return "0" }
        var chunks: [UInt64] = []
        var value = self
        while !value.isZero {
            let (quotient, remainder) = value.dividedReportingRemainder(10_000_000_000_000_000_000)
            chunks.append(remainder)
            value = quotient
        }
        var text = String(chunks.removeLast())
        for chunk in chunks.reversed() {
            let digits = String(chunk)
            text += String(repeating: "0", count: 19 - digits.count) + digits
        }
        return text
    }
}

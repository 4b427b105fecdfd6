import Synchronization

/// ECDSA verification over NIST P-521 (FIPS 186-5), in Swift, for the signatures a provider
/// checks on every MyCHIPs chit. It is a second implementation beside swift-crypto's (BoringSSL's
/// generic Montgomery code for this curve): P-521's prime is a Mersenne prime, so a field product
/// reduces with shifts and adds, and the generator's multiples are tabulated once.
///
/// Verification only, over public inputs; it makes no attempt at constant time and must never
/// sign. The tests hold it to swift-crypto on valid, altered and malformed signatures.
public struct P521VerifyingKey: Sendable {
    let comb: P521Comb

    /// A public key from its raw representation, x ‖ y (66 bytes each, big-endian). Nil when a
    /// coordinate is not below p or the point is not on the curve.
    public init?(rawRepresentation raw: some Collection<UInt8>) {
        guard let point = Self.point(rawRepresentation: raw) else { return nil }
        comb = P521Comb(point)
    }

    /// Whether `raw` is a public key ``init(rawRepresentation:)`` takes, without making its table.
    public static func isValidKey(rawRepresentation raw: some Collection<UInt8>) -> Bool {
        point(rawRepresentation: raw) != nil
    }

    static func point(rawRepresentation raw: some Collection<UInt8>) -> P521Affine? {
        let bytes = Array(raw)
        guard bytes.count == 132, let x = P521Field(bigEndian: bytes[0..<66]), let y = P521Field(bigEndian: bytes[66...]) else { return nil }
        let point = P521Affine(x: x, y: y)
        return point.isOnCurve ? point : nil
    }

    /// The key of `raw`, from a bounded cache of recently used keys (a provider checks the same
    /// partners' keys over and over); nil as for ``init(rawRepresentation:)``.
    public static func cached(rawRepresentation raw: some Collection<UInt8>) -> P521VerifyingKey? {
        let bytes = Array(raw)
        if let key = cache.withLock({ $0[bytes] }) { return key }
        guard let key = P521VerifyingKey(rawRepresentation: bytes) else { return nil }
        cache.withLock { cache in
            if cache.count >= cacheLimit { cache.remove(at: cache.startIndex) }
            cache[bytes] = key
        }
        return key
    }

    /// At most this many keys' tables (147 KB each) are kept; a new one evicts an arbitrary one.
    static let cacheLimit = 256
    private static let cache = Mutex<[[UInt8]: P521VerifyingKey]>([:])

    /// True when `signature` (raw r ‖ s, 66 bytes each, big-endian) is valid for `digest`, the
    /// hash of the message. A digest longer than 521 bits is truncated to its leftmost 521 bits.
    public func isValidSignature(rawRepresentation signature: some Collection<UInt8>, digest: some Sequence<UInt8>) -> Bool {
        let bytes = Array(signature)
        guard bytes.count == 132, let r = P521Words(bigEndian: bytes[0..<66]), let s = P521Words(bigEndian: bytes[66...]) else { return false }
        let n = P521Words.n
        guard !r.isZero, r < n, !s.isZero, s < n, let w = P521Words.inverseMod(s, n) else { return false }
        let e = Self.integer(ofDigest: Array(digest))
        let u1 = P521Words.mulModN(e, w)
        let u2 = P521Words.mulModN(r, w)
        let sum = Self.linearCombination(u1, u2, comb)
        guard !sum.isInfinity, !sum.z.isZero else { return false }
        // x(R) mod n == r without an inversion: X == r·Z² (mod p), or (r + n)·Z² when r + n < p.
        let zz = sum.z.squared()
        if sum.x == P521Field(r) * zz { return true }
        let (candidate, carried) = P521Words.adding(r, n)
        return !carried && candidate < P521Words.p && sum.x == P521Field(candidate) * zz
    }

    /// The digest as an integer below n: its leftmost 521 bits, reduced once.
    static func integer(ofDigest digest: [UInt8]) -> P521Words {
        var e: P521Words
        if digest.count * 8 <= 521 {
            e = P521Words(bigEndian: digest)!
        } else {
            e = P521Words(bigEndian: digest.prefix(66))!
            for _ in 0..<(66 * 8 - 521) { e.shiftRightOne() }
        }
        return e < P521Words.n ? e : P521Words.subtracting(e, P521Words.n)
    }

    /// u1·G + u2·Q with two comb tables (Lim–Lee): each scalar is read as 10 rows of 53 bits, and
    /// one run of 53 doublings adds, per column, the table entry that sums the column's rows.
    static func linearCombination(_ u1: P521Words, _ u2: P521Words, _ q: P521Comb) -> P521Point {
        let g = P521Comb.generator.points, t = q.points
        var result = P521Point.infinity
        for column in (0..<P521Comb.columns).reversed() {
            result = result.doubled()
            let i = P521Comb.index(u1, column: column), j = P521Comb.index(u2, column: column)
            if i != 0 { result = result + g[i] }
            if j != 0 { result = result + t[j] }
        }
        return result
    }
}

/// A comb table of a point P: entry i (1 ≤ i < 1024) is Σ 2^(53·r)·P over the bits r set in i,
/// in affine coordinates. A 521-bit scalar k is then Σ over 53 columns c of 2^c·(entry of the
/// bits 53·r + c of k), so k·P costs 53 doublings and at most 53 additions. Making a table costs
/// about as much as ten verifications; the generator's is made once, a key's is cached.
final class P521Comb: Sendable {
    static let rows = 10
    static let columns = 53
    let points: [P521Affine]

    static let generator = P521Comb(.generator)

    init(_ point: P521Affine) {
        var bases = [P521Point(affine: point)]
        for _ in 1..<Self.rows {
            var next = bases[bases.count - 1]
            for _ in 0..<Self.columns { next = next.doubled() }
            bases.append(next)
        }
        var jacobian = [P521Point](repeating: .infinity, count: 1 << Self.rows)
        for index in 1..<jacobian.count {
            let low = index.trailingZeroBitCount
            let rest = index & (index - 1)
            jacobian[index] = rest == 0 ? bases[low] : jacobian[rest] + bases[low]
        }
        points = [P521Affine(x: .zero, y: .zero)] + P521Point.affine(Array(jacobian.dropFirst()))
    }

    /// The column's bits of k, row r as bit r.
    @inline(__always)
    static func index(_ k: P521Words, column: Int) -> Int {
        var index = 0
        for row in 0..<rows where k.bit(row * columns + column) { index |= 1 << row }
        return index
    }
}

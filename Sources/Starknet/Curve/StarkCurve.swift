/// The Stark curve, y² = x³ + x + β over the field of P, and the arithmetic on its points.
///
/// Points are added in Jacobian coordinates (X/Z², Y/Z³) so that only the final conversion to
/// affine coordinates pays for an inversion. Multiples of fixed points (the generator and the
/// Pedersen points) come from precomputed tables of affine multiples, built once per process.
enum StarkCurve {
    /// β, the curve's constant term (α = 1).
    static let beta = Fp(U256(hexDigits: "6f21413efbe40de150e596d72f7a8c5609ad26c15c915c1f4cdfcb99cee9e89")!)

    /// The generator of the ECDSA group.
    static let generator = AffinePoint(
        x: "1ef15c18599971b7beced415a40f0c7deacfd9b0d1819e03d723d8bc943cfca",
        y: "5668060aa49730b7be4801df46ec62de53ecd11abe43a32873000c36e8dc1f")

    /// The generator's x coordinate (the public key of the private key 1).
    static var generatorX: Felt { Felt(raw: generator.x.value) }

    static func isOnCurve(_ point: AffinePoint) -> Bool {
        point.y.squared == point.x.squared * point.x + point.x + beta
    }

    /// The point whose x coordinate is `x`, with either of its two y coordinates; nil when `x` is not
    /// the x coordinate of a point.
    static func point(x: Fp) -> AffinePoint? {
        guard let y = (x.squared * x + x + beta).squareRoot else { return nil }
        return AffinePoint(x: x, y: y)
    }
}

/// A point in affine coordinates (never the point at infinity).
struct AffinePoint: Hashable, Sendable {
    var x: Fp
    var y: Fp

    init(x: Fp, y: Fp) { self.x = x; self.y = y }

    /// A point from its coordinates in hex (constants in the source).
    init(x: String, y: String) {
        self.init(x: Fp(U256(hexDigits: Substring(x))!), y: Fp(U256(hexDigits: Substring(y))!))
    }

    var negated: AffinePoint { AffinePoint(x: x, y: -y) }
    var jacobian: JacobianPoint { JacobianPoint(x: x, y: y, z: .one) }
}

/// A point in Jacobian coordinates; Z = 0 is the point at infinity.
struct JacobianPoint: Sendable {
    var x: Fp
    var y: Fp
    var z: Fp

    static let infinity = JacobianPoint(x: .one, y: .one, z: .zero)

    var isInfinity: Bool { z.isZero }

    /// The affine point, or nil for the point at infinity (one inversion).
    var affine: AffinePoint? {
        guard !isInfinity else { return nil }
        let zInverse = z.inverse
        let zInverse2 = zInverse.squared
        return AffinePoint(x: x * zInverse2, y: y * zInverse2 * zInverse)
    }

    /// The affine x coordinate only, or nil for the point at infinity.
    var affineX: Fp? {
        guard !isInfinity else { return nil }
        return x * z.inverse.squared
    }

    /// 2·self ("dbl-2007-bl" with α = 1).
    @inline(__always)
    var doubled: JacobianPoint {
        if isInfinity || y.isZero { return .infinity }
        let xx = x.squared, yy = y.squared, yyyy = yy.squared, zz = z.squared
        let s = ((x + yy).squared - xx - yyyy).doubled
        let m = xx.doubled + xx + zz.squared
        let x3 = m.squared - s.doubled
        let eight = yyyy.doubled.doubled.doubled
        let y3 = m * (s - x3) - eight
        let z3 = (y + z).squared - yy - zz
        return JacobianPoint(x: x3, y: y3, z: z3)
    }

    /// self + q for an affine q ("madd-2007-bl"), with the cases of equal and opposite points.
    @inline(__always)
    func adding(_ q: AffinePoint) -> JacobianPoint {
        if isInfinity { return q.jacobian }
        let z1z1 = z.squared
        let u2 = q.x * z1z1
        let s2 = q.y * z * z1z1
        let h = u2 - x
        let r = (s2 - y).doubled
        if h.isZero {
            return r.isZero ? doubled : .infinity
        }
        let hh = h.squared
        let i = hh.doubled.doubled
        let j = h * i
        let v = x * i
        let x3 = r.squared - j - v.doubled
        let y3 = r * (v - x3) - (y * j).doubled
        let z3 = (z + h).squared - z1z1 - hh
        return JacobianPoint(x: x3, y: y3, z: z3)
    }

    /// self + q ("add-2007-bl"), with the cases of equal and opposite points.
    func adding(_ q: JacobianPoint) -> JacobianPoint {
        if isInfinity { return q }
        if q.isInfinity { return self }
        let z1z1 = z.squared, z2z2 = q.z.squared
        let u1 = x * z2z2, u2 = q.x * z1z1
        let s1 = y * q.z * z2z2, s2 = q.y * z * z1z1
        let h = u2 - u1
        let r = (s2 - s1).doubled
        if h.isZero {
            return r.isZero ? doubled : .infinity
        }
        let i = h.doubled.squared
        let j = h * i
        let v = u1 * i
        let x3 = r.squared - j - v.doubled
        let y3 = r * (v - x3) - (s1 * j).doubled
        let z3 = ((z + q.z).squared - z1z1 - z2z2) * h
        return JacobianPoint(x: x3, y: y3, z: z3)
    }

    var negated: JacobianPoint { JacobianPoint(x: x, y: -y, z: z) }

    /// scalar · point for any point, four bits at a time (used where the point is not fixed:
    /// the public key in signature verification).
    static func multiply(_ point: AffinePoint, by scalar: U256) -> JacobianPoint {
        var multiples = [JacobianPoint](repeating: .infinity, count: 16)
        multiples[1] = point.jacobian
        for index in 2..<16 { multiples[index] = multiples[index - 1].adding(point) }
        var result = JacobianPoint.infinity
        for window in (0..<64).reversed() {
            result = result.doubled.doubled.doubled.doubled
            let digit = Int(scalar.bits(at: window * 4, width: 4))
            if digit != 0 { result = result.adding(multiples[digit]) }
        }
        return result
    }
}

/// Converts many Jacobian points to affine with one inversion (Montgomery's trick). None may be
/// the point at infinity.
func normalize(_ points: [JacobianPoint]) -> [AffinePoint] {
    var prefix = [Fp](repeating: .one, count: points.count)
    var accumulator = Fp.one
    for (index, point) in points.enumerated() {
        prefix[index] = accumulator
        accumulator = accumulator * point.z
    }
    var inverse = accumulator.inverse
    var result = [AffinePoint](repeating: AffinePoint(x: .zero, y: .zero), count: points.count)
    for index in points.indices.reversed() {
        let zInverse = inverse * prefix[index]
        inverse = inverse * points[index].z
        let zInverse2 = zInverse.squared
        result[index] = AffinePoint(x: points[index].x * zInverse2, y: points[index].y * zInverse2 * zInverse)
    }
    return result
}

/// Multiples of one fixed point, for multiplying it by scalars of up to `bits` bits:
/// `entry(window, digit) = digit · 2^(width·window) · base` for digits 1 ..< 2^width.
///
/// For secret scalars (a signing nonce, a private key) a second, offset table makes the work
/// independent of the scalar: `secretEntry(window, digit) = (digit + c) · 2^(width·window) · base`
/// for every digit *including 0*, with `c` a fixed 250-bit constant. Every window then adds one
/// point, read by scanning the whole window; the offsets' sum, `c · Σ 2^(width·window) · base`, is
/// taken off with one more addition at the end. No addition is skipped for a zero digit and the
/// accumulator never starts from infinity, so a nonce with leading or inner zero digits takes as
/// long as any other (the equal and opposite cases of an addition occur with probability ~2⁻²⁵⁰).
struct FixedBaseTable: Sendable {
    let width: Int
    let windows: Int
    let entries: [AffinePoint]
    /// `(digit + c) · 2^(width·window) · base` for digits 0 ..< 2^width, window by window.
    let secretEntries: [AffinePoint]
    /// `−c · Σ_window 2^(width·window) · base`.
    let secretCorrection: AffinePoint

    /// The offset `c`: SHA-256("purse stark fixed-base offset") shifted right 6 bits (any
    /// constant of about the order's size does; this one has nothing up its sleeve).
    static let offset = U256(hexDigits: "2bf6143b25c102a844486ee903a109eadf52db23e2e6e2cf1419e26487c0479")!

    init(base: AffinePoint, bits: Int, width: Int) {
        self.width = width
        windows = (bits + width - 1) / width
        let perWindow = (1 << width) - 1
        var jacobian: [JacobianPoint] = []
        jacobian.reserveCapacity(windows * perWindow)
        var windowBase = base.jacobian
        for _ in 0..<windows {
            let windowBaseAffine = normalize([windowBase])[0]
            var multiple = windowBase
            jacobian.append(multiple)
            for _ in 1..<perWindow {
                multiple = multiple.adding(windowBaseAffine)
                jacobian.append(multiple)
            }
            for _ in 0..<width { windowBase = windowBase.doubled }
        }
        let entries = normalize(jacobian)
        self.entries = entries
        // The offset table: each window's multiples moved by c · 2^(width·window) · base.
        var offsetWindow = JacobianPoint.multiply(base, by: Self.offset)
        var offsets = JacobianPoint.infinity
        var secret: [JacobianPoint] = []
        secret.reserveCapacity(windows * (perWindow + 1))
        for window in 0..<windows {
            secret.append(offsetWindow)
            for digit in 1...perWindow { secret.append(offsetWindow.adding(entries[window * perWindow + digit - 1])) }
            offsets = offsets.adding(offsetWindow)
            for _ in 0..<width { offsetWindow = offsetWindow.doubled }
        }
        secretEntries = normalize(secret)
        secretCorrection = offsets.affine!.negated
    }

    /// Adds `scalar · base` to `accumulator` (public scalars: the digit picks the entry directly).
    @inline(__always)
    func multiply(_ scalar: U256, adding accumulator: JacobianPoint = .infinity) -> JacobianPoint {
        var result = accumulator
        let perWindow = (1 << width) - 1
        for window in 0..<windows {
            let digit = Int(scalar.bits(at: window * width, width: width))
            if digit != 0 { result = result.adding(entries[window * perWindow + digit - 1]) }
        }
        return result
    }

    /// `scalar · base` for a secret scalar below `2^(width·windows)`: one point added per window
    /// and one at the end, whatever the digits, each read by scanning its whole window and keeping
    /// the wanted entry by masking, so neither the work nor the memory touched depends on the scalar.
    func multiplySecret(_ scalar: U256) -> JacobianPoint {
        var work = SecretMultiplicationWork()
        return multiplySecret(scalar, work: &work)
    }

    /// What one secret multiplication did, for the test that it does the same for every scalar.
    struct SecretMultiplicationWork: Equatable {
        var additions = 0
        var entriesRead = 0
    }

    func multiplySecret(_ scalar: U256, work: inout SecretMultiplicationWork) -> JacobianPoint {
        let perWindow = 1 << width
        var result = JacobianPoint.infinity
        for window in 0..<windows {
            let digit = UInt64(scalar.bits(at: window * width, width: width))
            var chosen = U256.zero, chosenY = U256.zero
            for candidate in 0..<perWindow {
                let mask = 0 &- UInt64(digit == UInt64(candidate) ? 1 : 0)
                let entry = secretEntries[window * perWindow + candidate]
                chosen = U256(chosen.l0 | (entry.x.montgomery.l0 & mask), chosen.l1 | (entry.x.montgomery.l1 & mask),
                              chosen.l2 | (entry.x.montgomery.l2 & mask), chosen.l3 | (entry.x.montgomery.l3 & mask))
                chosenY = U256(chosenY.l0 | (entry.y.montgomery.l0 & mask), chosenY.l1 | (entry.y.montgomery.l1 & mask),
                               chosenY.l2 | (entry.y.montgomery.l2 & mask), chosenY.l3 | (entry.y.montgomery.l3 & mask))
                work.entriesRead += 1
            }
            let point = AffinePoint(x: Fp(montgomery: chosen), y: Fp(montgomery: chosenY))
            // The first window starts the sum (the same for every scalar); every later one adds.
            result = window == 0 ? point.jacobian : add(result, point, work: &work)
        }
        return add(result, secretCorrection, work: &work)
    }

    @inline(__always)
    private func add(_ p: JacobianPoint, _ q: AffinePoint, work: inout SecretMultiplicationWork) -> JacobianPoint {
        work.additions += 1
        return p.adding(q)
    }
}

extension StarkCurve {
    /// Multiples of the generator for scalars below N (252 bits), four bits per window.
    static let generatorTable = FixedBaseTable(base: generator, bits: 252, width: 4)
}

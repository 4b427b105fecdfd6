/// A point of P-521 (y² = x³ − 3x + b over GF(2^521 − 1)) in Jacobian coordinates, (X, Y, Z)
/// for the affine (X/Z², Y/Z³). The formulas are the Explicit-Formulas Database's for a = −3:
/// dbl-2001-b, add-2007-bl and madd-2007-bl.
struct P521Point: Sendable {
    var x: P521Field
    var y: P521Field
    var z: P521Field
    var isInfinity: Bool

    static let infinity = P521Point(x: .one, y: .one, z: .zero, isInfinity: true)

    init(x: P521Field, y: P521Field, z: P521Field, isInfinity: Bool = false) {
        (self.x, self.y, self.z, self.isInfinity) = (x, y, z, isInfinity)
    }

    init(affine point: P521Affine) {
        self.init(x: point.x, y: point.y, z: .one)
    }

    func doubled() -> P521Point {
        if isInfinity { return self }
        let delta = z.squared()
        let gamma = y.squared()
        let beta = x * gamma
        let alpha = ((x - delta) * (x + delta)).times(3)
        let x3 = alpha.squared() - beta.times(8)
        let z3 = (y + z).squared() - gamma - delta
        let y3 = alpha * (beta.times(4) - x3) - gamma.squared().times(8)
        return P521Point(x: x3, y: y3, z: z3)
    }

    static func + (p: P521Point, q: P521Point) -> P521Point {
        if p.isInfinity { return q }
        if q.isInfinity { return p }
        let z1z1 = p.z.squared()
        let z2z2 = q.z.squared()
        let u1 = p.x * z2z2
        let u2 = q.x * z1z1
        let s1 = p.y * q.z * z2z2
        let s2 = q.y * p.z * z1z1
        let h = u2 - u1
        let r = (s2 - s1).times(2)
        if h.isZero { return r.isZero ? p.doubled() : .infinity }
        let i = h.times(2).squared()
        let j = h * i
        let v = u1 * i
        let x3 = r.squared() - j - v.times(2)
        let y3 = r * (v - x3) - (s1 * j).times(2)
        let z3 = ((p.z + q.z).squared() - z1z1 - z2z2) * h
        return P521Point(x: x3, y: y3, z: z3)
    }

    /// p + q for an affine q (Z = 1).
    static func + (p: P521Point, q: P521Affine) -> P521Point {
        if p.isInfinity { return P521Point(affine: q) }
        let z1z1 = p.z.squared()
        let u2 = q.x * z1z1
        let s2 = q.y * p.z * z1z1
        let h = u2 - p.x
        let r = (s2 - p.y).times(2)
        if h.isZero { return r.isZero ? p.doubled() : .infinity }
        let hh = h.squared()
        let i = hh.times(4)
        let j = h * i
        let v = p.x * i
        let x3 = r.squared() - j - v.times(2)
        let y3 = r * (v - x3) - (p.y * j).times(2)
        let z3 = (p.z + h).squared() - z1z1 - hh
        return P521Point(x: x3, y: y3, z: z3)
    }

    /// Many points made affine with one inversion (Montgomery's trick); none may be infinity.
    static func affine(_ points: [P521Point]) -> [P521Affine] {
        var prefix: [P521Field] = []
        prefix.reserveCapacity(points.count)
        var running = P521Field.one
        for point in points {
            running = running * point.z
            prefix.append(running)
        }
        var inverse = running.inverse
        var result = [P521Affine](repeating: P521Affine(x: .zero, y: .zero), count: points.count)
        for index in points.indices.reversed() {
            let zInverse = index == 0 ? inverse : inverse * prefix[index - 1]
            inverse = inverse * points[index].z
            let zInverse2 = zInverse.squared()
            result[index] = P521Affine(x: points[index].x * zInverse2, y: points[index].y * zInverse2 * zInverse)
        }
        return result
    }

    /// The affine point; nil for the point at infinity.
    var affine: P521Affine? {
        if isInfinity || z.isZero { return nil }
        let zInverse = z.inverse
        let zInverse2 = zInverse.squared()
        return P521Affine(x: x * zInverse2, y: y * zInverse2 * zInverse)
    }
}

/// A point of P-521 in affine coordinates, never the point at infinity.
struct P521Affine: Sendable {
    var x: P521Field
    var y: P521Field

    static let b = P521Field(P521Words(hex: "0051953eb9618e1c9a1f929a21a0b68540eea2da725b99b315f3b8b489918ef109e156193951ec7e937b1652c0bd3bb1bf073573df883d2c34f1ef451fd46b503f00")!)

    static let generator = P521Affine(
        x: P521Field(P521Words(hex: "00c6858e06b70404e9cd9e3ecb662395b4429c648139053fb521f828af606b4d3dbaa14b5e77efe75928fe1dc127a2ffa8de3348b3c1856a429bf97e7e31c2e5bd66")!),
        y: P521Field(P521Words(hex: "011839296a789a3bc0045c8a5fb42c7d1bd998f54449579b446817afbd17273e662c97ee72995ef42640c550b9013fad0761353c7086a272c24088be94769fd16650")!))

    /// True when the point satisfies the curve's equation.
    var isOnCurve: Bool {
        y.squared() == x.squared() * x - x.times(3) + Self.b
    }

    var negated: P521Affine { P521Affine(x: x, y: P521Field.zero - y) }
}

import Crypto
import Synchronization

/// A Stark ECDSA signature over a felt (a transaction hash, a SNIP-12 message hash).
public struct StarkSignature: Hashable, Sendable, CustomStringConvertible {
    public let r: Felt
    public let s: Felt

    public init(r: Felt, s: Felt) { self.r = r; self.s = s }

    /// `[r, s]`, the transaction's `signature` field for OpenZeppelin and Argent accounts.
    public var felts: [Felt] { [r, s] }
    public var description: String { "(\(r), \(s))" }
}

/// Why a key or a signature was refused.
public enum StarkKeyError: Error, Equatable, CustomStringConvertible {
    /// A private key must be in [1, N).
    case privateKeyOutOfRange
    /// Only hashes below 2^251 can be signed.
    case messageHashTooLarge

    public var description: String {
        switch self {
        case .privateKeyOutOfRange: "The private key must be between 1 and the curve order"
        case .messageHashTooLarge: "The message hash must be below 2^251"
        }
    }
}

/// A Stark curve private key: signs with ECDSA as StarkWare defines it, k drawn by RFC 6979.
///
/// Its `description` never shows the key. The public key (`publicKey`) is the x coordinate of
/// `key · G`, the "stark key" that accounts store.
public struct StarkKey: Sendable, CustomStringConvertible {
    let secret: U256
    /// The x coordinate of the public point.
    public let publicKey: Felt

    /// The curve's order N.
    public static let curveOrder = Felt(raw: Fn.modulus)

    public init(privateKey: Felt) throws {
        guard !privateKey.isZero, privateKey.raw < Fn.modulus else { throw StarkKeyError.privateKeyOutOfRange }
        secret = privateKey.raw
        publicKey = Felt(raw: StarkCurve.generatorTable.multiplySecret(secret).affineX!.value)
    }

    /// A new random key in [1, N).
    public static func random() -> StarkKey {
        var generator = SystemRandomNumberGenerator()
        while true {
            let candidate = U256(generator.next(), generator.next(), generator.next(), generator.next() & 0x0fff_ffff_ffff_ffff)
            if let felt = Felt(limbs: candidate), let key = try? StarkKey(privateKey: felt) { return key }
        }
    }

    /// The private key, for storing in a `SecureStore`; never log it.
    public var privateKey: Felt { Felt(raw: secret) }

    public var description: String { "StarkKey(public: \(publicKey))" }

    /// Signs `hash` with k from RFC 6979 (HMAC-SHA256) and no extra entropy, as starknet.js,
    /// starknet-rs and starknet-py's `message_signature(…, seed=None)` do.
    public func sign(_ hash: Felt) throws -> StarkSignature {
        guard hash.raw.bitWidth <= 251 else { throw StarkKeyError.messageHashTooLarge }
        var seed: UInt64? = nil
        while true {
            let k = RFC6979.nonce(hash: hash.raw, secret: secret, extraEntropy: seed)
            seed = (seed ?? 0) + 1
            guard let x = StarkCurve.generatorTable.multiplySecret(k).affineX?.value else { continue }
            // StarkWare's variant: r is x itself, not x mod N, and must be below 2^251.
            guard !x.isZero, x.bitWidth <= 251 else { continue }
            let sum = Fn(reducing: hash.raw) + Fn(reducing: x) * Fn(reducing: secret)
            guard !sum.isZero else { continue }
            let w = Fn(reducing: k) * sum.inverse
            guard !w.isZero, w.value.bitWidth <= 251 else { continue }
            return StarkSignature(r: Felt(raw: x), s: Felt(raw: w.inverse.value))
        }
    }
}

/// Signature verification against a stark key (the x coordinate of the public point).
public enum StarkVerifier {
    /// Whether `signature` signs `hash` for `publicKey`, with either y of the public point (so both
    /// (r, s) and (r, N − s) verify, as in every Starknet implementation).
    public static func verify(_ hash: Felt, signature: StarkSignature, publicKey: Felt) -> Bool {
        let r = signature.r.raw, s = signature.s.raw
        guard !r.isZero, r.bitWidth <= 251, !s.isZero, s < Fn.modulus, hash.raw.bitWidth <= 251 else { return false }
        let w = Fn(reducing: s).inverse
        guard w.value.bitWidth <= 251 else { return false }
        guard let point = PublicPoints.point(for: publicKey) else { return false }
        // x(w·(z·G ± r·Q)) = x(u1·G ± u2·Q) with u1 = z·w and u2 = r·w.
        let u1 = (Fn(reducing: hash.raw) * w).value
        let u2 = (Fn(reducing: r) * w).value
        let a = StarkCurve.generatorTable.multiply(u1)
        let b = JacobianPoint.multiply(point, by: u2)
        for candidate in [a.adding(b), a.adding(b.negated)] {
            if let x = candidate.affineX, x.value == r { return true }
        }
        return false
    }
}

/// Public points recovered from stark keys (a square root each), remembered for the keys seen
/// most recently: a node verifies the same accounts' signatures over and over.
enum PublicPoints {
    private static let cache = PointCache()

    static func point(for key: Felt) -> AffinePoint? {
        if let known = cache.get(key) { return known }
        guard key.raw < Fp.modulus, let point = StarkCurve.point(x: Fp(key.raw)) else { return nil }
        cache.put(key, point)
        return point
    }
}

/// A bounded map from stark keys to their points; cleared when full.
final class PointCache: Sendable {
    private let storage = Mutex<[Felt: AffinePoint]>([:])
    private let capacity = 4096

    func get(_ key: Felt) -> AffinePoint? { storage.withLock { $0[key] } }

    func put(_ key: Felt, _ point: AffinePoint) {
        storage.withLock { map in
            if map.count >= capacity { map.removeAll(keepingCapacity: true) }
            map[key] = point
        }
    }
}

/// Deterministic ECDSA nonces (RFC 6979, HMAC-SHA256) exactly as StarkWare's `generate_k_rfc6979`
/// computes them: the hash as its minimal big-endian bytes, shifted one nibble left when it is
/// one nibble short of 252 bits (the padding elliptic.js applies), and an optional extra-entropy
/// seed as its minimal bytes.
enum RFC6979 {
    static func nonce(hash: U256, secret: U256, extraEntropy: UInt64?) -> U256 {
        var message = hash
        let width = message.bitWidth
        if width >= 248, (1...4).contains(width % 8) { message = message.shiftedLeft(4) }
        let order = Fn.modulus
        let orderBits = order.bitWidth // 252
        let data = minimalBytes(message)
        // bits2octets: the data as an integer of at most qlen bits, reduced once by N, in 32 bytes.
        var z = bitsToInteger(data, bits: orderBits)
        if z >= order { z = U256.subtract(z, order).0 }
        var seedBytes: [UInt8] = []
        if let extraEntropy {
            seedBytes = minimalBytes(U256(extraEntropy))
        }
        let x = secret.bigEndianBytes + z.bigEndianBytes + seedBytes

        var v = [UInt8](repeating: 0x01, count: 32)
        var k = SymmetricKey(data: [UInt8](repeating: 0x00, count: 32))
        k = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: v + [0x00] + x, using: k)))
        v = Array(HMAC<SHA256>.authenticationCode(for: v, using: k))
        k = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: v + [0x01] + x, using: k)))
        v = Array(HMAC<SHA256>.authenticationCode(for: v, using: k))
        while true {
            v = Array(HMAC<SHA256>.authenticationCode(for: v, using: k))
            let candidate = bitsToInteger(v, bits: orderBits)
            if !candidate.isZero, candidate < order { return candidate }
            k = SymmetricKey(data: Array(HMAC<SHA256>.authenticationCode(for: v + [0x00], using: k)))
            v = Array(HMAC<SHA256>.authenticationCode(for: v, using: k))
        }
    }

    /// The value's big-endian bytes without leading zero bytes (empty for zero).
    static func minimalBytes(_ value: U256) -> [UInt8] {
        Array(value.bigEndianBytes.drop { $0 == 0 })
    }

    /// bits2int: the bytes as a big-endian integer, keeping its leftmost `bits` bits.
    static func bitsToInteger(_ bytes: [UInt8], bits: Int) -> U256 {
        let value = U256(bigEndian: bytes.suffix(32))!
        let length = bytes.count * 8
        return length > bits ? value.shiftedRight(length - bits) : value
    }
}

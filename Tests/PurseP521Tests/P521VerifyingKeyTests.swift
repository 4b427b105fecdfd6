import Crypto
import Foundation
import PurseFormats
@testable import PurseP521
import Testing

/// The Swift P-521 verifier held to swift-crypto (BoringSSL): the same answer for valid
/// signatures, altered ones and malformed ones, with SHA-384 (MyCHIPs') and SHA-512 digests.
@Suite("P-521 verification: the same answers as swift-crypto")
struct P521VerifyingKeyTests {
    static func key(_ publicKey: P521.Signing.PublicKey) throws -> P521VerifyingKey {
        try #require(P521VerifyingKey(rawRepresentation: publicKey.rawRepresentation))
    }

    @Test("the field: inverses, the generator on the curve, (n − 1)·G = −G")
    func fieldAndGroup() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let bytes = (0..<65).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let a = try #require(P521Field(bigEndian: [0] + bytes))
            #expect((a * a.inverse) == .one || a.isZero)
            let b = try #require(P521Field(bigEndian: [1] + bytes.reversed()))
            #expect((a + b) - b == a)
            #expect(a.squared() == a * a)
            #expect(P521Field(a.words) == a)
        }
        #expect(P521Affine.generator.isOnCurve)
        let nMinusOne = P521Words.subtracting(.n, P521Words(1))
        let point = try #require(P521VerifyingKey.linearCombination(nMinusOne, .zero, .generator).affine)
        #expect(point.x == P521Affine.generator.x && point.y == P521Affine.generator.negated.y)
        #expect(P521VerifyingKey.linearCombination(P521Words(1), nMinusOne, .generator).isInfinity)
        // p − 1 ≡ −1: its square is one.
        let minusOne = try #require(P521Field(bigEndian: P521Words.subtracting(.p, P521Words(1)).bigEndian(length: 66)))
        #expect(minusOne.squared() == .one && !minusOne.isZero && (minusOne + .one).isZero)
        // p itself reduces to 0, and p + 1 + 2^68 (its excess in the second limb) to 1 + 2^68.
        let (m58, m57) = (P521Field.mask58, P521Field.mask57)
        let p = P521Field(l0: m58, l1: m58, l2: m58, l3: m58, l4: m58, l5: m58, l6: m58, l7: m58, l8: m57)
        #expect(p.isZero && p.words == .zero)
        let pPlusOne = P521Field(l0: 0, l1: m58 + 1 + (1 << 10), l2: m58, l3: m58, l4: m58, l5: m58, l6: m58, l7: m58, l8: m57)
        var expected = P521Words(1)
        expected[1] = 1 << 4
        #expect(pPlusOne.words == expected)
    }

    @Test("scalars modulo n: inverses and products")
    func scalars() throws {
        for seed in 1...20 {
            let a = P521Words.mulModN(P521Words(UInt64(seed) &* 0x9E37_79B9_7F4A_7C15), .n.shifted())
            let inverse = try #require(P521Words.inverseMod(a, .n))
            #expect(P521Words.mulModN(a, inverse) == P521Words(1))
            #expect(P521Words.mulModN(a, P521Words(1)) == a)
            // Against schoolbook doubling and adding.
            var expected = P521Words.zero
            for index in (0..<(64 * P521Words.count)).reversed() {
                expected = P521Words.addMod(expected, expected, .n)
                if inverse.bit(index) { expected = P521Words.addMod(expected, a, .n) }
            }
            #expect(P521Words.mulModN(a, inverse) == expected)
        }
        #expect(P521Words.inverseMod(.zero, .n) == nil)
    }

    @Test("valid signatures over SHA-384 and SHA-512 verify, as in swift-crypto")
    func validSignatures() throws {
        for index in 0..<40 {
            let privateKey = P521.Signing.PrivateKey()
            let key = try Self.key(privateKey.publicKey)
            let message = Data("chit \(index) \(UUID())".utf8)
            let sha384 = SHA384.hash(data: message)
            let signature = try privateKey.signature(for: sha384)
            #expect(privateKey.publicKey.isValidSignature(signature, for: sha384))
            #expect(key.isValidSignature(rawRepresentation: signature.rawRepresentation, digest: Array(sha384)))
            // The same signature with s replaced by n − s is valid too, in both.
            let raw = Array(signature.rawRepresentation)
            let s = try #require(P521Words(bigEndian: raw[66...]))
            let flipped = Array(raw[0..<66]) + P521Words.subtracting(.n, s).bigEndian(length: 66)
            let flippedSignature = try P521.Signing.ECDSASignature(rawRepresentation: flipped)
            #expect(key.isValidSignature(rawRepresentation: flipped, digest: Array(sha384))
                    == privateKey.publicKey.isValidSignature(flippedSignature, for: sha384))
            // swift-crypto's own signing hashes with SHA-512 (512 bits, shorter than the 521-bit
            // order, so it is taken whole).
            let sha512Signature = try privateKey.signature(for: message)
            #expect(key.isValidSignature(rawRepresentation: sha512Signature.rawRepresentation, digest: Array(SHA512.hash(data: message))))
        }
    }

    /// Signatures OpenSSL made through PyPI cryptography (`scripts/oracles/p521_vectors.py`):
    /// SHA-384 and SHA-512 digests, digests of all zeros and all ones, s and n − s, a bit
    /// flipped, and a key moved off the curve.
    @Test("OpenSSL's signatures, through PyPI cryptography: the same answers")
    func pythonVectors() throws {
        struct Vector: Decodable { var key: String; var digest: String; var signature: String; var valid: Bool; var badKey: Bool? }
        struct File: Decodable { var vectors: [Vector] }
        let url = try #require(Bundle.module.url(forResource: "p521_vectors", withExtension: "json", subdirectory: "Fixtures"))
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        #expect(file.vectors.count > 70)
        for (index, vector) in file.vectors.enumerated() {
            let raw = try #require(Hex.decode(vector.key))
            guard let key = P521VerifyingKey(rawRepresentation: raw) else {
                #expect(vector.badKey == true, "vector \(index): the key was refused")
                continue
            }
            #expect(vector.badKey != true, "vector \(index): a key off the curve was taken")
            let valid = key.isValidSignature(rawRepresentation: try #require(Hex.decode(vector.signature)), digest: try #require(Hex.decode(vector.digest)))
            #expect(valid == vector.valid, "vector \(index)")
        }
    }

    /// Project Wycheproof's ECDSA P-521 / SHA-512 vectors with raw (IEEE P1363) signatures,
    /// the form this verifier reads: valid signatures, and the arithmetic edge cases, out-of-range
    /// r and s, wrong lengths and special public keys that implementations have got wrong.
    @Test("Project Wycheproof's secp521r1 SHA-512 P1363 vectors: every verdict as Wycheproof's")
    func wycheproofVectors() throws {
        struct Test: Decodable { var tcId: Int; var msg: String; var sig: String; var result: String; var flags: [String] }
        struct Group: Decodable { var uncompressed: String; var sha: String; var tests: [Test] }
        struct File: Decodable { var numberOfTests: Int; var testGroups: [Group] }
        let url = try #require(Bundle.module.url(forResource: "wycheproof_ecdsa_secp521r1_sha512_p1363", withExtension: "json", subdirectory: "Fixtures"))
        let file = try JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        var checked = 0
        for group in file.testGroups {
            #expect(group.sha == "SHA-512")
            let point = try #require(Hex.decode(group.uncompressed))
            #expect(point.count == 133 && point.first == 4)
            let key = try #require(P521VerifyingKey(rawRepresentation: point.dropFirst()), "a Wycheproof key was refused")
            for test in group.tests {
                let message = try #require(Hex.decode(test.msg))
                let signature = try #require(Hex.decode(test.sig))
                let valid = key.isValidSignature(rawRepresentation: signature, digest: Array(SHA512.hash(data: message)))
                switch test.result {
                case "valid": #expect(valid, "tcId \(test.tcId) \(test.flags)")
                case "invalid": #expect(!valid, "tcId \(test.tcId) \(test.flags)")
                default: break  // "acceptable": either answer
                }
                checked += 1
            }
        }
        #expect(checked == file.numberOfTests && checked >= 300)
    }

    /// A digest longer than the order's 521 bits is read as its leftmost 521 bits (FIPS 186-5,
    /// 6.4.2): a 66-byte or longer digest whose leftmost bits are a SHA-512 value verifies exactly
    /// as that SHA-512 digest does, whatever its bits past the 521st.
    @Test("digests of 66 bytes and more: only their leftmost 521 bits count")
    func longDigestsAreTruncated() throws {
        let privateKey = P521.Signing.PrivateKey()
        let key = try Self.key(privateKey.publicKey)
        let message = Data("pay 7 CHIPs".utf8)
        let raw = Array(try privateKey.signature(for: message).rawRepresentation)
        let digest = Array(SHA512.hash(data: message))
        #expect(key.isValidSignature(rawRepresentation: raw, digest: digest))
        /// A `length`-byte digest whose leftmost 521 bits are the SHA-512 value: 9 zero bits, the
        /// digest's 512 bits, then `tail`'s bits repeated past the 521st.
        func long(_ length: Int, tail: UInt8) -> [UInt8] {
            var bits = [UInt8](repeating: 0, count: length)
            func set(_ index: Int) { bits[index / 8] |= 0x80 >> (index % 8) }
            for bit in 0..<512 where digest[bit / 8] & (0x80 >> (bit % 8)) != 0 { set(9 + bit) }
            for bit in 521..<(length * 8) where tail & (0x80 >> (bit % 8)) != 0 { set(bit) }
            return bits
        }
        for length in [66, 67, 80, 128] {
            for tail: UInt8 in [0x00, 0xFF, 0x5A] {
                #expect(key.isValidSignature(rawRepresentation: raw, digest: long(length, tail: tail)), "length \(length), tail \(tail)")
            }
            // A bit inside the leftmost 521 changes the verdict.
            var altered = long(length, tail: 0)
            altered[60] ^= 0x01
            #expect(!key.isValidSignature(rawRepresentation: raw, digest: altered), "length \(length)")
        }
        // 66 bytes of ones: above n once truncated, reduced once.
        let ones = [UInt8](repeating: 0xFF, count: 66)
        let e = P521VerifyingKey.integer(ofDigest: ones)
        #expect(e < P521Words.n)
    }

    @Test("altered signatures, digests and keys fail in both")
    func alteredSignatures() throws {
        let privateKey = P521.Signing.PrivateKey()
        let key = try Self.key(privateKey.publicKey)
        let other = try Self.key(P521.Signing.PrivateKey().publicKey)
        let digest = SHA384.hash(data: Data("pay 5 CHIPs".utf8))
        let raw = Array(try privateKey.signature(for: digest).rawRepresentation)
        for bit in stride(from: 0, to: raw.count * 8, by: 7) {
            var altered = raw
            altered[bit / 8] ^= 1 << (bit % 8)
            let expected = (try? P521.Signing.ECDSASignature(rawRepresentation: altered)).map { privateKey.publicKey.isValidSignature($0, for: digest) } ?? false
            #expect(key.isValidSignature(rawRepresentation: altered, digest: Array(digest)) == expected)
            #expect(!expected)
        }
        var alteredDigest = Array(digest)
        alteredDigest[0] ^= 0x80
        #expect(!key.isValidSignature(rawRepresentation: raw, digest: alteredDigest))
        #expect(!other.isValidSignature(rawRepresentation: raw, digest: Array(digest)))
    }

    @Test("out-of-range and malformed signatures fail")
    func malformedSignatures() throws {
        let privateKey = P521.Signing.PrivateKey()
        let key = try Self.key(privateKey.publicKey)
        let digest = Array(SHA384.hash(data: Data("x".utf8)))
        let raw = Array(try privateKey.signature(for: SHA384.hash(data: Data("x".utf8))).rawRepresentation)
        let (r, s) = (Array(raw[0..<66]), Array(raw[66...]))
        let n = P521Words.n.bigEndian(length: 66), zero = [UInt8](repeating: 0, count: 66)
        let nPlusR = P521Words.adding(.n, P521Words(bigEndian: r)!).0.bigEndian(length: 66)
        for bad in [zero + s, r + zero, n + s, r + n, nPlusR + s, [UInt8](repeating: 0xFF, count: 132), Array(raw.dropLast()), raw + [0], []] {
            #expect(!key.isValidSignature(rawRepresentation: bad, digest: digest))
        }
    }

    @Test("keys off the curve or out of range are refused")
    func malformedKeys() throws {
        let raw = Array(P521.Signing.PrivateKey().publicKey.rawRepresentation)
        #expect(P521VerifyingKey(rawRepresentation: raw) != nil && P521VerifyingKey.isValidKey(rawRepresentation: raw))
        var offCurve = raw
        offCurve[131] ^= 1
        #expect(P521VerifyingKey(rawRepresentation: offCurve) == nil && !P521VerifyingKey.isValidKey(rawRepresentation: offCurve))
        #expect(P521VerifyingKey(rawRepresentation: [UInt8](repeating: 0xFF, count: 132)) == nil)
        #expect(P521VerifyingKey(rawRepresentation: [UInt8](repeating: 0, count: 132)) == nil)
        #expect(P521VerifyingKey(rawRepresentation: raw.dropLast()) == nil)
        // x with p added is the same point written out of range.
        let x = P521Words(bigEndian: raw[0..<66])!
        let (xPlusP, _) = P521Words.adding(x, .p)
        #expect(P521VerifyingKey(rawRepresentation: xPlusP.bigEndian(length: 66) + raw[66...]) == nil)
    }
}

extension P521Words {
    /// A fixed large multiplier for the scalar tests.
    func shifted() -> P521Words { P521Words.subtracting(self, P521Words(12345)) }
}

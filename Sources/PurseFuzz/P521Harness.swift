import Crypto
import Foundation
import PurseP521

/// PurseP521 against swift-crypto on the same inputs: the same answer for every public key and
/// every signature. The first byte picks the case:
///
/// - 0: the rest is a public key (x ‖ y); both accept it or both refuse it;
/// - 1: the rest is a signature and a message under a fixed key, hashed with SHA-384 and with
///   SHA-512 (longer than the order, so truncated); the answers agree;
/// - 2: a key made from the input signs the input's digest; the signature, with bits flipped
///   where the input says, gets the same answer from both (the unflipped one verifies).
enum P521Harness {
    static let fixed = try! P521.Signing.PrivateKey(rawRepresentation: [0] + [UInt8](repeating: 7, count: 65))

    static func run(_ bytes: [UInt8]) {
        guard let mode = bytes.first else { return }
        let rest = Array(bytes.dropFirst())
        switch mode % 3 {
        case 0:
            let ours = P521VerifyingKey.isValidKey(rawRepresentation: rest)
            let theirs = (try? P521.Signing.PublicKey(rawRepresentation: rest)) != nil
            require(ours == theirs || rest.count != 132, "PurseP521 \(ours ? "accepts" : "refuses") a key swift-crypto \(theirs ? "accepts" : "refuses")")
        case 1:
            let signature = Array(rest.prefix(132)), message = Data(rest.dropFirst(132))
            compare(fixed.publicKey, signature: signature, digest: SHA384.hash(data: message))
            compare(fixed.publicKey, signature: signature, digest: SHA512.hash(data: message))
        default:
            var scalar = [UInt8](repeating: 0, count: 66)
            for (index, byte) in rest.prefix(65).enumerated() { scalar[index + 1] = byte }
            guard let key = try? P521.Signing.PrivateKey(rawRepresentation: scalar) else { return }
            let digest = SHA384.hash(data: Data(rest))
            guard let signature = try? key.signature(for: digest) else { return }
            var raw = Array(signature.rawRepresentation)
            compare(key.publicKey, signature: raw, digest: digest, mustVerify: true)
            for byte in rest.dropFirst(65).prefix(8) {
                raw[Int(byte) % raw.count] ^= 1 << (byte % 8)
            }
            compare(key.publicKey, signature: raw, digest: digest)
        }
    }

    static func compare(_ publicKey: P521.Signing.PublicKey, signature: [UInt8], digest: some Digest, mustVerify: Bool = false) {
        guard let ours = P521VerifyingKey.cached(rawRepresentation: publicKey.rawRepresentation) else {
            return require(false, "PurseP521 refuses a key swift-crypto made")
        }
        let mine = ours.isValidSignature(rawRepresentation: signature, digest: digest)
        let theirs = signature.count == 132 && (try? P521.Signing.ECDSASignature(rawRepresentation: signature)).map {
            publicKey.isValidSignature($0, for: digest)
        } == true
        require(mine == theirs, "PurseP521 says \(mine), swift-crypto \(theirs)")
        if mustVerify { require(mine, "a fresh signature does not verify") }
    }
}

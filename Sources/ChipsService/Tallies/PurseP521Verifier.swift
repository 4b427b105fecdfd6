import ChipsProtocol
import Crypto
import PurseP521

extension ChipsSignatureVerifier {
    /// PurseP521's verification: the key swift-crypto parsed and validated, checked again on
    /// the curve by PurseP521, and the signature verified there.
    public static let purseP521 = ChipsSignatureVerifier { signature, digest, publicKey in
        guard let key = P521VerifyingKey.cached(rawRepresentation: publicKey.rawRepresentation) else { return false }
        return key.isValidSignature(rawRepresentation: signature, digest: digest)
    }
}

import ChipsProtocol
import Crypto
import PurseP521

extension ChipsSignatureVerifier {
    /// PurseP521's verification, with the key (checked on the curve there) from its cache.
    public static let purseP521 = ChipsSignatureVerifier { signature, digest, publicKey in
        guard let key = P521VerifyingKey.cached(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(rawRepresentation: signature, digest: digest)
    }
}

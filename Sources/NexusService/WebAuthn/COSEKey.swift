import PurseFormats
import Crypto
import Foundation

/// An ES256 COSE key (kty EC2, crv P-256, alg -7): the only algorithm Nexus accepts.
public struct COSEKey: Sendable, Equatable {
    public static let es256: Int64 = -7
    public let publicKey: P256.Signing.PublicKey

    public static func == (lhs: COSEKey, rhs: COSEKey) -> Bool {
        lhs.publicKey.rawRepresentation == rhs.publicKey.rawRepresentation
    }

    /// Parses a COSE_Key (RFC 9052 §7, RFC 9053 §7.1.1).
    public init(cose data: Data) throws {
        let map = try CBORDecoder.decode(data)
        guard map[int: 1]?.intValue == 2 else { throw WebAuthnError("credential key is not an EC2 key") }
        guard map[int: 3]?.intValue == Self.es256 else { throw WebAuthnError("credential key algorithm is not ES256") }
        guard map[int: -1]?.intValue == 1 else { throw WebAuthnError("credential key curve is not P-256") }
        guard let x = map[int: -2]?.bytesValue, let y = map[int: -3]?.bytesValue, x.count == 32, y.count == 32 else {
            throw WebAuthnError("credential key coordinates are invalid")
        }
        do {
            publicKey = try P256.Signing.PublicKey(x963Representation: Data([0x04]) + x + y)
        } catch {
            throw WebAuthnError("credential key is not a point on P-256")
        }
    }

    /// Verifies a DER-encoded ECDSA signature over `message` (SHA-256).
    public func isValidSignature(_ der: Data, for message: Data) -> Bool {
        guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: der) else { return false }
        return publicKey.isValidSignature(signature, for: message)
    }
}

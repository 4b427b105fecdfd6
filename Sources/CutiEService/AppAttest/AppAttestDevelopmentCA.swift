import Crypto
import Foundation
import SwiftASN1
import X509

/// A development stand-in for Apple's App Attest CA: a root and an intermediate that issue
/// credential certificates with the nonce extension, exactly as Apple's service does for a
/// Secure Enclave key. The SDK's software attester (Linux, the simulator) asks the sandbox for
/// one; a server trusts the root only in development (the sandbox) or when
/// `CUTIE_APP_ATTEST_DEV_ROOT` names it.
public struct AppAttestDevelopmentCA: Sendable {
    public let root: Certificate
    let intermediate: Certificate
    let intermediateKey: P256.Signing.PrivateKey

    /// A CA from two keys; the certificates are made for ten years from `now`.
    public init(rootKey: P256.Signing.PrivateKey, intermediateKey: P256.Signing.PrivateKey, now: Date) throws {
        let rootName = try DevelopmentPKI.name("Purse App Attestation Development Root CA")
        let validity = now.addingTimeInterval(-86_400)...now.addingTimeInterval(10 * 365 * 86_400)
        root = try DevelopmentPKI.certificate(key: rootKey.publicKey, subject: rootName, issuer: nil, selfKey: rootKey, authority: true, pathLength: 1,
                                              validity: validity)
        intermediate = try DevelopmentPKI.certificate(key: intermediateKey.publicKey, subject: try DevelopmentPKI.name("Purse App Attestation Development CA 1"),
                                                      issuer: (rootName, rootKey), authority: true, pathLength: 0, validity: validity)
        self.intermediateKey = intermediateKey
    }

    /// The credential certificate for `publicKey` with `nonce` in extension
    /// 1.2.840.113635.100.8.2, then the intermediate: the attestation statement's `x5c`.
    public func issue(publicKey: P256.Signing.PublicKey, nonce: Data, now: Date) throws -> [Data] {
        guard nonce.count == 32 else { throw AppAttestVerifier.Failure("the nonce must be 32 bytes (a SHA-256)") }
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { sequence in
            try sequence.serialize(explicitlyTaggedWithTagNumber: 1, tagClass: .contextSpecific) { tagged in
                try tagged.serialize(ASN1OctetString(contentBytes: ArraySlice(nonce)))
            }
        }
        let keyID = Data(SHA256.hash(data: publicKey.x963Representation))
        let credential = try DevelopmentPKI.certificate(
            key: publicKey, subject: try DevelopmentPKI.name(keyID.map { String(format: "%02x", $0) }.joined()), issuer: (intermediate.subject, intermediateKey),
            authority: false, validity: now.addingTimeInterval(-300)...now.addingTimeInterval(3 * 86_400),
            extra: [Certificate.Extension(oid: AppAttestVerifier.nonceOID, critical: false, value: serializer.serializedBytes[...])])
        return [try DevelopmentPKI.der(credential), try DevelopmentPKI.der(intermediate)]
    }

    /// The root in PEM, for `CUTIE_APP_ATTEST_DEV_ROOT` elsewhere and for independent verifiers.
    public var rootPEM: String {
        get throws { try root.serializeAsPEM().pemString }
    }
}

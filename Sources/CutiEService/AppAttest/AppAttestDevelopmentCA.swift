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
        let rootName = try DistinguishedName {
            CommonName("Purse App Attestation Development Root CA")
            OrganizationName("Purse")
        }
        let intermediateName = try DistinguishedName {
            CommonName("Purse App Attestation Development CA 1")
            OrganizationName("Purse")
        }
        let start = now.addingTimeInterval(-86_400)
        let end = now.addingTimeInterval(10 * 365 * 86_400)
        let root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(rootKey.publicKey),
            notValidBefore: start, notValidAfter: end, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 1))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(rootKey.publicKey))
            },
            issuerPrivateKey: .init(rootKey))
        let rootKeyID = try root.extensions.subjectKeyIdentifier?.keyIdentifier
        self.root = root
        intermediate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: start, notValidAfter: end, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(intermediateKey.publicKey))
                AuthorityKeyIdentifier(keyIdentifier: rootKeyID)
            },
            issuerPrivateKey: .init(rootKey))
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
        let subject = try DistinguishedName {
            CommonName(keyID.map { String(format: "%02x", $0) }.joined())
            OrganizationalUnitName("AAA Certification")
            OrganizationName("Purse")
        }
        let credential = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(publicKey),
            notValidBefore: now.addingTimeInterval(-300), notValidAfter: now.addingTimeInterval(3 * 86_400),
            issuer: intermediate.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                AuthorityKeyIdentifier(keyIdentifier: try intermediate.extensions.subjectKeyIdentifier?.keyIdentifier)
                Certificate.Extension(oid: AppAttestVerifier.nonceOID, critical: false, value: serializer.serializedBytes[...])
            },
            issuerPrivateKey: .init(intermediateKey))
        return [Data(try credential.serializeAsPEM().derBytes), Data(try intermediate.serializeAsPEM().derBytes)]
    }

    /// The root in PEM, for `CUTIE_APP_ATTEST_DEV_ROOT` elsewhere and for independent verifiers.
    public var rootPEM: String {
        get throws { try root.serializeAsPEM().pemString }
    }
}

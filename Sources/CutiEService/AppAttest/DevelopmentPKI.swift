import Crypto
import Foundation
import SwiftASN1
import X509

/// Certificates for the development stand-ins of Apple's CAs (App Attest's attestation CA and the
/// App Store's receipt signing): P-256, ECDSA-SHA256, with the extensions strict X.509 checkers
/// (OpenSSL's X509_STRICT, pyhanko) require — critical basic constraints and key usage, subject
/// and authority key identifiers.
enum DevelopmentPKI {
    /// `CN=common, O=Purse`.
    static func name(_ common: String) throws -> DistinguishedName {
        try DistinguishedName {
            CommonName(common)
            OrganizationName("Purse")
        }
    }

    /// A certificate for `key` named `subject`, signed by `issuerKey` (itself when `issuer` is
    /// nil: a root). Authorities may sign certificates (`pathLength` below them); others sign data.
    static func certificate(key: P256.Signing.PublicKey, subject: DistinguishedName, issuer: (name: DistinguishedName, key: P256.Signing.PrivateKey)?,
                            selfKey: P256.Signing.PrivateKey? = nil, authority: Bool, pathLength: Int? = nil, validity: ClosedRange<Date>,
                            extra: [Certificate.Extension] = []) throws -> Certificate {
        guard let signer = issuer?.key ?? selfKey else { throw AppAttestVerifier.Failure("a certificate needs an issuer key") }
        var extensions = Certificate.Extensions()
        try extensions.append(Critical(authority ? BasicConstraints.isCertificateAuthority(maxPathLength: pathLength) : .notCertificateAuthority)
            .makeCertificateExtension())
        try extensions.append(Critical(authority ? KeyUsage(keyCertSign: true, cRLSign: true) : KeyUsage(digitalSignature: true)).makeCertificateExtension())
        try extensions.append(SubjectKeyIdentifier(hash: .init(key)).makeCertificateExtension())
        if issuer != nil {
            try extensions.append(AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: .init(signer.publicKey)).keyIdentifier).makeCertificateExtension())
        }
        for item in extra { try extensions.append(item) }
        return try Certificate(version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key),
                               notValidBefore: validity.lowerBound, notValidAfter: validity.upperBound, issuer: issuer?.name ?? subject, subject: subject,
                               signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions, issuerPrivateKey: .init(signer))
    }

    /// DER bytes of a certificate.
    static func der(_ certificate: Certificate) throws -> Data {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return Data(serializer.serializedBytes)
    }
}

import Crypto
import Foundation
import PurseFormats
import SwiftASN1
import X509

/// Signs StoreKit transactions, renewal info and App Store Server Notifications the way the App
/// Store does, under a generated root — as Xcode's StoreKit testing certificate does — so the
/// sandbox and the CLI can grant subscriptions that go through the same verification as Apple's.
/// The leaf and intermediate carry Apple's OIDs, and `x5c` holds leaf, intermediate and root.
public struct StoreKitDevelopmentSigner: Sendable {
    public let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate
    let leafKey: P256.Signing.PrivateKey

    public init(rootKey: P256.Signing.PrivateKey, intermediateKey: P256.Signing.PrivateKey, leafKey: P256.Signing.PrivateKey, now: Date) throws {
        let rootName = try DistinguishedName {
            CommonName("Purse StoreKit Development Root CA")
            OrganizationName("Purse")
        }
        let intermediateName = try DistinguishedName {
            CommonName("Purse StoreKit Development Worldwide Relations CA")
            OrganizationName("Purse")
        }
        let leafName = try DistinguishedName {
            CommonName("Purse StoreKit Development Receipt Signing")
            OrganizationName("Purse")
        }
        let start = now.addingTimeInterval(-86_400)
        let end = now.addingTimeInterval(10 * 365 * 86_400)
        // Apple marks its certificates with these OIDs, each an extension whose value is NULL.
        let null: ArraySlice<UInt8> = [0x05, 0x00]
        let root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(rootKey.publicKey),
            notValidBefore: start, notValidAfter: end, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(rootKey.publicKey))
            },
            issuerPrivateKey: .init(rootKey))
        let rootKeyID = try root.extensions.subjectKeyIdentifier?.keyIdentifier
        let intermediate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: start, notValidAfter: end, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(intermediateKey.publicKey))
                AuthorityKeyIdentifier(keyIdentifier: rootKeyID)
                Certificate.Extension(oid: StoreKitVerifier.intermediateOID, critical: false, value: null)
            },
            issuerPrivateKey: .init(rootKey))
        let intermediateKeyID = try intermediate.extensions.subjectKeyIdentifier?.keyIdentifier
        leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(leafKey.publicKey),
            notValidBefore: start, notValidAfter: end, issuer: intermediateName, subject: leafName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                SubjectKeyIdentifier(hash: .init(leafKey.publicKey))
                AuthorityKeyIdentifier(keyIdentifier: intermediateKeyID)
                Certificate.Extension(oid: StoreKitVerifier.leafOID, critical: false, value: null)
            },
            issuerPrivateKey: .init(intermediateKey))
        self.root = root
        self.intermediate = intermediate
        self.leafKey = leafKey
    }

    /// A compact JWS (ES256, `x5c`) of `payload`.
    public func sign(_ payload: some Encodable) throws -> String {
        let x5c = try [leaf, intermediate, root].map { Data(try $0.serializeAsPEM().derBytes).base64EncodedString() }
        let header = try JSONSerialization.data(withJSONObject: ["alg": "ES256", "x5c": x5c], options: [.sortedKeys])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = try encoder.encode(payload)
        let input = Base64URL.encode(header) + "." + Base64URL.encode(body)
        let signature = try leafKey.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    public var rootPEM: String {
        get throws { try root.serializeAsPEM().pemString }
    }
}

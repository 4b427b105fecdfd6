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
        let rootName = try DevelopmentPKI.name("Purse StoreKit Development Root CA")
        let intermediateName = try DevelopmentPKI.name("Purse StoreKit Development Worldwide Relations CA")
        let validity = now.addingTimeInterval(-86_400)...now.addingTimeInterval(10 * 365 * 86_400)
        // Apple marks its certificates with these OIDs, each an extension whose value is NULL.
        let null: ArraySlice<UInt8> = [0x05, 0x00]
        root = try DevelopmentPKI.certificate(key: rootKey.publicKey, subject: rootName, issuer: nil, selfKey: rootKey, authority: true, validity: validity)
        intermediate = try DevelopmentPKI.certificate(key: intermediateKey.publicKey, subject: intermediateName, issuer: (rootName, rootKey),
                                                      authority: true, pathLength: 0, validity: validity,
                                                      extra: [Certificate.Extension(oid: StoreKitVerifier.intermediateOID, critical: false, value: null)])
        leaf = try DevelopmentPKI.certificate(key: leafKey.publicKey, subject: try DevelopmentPKI.name("Purse StoreKit Development Receipt Signing"),
                                              issuer: (intermediateName, intermediateKey), authority: false, validity: validity,
                                              extra: [Certificate.Extension(oid: StoreKitVerifier.leafOID, critical: false, value: null)])
        self.leafKey = leafKey
    }

    /// A compact JWS (ES256, `x5c`) of `payload`.
    public func sign(_ payload: some Encodable) throws -> String {
        let x5c = try [leaf, intermediate, root].map { try DevelopmentPKI.der($0).base64EncodedString() }
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

import Crypto
import Foundation
import PurseFormats
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Verifies what the App Store signs — StoreKit 2 transactions, renewal info and App Store Server
/// Notifications V2 — as Apple's App Store Server Library does: a compact JWS with `alg` ES256
/// and an `x5c` of three certificates (leaf, intermediate, root) whose chain leads to a trusted
/// root (Apple Root CA – G3) at the verification time, the leaf carrying Apple's receipt-signing
/// OID 1.2.840.113635.100.6.11.1 and the intermediate 1.2.840.113635.100.6.2.1, and the
/// signature made by the leaf's key.
public struct StoreKitVerifier: Sendable {
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Apple Root CA – G3 (P-384, 2014-04-30 to 2039-04-30), from
    /// https://www.apple.com/certificateauthority/AppleRootCA-G3.cer (SHA-256 fingerprint
    /// 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79).
    public static let appleRootG3DER = Data(base64Encoded: """
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBDZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcNMTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgxOTA2WjBnMRswGQYDVQQDDBJBcHBsZSBSb290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9yaXR5MRMwEQYDVQQKDApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtfTjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4iapIqZ3r6966/ayySrMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gAMGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZLuN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM6BgD56KyKA==
        """)!

    static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    public let roots: [Certificate]

    public init(roots: [Certificate]) { self.roots = roots }

    /// Apple's root only.
    public static func apple() throws -> StoreKitVerifier {
        StoreKitVerifier(roots: [try Certificate(derEncoded: Array(appleRootG3DER))])
    }

    struct Header: Decodable {
        var alg: String?
        var x5c: [String]?
    }

    /// The payload of a verified JWS (its JSON bytes).
    public func verify(_ jws: String, at date: Date) async throws(Failure) -> Data {
        guard jws.utf8.count <= 64 << 10 else { throw Failure("the JWS is too large") }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(parts[0])), let payload = Base64URL.decode(String(parts[1])),
              let signatureBytes = Base64URL.decode(String(parts[2])) else {
            throw Failure("not a compact JWS (header.payload.signature in base64url)")
        }
        guard let header = try? JSONDecoder().decode(Header.self, from: headerBytes) else { throw Failure("the JWS header is not JSON") }
        guard header.alg == "ES256" else { throw Failure("alg must be ES256 (got \(header.alg ?? "none"))") }
        guard let x5c = header.x5c, x5c.count == 3 else { throw Failure("x5c must hold the leaf, intermediate and root certificates") }
        let certificates: [Certificate]
        do {
            certificates = try x5c.map { text in
                guard let der = Data(base64Encoded: text) else { throw Failure("x5c holds a certificate that is not base64") }
                return try Certificate(derEncoded: Array(der))
            }
        } catch {
            throw Failure("x5c holds a certificate that does not parse")
        }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) { RFC5280Policy(fixedExpiryValidationTime: date) }
        guard case .validCertificate(let chain) = await verifier.validate(leaf: certificates[0], intermediates: CertificateStore([certificates[1]])) else {
            throw Failure("the x5c chain does not lead to a trusted App Store root at \(ISO8601DateFormatter().string(from: date))")
        }
        guard chain.count >= 3, chain[0].extensions[oid: Self.leafOID] != nil else { throw Failure("the leaf certificate is not an App Store receipt-signing certificate") }
        guard chain[1].extensions[oid: Self.intermediateOID] != nil else { throw Failure("the intermediate certificate is not Apple's App Store intermediate") }
        guard let key = P256.Signing.PublicKey(chain[0].publicKey) else { throw Failure("the leaf key is not P-256") }
        guard signatureBytes.count == 64, let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
              key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)) else {
            throw Failure("the JWS signature does not verify with the leaf certificate's key")
        }
        return payload
    }
}

/// A StoreKit 2 transaction as the App Store signs it (the fields Cuti-E reads).
public struct StoreKitTransaction: Codable, Sendable, Equatable {
    public var transactionId: String
    public var originalTransactionId: String
    public var bundleId: String
    public var productId: String
    public var purchaseDate: Int64
    public var expiresDate: Int64?
    public var revocationDate: Int64?
    public var type: String?
    public var environment: String
    public var signedDate: Int64
}

/// Renewal info (the grace period's end, for `DID_FAIL_TO_RENEW` / `GRACE_PERIOD`).
public struct StoreKitRenewalInfo: Codable, Sendable, Equatable {
    public var originalTransactionId: String
    public var productId: String?
    public var autoRenewStatus: Int?
    public var gracePeriodExpiresDate: Int64?
    public var environment: String
    public var signedDate: Int64
}

/// An App Store Server Notification V2's decoded `signedPayload`.
public struct AppStoreNotification: Codable, Sendable, Equatable {
    public struct Payload: Codable, Sendable, Equatable {
        public var bundleId: String?
        public var environment: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        public var status: Int?
    }

    public var notificationType: String
    public var subtype: String?
    public var notificationUUID: String
    public var data: Payload?
    public var version: String?
    public var signedDate: Int64
}

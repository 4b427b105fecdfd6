import Crypto
import Foundation
import PurseFormats
import SwiftASN1
@_spi(FixedExpiryValidationTime) import X509

/// Verifies Apple App Attest attestation objects as Apple's validation guide lays out: the
/// `apple-appattest` statement's certificate chain up to the App Attestation Root CA at a given
/// time, the nonce in the credential certificate, the key id, the app id's hash, the counter, the
/// environment and the credential id.
///
/// `clientDataHash` is what the app passed to `attestKey(_:clientDataHash:)`. Cuti-E's SDK passes
/// SHA-256 of `challenge|keyId` (UTF-8, the key id in base64), binding the attestation to both;
/// Apple's published sample passes its challenge text as is.
public struct AppAttestVerifier: Sendable {
    /// Which AAGUID the authenticator data must carry.
    public enum Environment: String, Sendable {
        case development, production

        /// `appattestdevelop`, or `appattest` and seven zero bytes.
        public var aaguid: Data {
            switch self {
            case .development: Data("appattestdevelop".utf8)
            case .production: Data("appattest".utf8) + Data(repeating: 0, count: 7)
            }
        }
    }

    /// A verified attestation: the key the app will sign assertions with.
    public struct Attested: Sendable, Equatable {
        public var publicKey: P256.Signing.PublicKey
        public var keyID: Data
        /// Apple's receipt, for later fraud-risk checks with Apple.
        public var receipt: Data
        public var counter: UInt32

        public static func == (lhs: Attested, rhs: Attested) -> Bool {
            lhs.publicKey.x963Representation == rhs.publicKey.x963Representation && lhs.keyID == rhs.keyID
                && lhs.receipt == rhs.receipt && lhs.counter == rhs.counter
        }
    }

    /// The check an attestation failed.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Apple App Attestation Root CA (P-384, valid 2020-03-18 to 2045-03-15), from
    /// https://www.apple.com/certificateauthority/Apple_App_Attestation_Root_CA.pem
    public static let appleRootPEM = """
        -----BEGIN CERTIFICATE-----
        MIICITCCAaegAwIBAgIQC/O+DvHN0uD7jG5yH2IXmDAKBggqhkjOPQQDAzBSMSYw
        JAYDVQQDDB1BcHBsZSBBcHAgQXR0ZXN0YXRpb24gUm9vdCBDQTETMBEGA1UECgwK
        QXBwbGUgSW5jLjETMBEGA1UECAwKQ2FsaWZvcm5pYTAeFw0yMDAzMTgxODMyNTNa
        Fw00NTAzMTUwMDAwMDBaMFIxJjAkBgNVBAMMHUFwcGxlIEFwcCBBdHRlc3RhdGlv
        biBSb290IENBMRMwEQYDVQQKDApBcHBsZSBJbmMuMRMwEQYDVQQIDApDYWxpZm9y
        bmlhMHYwEAYHKoZIzj0CAQYFK4EEACIDYgAERTHhmLW07ATaFQIEVwTtT4dyctdh
        NbJhFs/Ii2FdCgAHGbpphY3+d8qjuDngIN3WVhQUBHAoMeQ/cLiP1sOUtgjqK9au
        Yen1mMEvRq9Sk3Jm5X8U62H+xTD3FE9TgS41o0IwQDAPBgNVHRMBAf8EBTADAQH/
        MB0GA1UdDgQWBBSskRBTM72+aEH/pwyp5frq5eWKoTAOBgNVHQ8BAf8EBAMCAQYw
        CgYIKoZIzj0EAwMDaAAwZQIwQgFGnByvsiVbpTKwSga0kP0e8EeDS4+sQmTvb7vn
        53O5+FRXgeLhpJ06ysC5PrOyAjEAp5U4xDgEgllF7En3VcE3iexZZtKeYnpqtijV
        oyFraWVIyd/dganmrduC1bmTBGwD
        -----END CERTIFICATE-----
        """

    /// The credential certificate's extension holding the nonce.
    static let nonceOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]

    public let roots: [Certificate]

    public init(roots: [Certificate]) { self.roots = roots }

    /// Apple's root only.
    public static func apple() throws -> AppAttestVerifier {
        AppAttestVerifier(roots: [try Certificate(pemEncoded: appleRootPEM)])
    }

    /// The same verifier trusting the certificates of a PEM document too.
    public func trusting(pem: String) throws -> AppAttestVerifier {
        AppAttestVerifier(roots: roots + (try PEMDocument.parseMultiple(pemString: pem).map { try Certificate(pemDocument: $0) }))
    }

    /// Verifies an attestation object (CBOR) for `appID` (team id + "." + bundle id).
    public func verify(attestation: Data, appID: String, clientDataHash: Data, keyID: Data, environment: Environment, at date: Date) async throws(Failure) -> Attested {
        // 1. The statement and its certificates.
        guard attestation.count <= 16 << 10, let object = try? CBORDecoder.decode(attestation) else { throw Failure("the attestation is not CBOR") }
        guard object[text: "fmt"]?.textValue == "apple-appattest" else { throw Failure("fmt must be apple-appattest") }
        guard let statement = object[text: "attStmt"], case .array(let x5c)? = statement[text: "x5c"], x5c.count >= 2,
              let authBytes = object[text: "authData"]?.bytesValue, let receipt = statement[text: "receipt"]?.bytesValue else {
            throw Failure("attStmt must hold x5c (credential and intermediate certificates) and a receipt, beside authData")
        }
        let certificates: [Certificate]
        do {
            certificates = try x5c.map { element in
                guard let der = element.bytesValue else { throw Failure("x5c must hold DER certificates") }
                return try Certificate(derEncoded: Array(der))
            }
        } catch {
            throw Failure("x5c holds a certificate that does not parse")
        }
        let credential = certificates[0]
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) { RFC5280Policy(fixedExpiryValidationTime: date) }
        guard case .validCertificate = await verifier.validate(leaf: credential, intermediates: CertificateStore(certificates.dropFirst())) else {
            throw Failure("the certificate chain does not lead to the App Attestation root at \(ISO8601DateFormatter().string(from: date))")
        }
        // 2–4. nonce = SHA-256(authData ‖ clientDataHash) is the credential certificate's extension.
        let nonce = Data(SHA256.hash(data: authBytes + clientDataHash))
        guard let stated = try? Self.nonce(in: credential), ConstantTime.equal(Array(stated), Array(nonce)) else {
            throw Failure("the nonce does not match the challenge (another challenge, or altered authenticator data)")
        }
        // 5. The key id is the SHA-256 of the credential's public key.
        guard let publicKey = P256.Signing.PublicKey(credential.publicKey) else { throw Failure("the credential key is not P-256") }
        let computedKeyID = Data(SHA256.hash(data: publicKey.x963Representation))
        guard computedKeyID == keyID else { throw Failure("the key id is not the SHA-256 of the attested public key") }
        // 6–9. The authenticator data.
        let authData: AuthenticatorData
        do { authData = try AuthenticatorData(authBytes) } catch { throw Failure("authData: \(error)") }
        guard authData.rpIDHash == Data(SHA256.hash(data: Data(appID.utf8))) else { throw Failure("the RP id hash is not SHA-256 of the app id \(appID)") }
        guard authData.signCount == 0 else { throw Failure("the counter of a new key must be 0") }
        guard let attested = authData.attestedCredential else { throw Failure("authData holds no attested credential") }
        guard attested.aaguid == environment.aaguid else { throw Failure("the AAGUID is not the \(environment.rawValue) environment's") }
        guard attested.credentialID == keyID else { throw Failure("the credential id is not the key id") }
        return Attested(publicKey: publicKey, keyID: keyID, receipt: receipt, counter: 0)
    }

    /// Verifies an assertion (CBOR `{signature, authenticatorData}`) the attested key made over
    /// `clientData`, as Apple's guide lays out: nonce = SHA-256(authenticatorData ‖
    /// SHA-256(clientData)); the signature (ECDSA P-256, SHA-256, DER) is over the nonce; the RP id
    /// hash is the app id's; the counter is above the last one accepted. Returns the new counter.
    public static func verifyAssertion(_ assertion: Data, clientData: Data, publicKey: P256.Signing.PublicKey, appID: String,
                                       after previousCounter: Int64) throws(Failure) -> Int64 {
        guard assertion.count <= 4096, let object = try? CBORDecoder.decode(assertion) else { throw Failure("the assertion is not CBOR") }
        guard let signatureBytes = object[text: "signature"]?.bytesValue, let authBytes = object[text: "authenticatorData"]?.bytesValue else {
            throw Failure("the assertion must hold signature and authenticatorData")
        }
        let authData: AuthenticatorData
        do { authData = try AuthenticatorData(authBytes) } catch { throw Failure("authenticatorData: \(error)") }
        let nonce = Data(SHA256.hash(data: authBytes + Data(SHA256.hash(data: clientData))))
        guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes),
              publicKey.isValidSignature(signature, for: nonce) else {
            throw Failure("the assertion's signature does not verify with the attested key over this request")
        }
        guard authData.rpIDHash == Data(SHA256.hash(data: Data(appID.utf8))) else { throw Failure("the RP id hash is not SHA-256 of the app id \(appID)") }
        guard Int64(authData.signCount) > previousCounter else {
            throw Failure("the assertion's counter \(authData.signCount) is not above the last one accepted (\(previousCounter)): a replay")
        }
        return Int64(authData.signCount)
    }

    /// The client data Cuti-E's SDK attests: SHA-256 of the UTF-8 of the challenge, `|`, and the
    /// key id as `DCAppAttestService` gives it (base64).
    public static func sdkClientData(challenge: String, keyID: String) -> Data {
        Data(SHA256.hash(data: Data("\(challenge)|\(keyID)".utf8)))
    }

    /// The octet string of the nonce extension: `SEQUENCE { [1] EXPLICIT OCTET STRING }`.
    static func nonce(in certificate: Certificate) throws -> Data {
        guard let ext = certificate.extensions[oid: nonceOID] else { throw Failure("no nonce extension") }
        let root = try DER.parse(ext.value)
        let octets = try DER.sequence(root, identifier: .sequence) { nodes in
            try DER.explicitlyTagged(&nodes, tagNumber: 1, tagClass: .contextSpecific) { node in try ASN1OctetString(derEncoded: node) }
        }
        return Data(octets.bytes)
    }
}

import PurseFormats
import Crypto
import Foundation

/// The WebAuthn wire types Nexus accepts (standard JSON encodings, base64url binary fields).
/// Unknown members (`clientExtensionResults`, `authenticatorAttachment` …) are ignored.
public struct AuthenticationResponseJSON: Codable, Sendable {
    public struct Response: Codable, Sendable {
        public var clientDataJSON: String
        public var authenticatorData: String
        public var signature: String
        public var userHandle: String?
    }
    public var id: String
    public var rawId: String
    public var response: Response
    public var type: String
}

public struct RegistrationResponseJSON: Codable, Sendable {
    public struct Response: Codable, Sendable {
        public var clientDataJSON: String
        public var attestationObject: String
        public var transports: [String]?
    }
    public var id: String
    public var rawId: String
    public var response: Response
    public var type: String
}

/// `CollectedClientData` (WebAuthn §5.8.1).
public struct CollectedClientData: Decodable, Sendable {
    public var type: String
    public var challenge: String
    public var origin: String
    public var crossOrigin: Bool?
}

/// A credential the registration ceremony produced.
public struct VerifiedRegistration: Sendable {
    public var credentialID: Data
    public var publicKeyCOSE: Data
    public var signCount: UInt32
    public var aaguid: Data
    public var format: String
    public var userVerified: Bool
    public var backupEligible: Bool
}

/// The relying party's checks (WebAuthn Level 3 §7.1 and §7.2), free of storage: the caller
/// finds the challenge and the credential, this type checks the cryptography and the fields.
public struct RelyingParty: Sendable {
    public var id: String
    public var name: String
    public var allowedOrigins: Set<String>

    public init(id: String, name: String, allowedOrigins: Set<String>) {
        self.id = id
        self.name = name
        self.allowedOrigins = allowedOrigins
    }

    public var rpIDHash: Data { Data(SHA256.hash(data: Data(id.utf8))) }

    /// Decodes base64url `clientDataJSON` and checks type and origin.
    /// - Returns: The parsed client data and its raw bytes (whose hash the signature covers).
    public func clientData(_ encoded: String, expectedType: String) throws -> (CollectedClientData, Data) {
        guard let raw = Base64URL.decode(encoded) else { throw WebAuthnError("clientDataJSON is not valid base64url") }
        let clientData: CollectedClientData
        do {
            clientData = try JSONDecoder().decode(CollectedClientData.self, from: raw)
        } catch {
            throw WebAuthnError("clientDataJSON is not valid JSON")
        }
        guard clientData.type == expectedType else { throw WebAuthnError("Unexpected ceremony type \(clientData.type)") }
        guard allowedOrigins.contains(clientData.origin) else { throw WebAuthnError("Origin not allowed") }
        return (clientData, raw)
    }

    /// Verifies an assertion's authenticator data and signature against a stored credential.
    /// - Parameters:
    ///   - storedSignCount: The counter last seen for the credential.
    ///   - requireUserVerification: When the options said `userVerification: "required"`.
    /// - Returns: The authenticator's new sign count.
    public func verifyAssertion(
        _ response: AuthenticationResponseJSON, clientDataRaw: Data, credentialKey: COSEKey,
        storedSignCount: UInt32, requireUserVerification: Bool
    ) throws -> UInt32 {
        guard let authData = Base64URL.decode(response.response.authenticatorData) else {
            throw WebAuthnError("authenticatorData is not valid base64url")
        }
        guard let signature = Base64URL.decode(response.response.signature) else {
            throw WebAuthnError("signature is not valid base64url")
        }
        let parsed = try Self.authenticatorData(authData)
        guard parsed.rpIDHash == rpIDHash else { throw WebAuthnError("RP ID mismatch") }
        guard parsed.flags.contains(.userPresent) else { throw WebAuthnError("User presence flag not set") }
        if requireUserVerification, !parsed.flags.contains(.userVerified) {
            throw WebAuthnError("User verification required")
        }
        let signed = authData + Data(SHA256.hash(data: clientDataRaw))
        guard credentialKey.isValidSignature(signature, for: signed) else {
            throw WebAuthnError("Signature verification failed")
        }
        if parsed.signCount != 0 || storedSignCount != 0, parsed.signCount <= storedSignCount {
            throw WebAuthnError("Sign count did not increase (possible cloned authenticator)")
        }
        return parsed.signCount
    }

    /// Verifies an attestation object (formats `none` and `packed` self-attestation).
    public func verifyRegistration(
        _ response: RegistrationResponseJSON, clientDataRaw: Data, requireUserVerification: Bool
    ) throws -> VerifiedRegistration {
        guard let attestation = Base64URL.decode(response.response.attestationObject) else {
            throw WebAuthnError("attestationObject is not valid base64url")
        }
        let object: CBOR
        do {
            object = try CBORDecoder.decode(attestation)
        } catch {
            throw WebAuthnError("attestationObject is not valid CBOR")
        }
        guard let format = object[text: "fmt"]?.textValue, let authBytes = object[text: "authData"]?.bytesValue,
              case .map(let statement)? = object[text: "attStmt"] else {
            throw WebAuthnError("attestationObject lacks fmt, attStmt or authData")
        }
        let authData = try Self.authenticatorData(authBytes)
        guard authData.rpIDHash == rpIDHash else { throw WebAuthnError("RP ID mismatch") }
        guard authData.flags.contains(.userPresent) else { throw WebAuthnError("User presence flag not set") }
        if requireUserVerification, !authData.flags.contains(.userVerified) {
            throw WebAuthnError("User verification required")
        }
        guard let credential = authData.attestedCredential else { throw WebAuthnError("No attested credential data") }
        guard let rawID = Base64URL.decode(response.rawId), rawID == credential.credentialID else {
            throw WebAuthnError("Credential id does not match the attested credential")
        }
        let key = try COSEKey(cose: credential.publicKeyCOSE)
        let clientDataHash = Data(SHA256.hash(data: clientDataRaw))
        switch format {
        case "none":
            guard statement.isEmpty else { throw WebAuthnError("attStmt must be empty for format none") }
        case "packed":
            let map = CBOR.map(statement)
            guard map[text: "alg"]?.intValue == COSEKey.es256, let signature = map[text: "sig"]?.bytesValue else {
                throw WebAuthnError("packed attestation must be ES256 with a signature")
            }
            guard map[text: "x5c"] == nil else {
                throw WebAuthnError("Only self attestation is accepted for the packed format")
            }
            guard key.isValidSignature(signature, for: authBytes + clientDataHash) else {
                throw WebAuthnError("Attestation signature verification failed")
            }
        default:
            throw WebAuthnError("Unsupported attestation format \(format)")
        }
        return VerifiedRegistration(
            credentialID: credential.credentialID, publicKeyCOSE: credential.publicKeyCOSE, signCount: authData.signCount,
            aaguid: credential.aaguid, format: format, userVerified: authData.flags.contains(.userVerified),
            backupEligible: authData.flags.contains(.backupEligible)
        )
    }
}

extension RelyingParty {
    /// Parsed authenticator data, its faults in WebAuthn's words.
    static func authenticatorData(_ data: Data) throws -> AuthenticatorData {
        do {
            return try AuthenticatorData(data)
        } catch let error as AuthenticatorDataError {
            throw WebAuthnError(error.description)
        }
    }
}

/// A WebAuthn verification failure, with the message the client sees.
public struct WebAuthnError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

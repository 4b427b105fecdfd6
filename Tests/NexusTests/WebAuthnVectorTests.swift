import PurseFormats
import Foundation
import NexusPay
import NexusService
import PurseKit
import Testing

/// Vectors produced or checked by independent implementations (PyPI's soft-fido2 and
/// py_webauthn; see scripts/oracles/nexus_webauthn.py), replayed against our relying party.
@Suite("Nexus: WebAuthn vectors")
struct WebAuthnVectorTests {
    struct Vectors: Codable {
        struct Ceremony<Response: Codable>: Codable {
            var challenge: String
            var response: Response
            var expectedSignCount: UInt32?
        }
        var rpId: String
        var origin: String
        var producedBy: String?
        var checkedBy: String?
        var registration: Ceremony<RegistrationResponseJSON>
        var authentication: Ceremony<AuthenticationResponseJSON>
    }

    static func fixture(_ name: String) throws -> Vectors {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"))
        return try JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }

    /// Registration then assertion, exactly as the service checks them.
    @discardableResult
    static func replay(_ vectors: Vectors) throws -> (VerifiedRegistration, UInt32) {
        let rp = RelyingParty(id: vectors.rpId, name: "Nexus Data", allowedOrigins: [vectors.origin])
        let (createData, createRaw) = try rp.clientData(vectors.registration.response.response.clientDataJSON, expectedType: "webauthn.create")
        #expect(createData.challenge == vectors.registration.challenge)
        let registration = try rp.verifyRegistration(vectors.registration.response, clientDataRaw: createRaw, requireUserVerification: true)
        let (getData, getRaw) = try rp.clientData(vectors.authentication.response.response.clientDataJSON, expectedType: "webauthn.get")
        #expect(getData.challenge == vectors.authentication.challenge)
        let count = try rp.verifyAssertion(
            vectors.authentication.response, clientDataRaw: getRaw, credentialKey: try COSEKey(cose: registration.publicKeyCOSE),
            storedSignCount: registration.signCount, requireUserVerification: true
        )
        return (registration, count)
    }

    @Test func softFido2CredentialsVerifyInOurRelyingParty() throws {
        let vectors = try Self.fixture("softfido2_vectors")
        let (registration, count) = try Self.replay(vectors)
        #expect(registration.format == "packed")
        #expect(count == vectors.authentication.expectedSignCount)
    }

    @Test func tamperedSoftFido2VectorsAreRefused() throws {
        var vectors = try Self.fixture("softfido2_vectors")
        var signature = try #require(Base64URL.decode(vectors.authentication.response.response.signature))
        signature[signature.count - 1] ^= 1
        vectors.authentication.response.response.signature = Base64URL.encode(signature)
        #expect(throws: WebAuthnError("Signature verification failed")) { try Self.replay(vectors) }

        var attestation = try Self.fixture("softfido2_vectors")
        var object = try #require(Base64URL.decode(attestation.registration.response.response.attestationObject))
        object[object.count - 1] ^= 1  // inside the packed self-attestation signature
        attestation.registration.response.response.attestationObject = Base64URL.encode(object)
        #expect(throws: WebAuthnError("Attestation signature verification failed")) { try Self.replay(attestation) }
    }

    @Test func ourClientVectorsCheckedByPyWebAuthnStillVerify() throws {
        let vectors = try Self.fixture("client_vectors")
        #expect(vectors.checkedBy?.hasPrefix("py_webauthn") == true)
        let (registration, count) = try Self.replay(vectors)
        #expect(registration.format == "none")
        #expect(count == 1)
    }

    /// Makes fresh vectors with our client core and checks them with our relying party.
    /// With `NEXUS_VECTORS_OUT` set it also writes them there for py_webauthn (CI does this).
    @Test func ourClientMakesVerifiableVectors() async throws {
        let origin = "http://localhost:8080"
        let authenticator = DeviceAuthenticator(store: InMemorySecureStore(), origin: origin)
        let registrationChallenge = Base64URL.encode(Data((0..<32).map { UInt8($0) }))
        let authenticationChallenge = Base64URL.encode(Data((32..<64).map { UInt8($0) }))
        let creation = try JSONDecoder().decode(CreationOptions.self, from: Data("""
            {"rp": {"id": "localhost", "name": "Nexus Data"}, "user": {"id": "dXNyX3ZlY3Rvcg", "name": "v@example.com", "displayName": "V"},
             "challenge": "\(registrationChallenge)", "timeout": 60000, "attestation": "none",
             "authenticatorSelection": {"userVerification": "required"}, "excludeCredentials": []}
            """.utf8))
        let registration = try await authenticator.makeRegistration(for: creation, userVerified: true)
        let request = AuthenticationOptions(challenge: authenticationChallenge, rpId: "localhost",
                                            allowCredentials: [.init(id: registration.id, type: "public-key", transports: ["internal"])],
                                            userVerification: "required", timeout: 60000)
        let assertion = try await authenticator.makeAssertion(for: request, userVerified: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        func reencode<T: Decodable>(_ value: some Encodable, as: T.Type) throws -> T { try JSONDecoder().decode(T.self, from: encoder.encode(value)) }
        let vectors = Vectors(
            rpId: "localhost", origin: origin, producedBy: "NexusPay.DeviceAuthenticator", checkedBy: nil,
            registration: .init(challenge: registrationChallenge, response: try reencode(registration, as: RegistrationResponseJSON.self), expectedSignCount: nil),
            authentication: .init(challenge: authenticationChallenge, response: try reencode(assertion, as: AuthenticationResponseJSON.self), expectedSignCount: 1)
        )
        let (verified, count) = try Self.replay(vectors)
        #expect(verified.format == "none" && count == 1)
        if let out = ProcessInfo.processInfo.environment["NEXUS_VECTORS_OUT"] {
            try encoder.encode(vectors).write(to: URL(fileURLWithPath: out))
        }
    }
}

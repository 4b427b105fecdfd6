import Crypto
import CutiEVocabulary
import Foundation
import Hummingbird
import Logging
import NIOCore
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// App Attest: a device asks for a challenge, has its Secure Enclave key attested by Apple over
/// it, and sends the attestation; from then on its requests may carry assertions made with that
/// key (`X-App-Assertion`, checked by ``DeviceAuthenticator``), and must when the app requires it.
///
/// The attested client data is SHA-256 of `challenge|keyId` (UTF-8, the key id in base64 as the
/// SDK sends it), as the Cuti-E SDK makes it, so an attestation answers one challenge for one key.
struct AppAttestRoutes: Sendable {
    let routes: SDKRoutes
    var environment: ServerEnvironment { routes.environment }
    var configuration: CutiEConfiguration { routes.configuration }

    struct Challenge: Codable {
        var challenge: String
        var expires_at: Int64
        var expires_in: Int
    }

    struct Attest: Decodable {
        var key_id: String
        var attestation: String
        /// The challenge answered; the device's newest open one when absent.
        var challenge: String?
    }

    /// The Cuti-E SDK's `AttestResponse`, with the key and its environment.
    struct Attested: Codable {
        var success: Bool
        var attestation_id: String
        var attested: Bool
        var key_id: String
        var environment: String
    }

    struct Asserted: Codable {
        var success: Bool
        var counter: Int64
    }

    /// The SDK's `AttestationStatus`.
    struct Status: Codable {
        struct Info: Codable {
            var key_id: String
            var environment: String
            var sign_count: Int64
            var created_at: Int64
            var last_assertion_at: Int64?
        }
        var attested: Bool
        var attestation: Info?
    }

    /// An assertion in the body, as the SDK's `submitAssertion` sends it: made over `client_data`.
    struct Assert: Decodable {
        var key_id: String
        var assertion: String
        var client_data: String
    }

    var store: AttestStore { AttestStore() }

    func mount(on v1: RouterGroup<PurseRequestContext>) {
        v1.post("device/attest/challenge", use: routes.signed(assertions: .exempt) { _, _, caller in
            let challenge = Base64URL.encode(RandomID.bytes(32))
            let now = environment.now().epochMillis
            let expires = now + Int64(configuration.attestChallengeSeconds) * 1000
            try await environment.database.transaction { db in
                try await store.openChallenge(challenge, app: caller.appID, device: caller.deviceID, now: now, expires: expires, in: db)
            }
            return try Response.json(Challenge(challenge: challenge, expires_at: expires, expires_in: configuration.attestChallengeSeconds))
        })
        v1.post("device/attest", use: routes.signed(assertions: .exempt) { _, body, caller in
            try await attest(try JSONBody.decode(Attest.self, from: body), caller: caller)
        })
        // One assertion checked: in X-App-Assertion over the signed request, or in the body over
        // its `client_data` (the SDK's `submitAssertion`).
        v1.post("device/attest/assert", use: routes.signed(assertions: .exempt) { request, body, caller in
            if request.headers[.appAssertion] != nil, let counter = caller.assertedCounter {
                return try Response.json(Asserted(success: true, counter: counter))
            }
            guard body.readableBytes > 0 else {
                throw APIError.badRequest("An assertion is required here: X-App-Assertion on a signed request, or {key_id, assertion, client_data}")
            }
            return try await assert(try JSONBody.decode(Assert.self, from: body), caller: caller)
        })
        v1.get("device/attest/status", use: routes.signed(assertions: .exempt) { _, _, caller in
            let key = try await environment.database.read { db in try await store.attestedKey(app: caller.appID, device: caller.deviceID, in: db) }
            let info = key.map { key in
                Status.Info(key_id: key.keyID, environment: key.environment, sign_count: key.signCount, created_at: key.attestedAt,
                            last_assertion_at: key.lastAssertionAt)
            }
            return try Response.json(Status(attested: info != nil, attestation: info))
        })
        // The device forgets its key (the SDK's `revokeAttestation`); an app that requires App
        // Attest then takes it only once it attests again. Only the key itself may do that: the
        // request carries an assertion by it (403 otherwise, never 401, which would make an SDK
        // drop its token).
        v1.delete("device/attest", use: routes.signed(assertions: .exempt) { _, _, caller in
            try await environment.database.transaction { db in
                if caller.assertedCounter == nil, try await store.attestedKey(app: caller.appID, device: caller.deviceID, in: db) != nil {
                    throw APIError(.forbidden, "App Attest: an attested key is forgotten only by a request asserted with it (X-App-Assertion)",
                                   code: CutiEErrorCode.appAttestRequired)
                }
                try await store.forgetKey(app: caller.appID, device: caller.deviceID, in: db)
            }
            return try Response.json(SDKRoutes.Success(success: true))
        })
    }

    static func keyID(_ text: String) throws -> Data {
        guard text.utf8.count <= 64, let bytes = Data(base64Encoded: text) ?? Base64URL.decode(text), bytes.count == 32 else {
            throw APIError.badRequest("key_id must be the base64 of the key's 32-byte identifier (SHA-256 of its public key)")
        }
        return bytes
    }

    func attest(_ input: Attest, caller: DeviceCaller) async throws -> Response {
        let keyID = try Self.keyID(input.key_id)
        guard input.attestation.utf8.count <= 24 << 10, let attestation = Data(base64Encoded: input.attestation) else {
            throw APIError.badRequest("attestation must be base64 (the attestation object from attestKey)")
        }
        let now = environment.now()
        let (app, challenges) = try await environment.database.read { db in
            guard let app = try await CutiEApp.load(caller.appID, in: db) else { throw DeviceAuthenticator.unauthorized }
            return (app, try await store.openChallenges(app: caller.appID, device: caller.deviceID, now: now.epochMillis, in: db))
        }
        guard let appID = app.attestAppID else {
            throw APIError.badRequest("App Attest needs the app's Apple team id: set team_id in the app's settings")
        }
        let open = input.challenge.map { given in challenges.filter { $0 == given } } ?? Array(challenges.prefix(1))
        guard let challenge = open.first else {
            throw APIError.badRequest("App Attest: no open challenge for this device (unknown, used or expired): ask POST /v1/device/attest/challenge")
        }
        let environmentName = app.attestEnvironment
        let verified: AppAttestVerifier.Attested
        do {
            verified = try await AppAttestVerifier(roots: configuration.appAttestRoots).verify(
                attestation: attestation, appID: appID, clientDataHash: AppAttestVerifier.sdkClientData(challenge: challenge, keyID: input.key_id),
                keyID: keyID, environment: environmentName == "development" ? .development : .production, at: now)
        } catch {
            environment.logger.notice("App Attest attestation refused", metadata: ["app_id": "\(caller.appID)", "device_id": "\(caller.deviceID)", "check": "\(error)"])
            throw APIError.badRequest("App Attest: \(error)")
        }
        let keyText = keyID.base64EncodedString()
        try await environment.database.transaction { db in
            guard try await store.spendChallenge(challenge, app: caller.appID, device: caller.deviceID, now: now.epochMillis, in: db) else {
                throw APIError.conflict("App Attest: the challenge was already used")
            }
            if let owner = try await store.owner(ofKey: keyText, in: db), owner.app != caller.appID || owner.device != caller.deviceID {
                throw APIError.conflict("App Attest: this key is attested for another device")
            }
            try await store.storeKey(app: caller.appID, device: caller.deviceID, keyID: keyText,
                                     publicKey: verified.publicKey.x963Representation.base64EncodedString(), environment: environmentName,
                                     receiptBytes: verified.receipt.count, now: now.epochMillis, in: db)
        }
        return try Response.json(Attested(success: true, attestation_id: "att_" + Hex.encode(keyID.prefix(8)), attested: true, key_id: keyText,
                                          environment: environmentName))
    }

    /// Checks an assertion sent in the body over its `client_data` (UTF-8) with the device's
    /// attested key, and stores its counter; a replayed one is refused. A refusal is a 400: the
    /// request's credentials were good (a 401 would make the SDK drop its token).
    func assert(_ input: Assert, caller: DeviceCaller) async throws -> Response {
        let keyID = try Self.keyID(input.key_id)
        guard input.assertion.utf8.count <= 4096, let assertion = Data(base64Encoded: input.assertion) else {
            throw APIError.badRequest("assertion must be base64 CBOR (from generateAssertion)")
        }
        guard input.client_data.utf8.count <= 8192 else { throw APIError.badRequest("client_data is too long: at most 8192 bytes") }
        let (stored, app) = try await environment.database.read { db in
            (try await store.attestedKey(app: caller.appID, device: caller.deviceID, in: db), try await CutiEApp.load(caller.appID, in: db))
        }
        guard let stored, stored.keyID == keyID.base64EncodedString(),
              let key = routes.auth.attestedKeys.key(stored.publicKey), let appID = app?.attestAppID else {
            throw APIError.badRequest("App Attest: this device has no attested key with that id")
        }
        var asserted = caller
        do {
            asserted.assertedCounter = try AppAttestVerifier.verifyAssertion(assertion, clientData: Data(input.client_data.utf8), publicKey: key, appID: appID,
                                                                            after: stored.signCount)
        } catch {
            environment.logger.notice("App Attest assertion refused", metadata: ["app_id": "\(caller.appID)", "device_id": "\(caller.deviceID)", "check": "\(error)"])
            throw APIError.badRequest("App Attest: \(error)")
        }
        do {
            try await routes.auth.commitAssertion(asserted)
        } catch let error as APIError {
            throw APIError.badRequest(error.message ?? "App Attest: the assertion was refused")
        }
        return try Response.json(Asserted(success: true, counter: asserted.assertedCounter ?? 0))
    }
}

/// The development stand-in for Apple's attestation service (development only): a software
/// attester sends its public key and the nonce it computed, and gets the credential certificate
/// and the intermediate, issued by ``AppAttestDevelopmentCA``.
struct AppAttestSandbox: Sendable {
    let ca: AppAttestDevelopmentCA
    let environment: ServerEnvironment

    struct Issue: Decodable {
        /// X9.63 (uncompressed) P-256 public key, base64.
        var public_key: String
        /// SHA-256(authData ‖ clientDataHash), base64.
        var nonce: String
    }

    struct Issued: Codable {
        var x5c: [String]
    }

    struct AppInfo: Codable {
        var app_identifier: String
        var environment: String
    }

    func mount(on router: Router<PurseRequestContext>) {
        router.post("sandbox/appattest/certificate") { request, context in
            var request = request
            let input = try await request.decodeJSON(as: Issue.self, context: context)
            guard let keyBytes = Data(base64Encoded: input.public_key), let key = try? P256.Signing.PublicKey(x963Representation: keyBytes) else {
                throw APIError.badRequest("public_key must be a base64 X9.63 P-256 public key")
            }
            guard let nonce = Data(base64Encoded: input.nonce), nonce.count == 32 else { throw APIError.badRequest("nonce must be 32 bytes in base64") }
            let chain = try ca.issue(publicKey: key, nonce: nonce, now: environment.now())
            return try Response.json(Issued(x5c: chain.map { $0.base64EncodedString() }))
        }
        // What a device's entitlements would say: the app identifier and environment to attest for.
        router.get("sandbox/appattest/apps/{id}") { _, context in
            let id = try context.parameters.require("id")
            guard let app = try await environment.database.read({ db in try await CutiEApp.load(id, in: db) }), let identifier = app.attestAppID else {
                throw APIError.notFound("No app \(id) with a team id")
            }
            return try Response.json(AppInfo(app_identifier: identifier, environment: app.attestEnvironment))
        }
        router.get("sandbox/appattest/root") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "application/x-pem-file"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: try ca.rootPEM)))
        }
    }
}

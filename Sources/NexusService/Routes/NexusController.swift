import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NexusVocabulary
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// The Nexus routes' shared state.
struct NexusController: Sendable {
    let configuration: NexusConfiguration
    let environment: ServerEnvironment
    let store = NexusStore()
    let catalogue: ProductCatalogue
    let delivery: AirtimeDelivery

    init(configuration: NexusConfiguration, environment: ServerEnvironment, supplier: any AirtimeSupplier) {
        self.configuration = configuration
        self.environment = environment
        self.catalogue = ProductCatalogue(store: store, database: environment.database)
        self.delivery = AirtimeDelivery(supplier: supplier, store: store, environment: environment, configuration: configuration)
    }

    static let verificationPurpose = "nexus.verification"
    var rp: RelyingParty { configuration.relyingParty }

    func now() -> Date { environment.now() }

    /// A credential's name as stored: at most 64 characters and 256 bytes of UTF-8 (a character
    /// may carry any number of combining marks; bytes bound what is stored).
    static func credentialName(_ name: String) -> String {
        var kept = ""
        for character in name.prefix(64) {
            guard kept.utf8.count + character.utf8.count <= 256 else { break }
            kept.append(character)
        }
        return kept
    }

    /// 32 random bytes, base64url.
    static func newChallenge() -> String { Base64URL.encode(RandomID.bytes(32)) }
}

// MARK: - Biometric (WebAuthn) routes

extension NexusController {
    func mountBiometric(on router: Router<PurseRequestContext>) {
        let group = router.group("biometric").add(middleware: NexusErrorShape()).add(middleware: RequireAuthentication())

        group.post("register/options") { _, context -> Response in
            let user = try context.requireUser()
            return try await registrationOptions(for: user.id)
        }
        group.post("register/verify") { request, context -> Response in
            let user = try context.requireUser()
            var request = request
            let buffer = try await request.collectJSONBody(context: context)
            let body = try NexusFailure.decodingVerification { try JSONBody.decode(NexusWire.RegisterVerifyRequest.self, from: buffer) }
            return try await verifyRegistration(body, user: user.id, logger: context.logger)
        }
        group.get("credentials") { _, context -> Response in
            let user = try context.requireUser()
            let credentials = try await environment.database.read { db in try await store.credentials(of: user.id, in: db) }
            struct List: Encodable { var credentials: [NexusWire.Credential] }
            return try .json(List(credentials: credentials.map(\.wire)))
        }
        group.delete("credentials/{id}") { _, context -> Response in
            let user = try context.requireUser()
            let id = try context.parameters.require("id")
            let deleted = try await environment.database.transaction { db in try await store.deleteCredential(id: id, user: user.id, in: db) }
            guard deleted else { throw NexusFailure.error(.notFound, "credential_not_found", "No such credential") }
            return Response(status: .noContent)
        }
        group.get("auth/options") { request, context -> Response in
            let user = try context.requireUser()
            let asked = request.uri.queryParameters.get("intent") ?? ChallengeIntent.transaction.rawValue
            guard let intent = ChallengeIntent(rawValue: asked), intent != .enrol else {
                throw NexusFailure.error(.badRequest, "invalid_intent", "intent must be transaction or unlock", param: "intent")
            }
            return try await authenticationOptions(for: user.id, intent: intent)
        }
        group.post("auth/verify") { request, context -> Response in
            let user = try context.requireUser()
            var request = request
            let buffer = try await request.collectJSONBody(context: context)
            let body = try NexusFailure.decodingVerification { try JSONBody.decode(AuthenticationResponseJSON.self, from: buffer) }
            return try await verifyAuthentication(body, user: user.id, logger: context.logger)
        }
    }

    func registrationOptions(for user: UserID) async throws -> Response {
        let challenge = Self.newChallenge()
        let now = now()
        let (account, existing) = try await environment.database.transaction { db in
            try await store.insertChallenge(
                challenge, user: user, ceremony: .registration, intent: .enrol, userVerification: configuration.userVerification,
                expiresAt: now.addingTimeInterval(configuration.challengeLifetime), now: now, in: db
            )
            return (try await environment.accounts.find(id: user, in: db), try await store.credentials(of: user, in: db))
        }
        let label = account?.email ?? account?.phone ?? user.rawValue
        let options = NexusWire.CreationOptions(
            rp: .init(id: rp.id, name: rp.name),
            user: .init(id: Base64URL.encode(Data(user.rawValue.utf8)), name: label, displayName: account?.name ?? label),
            challenge: challenge,
            pubKeyCredParams: [.init(alg: Int(COSEKey.es256))],
            timeout: Int(configuration.challengeLifetime * 1000),
            attestation: "none",
            authenticatorSelection: .init(authenticatorAttachment: "platform", residentKey: "preferred", userVerification: configuration.userVerification),
            excludeCredentials: existing.map { NexusWire.CredentialDescriptor(id: $0.id, transports: $0.transports) }
        )
        return try .json(options)
    }

    func verifyRegistration(_ body: NexusWire.RegisterVerifyRequest, user: UserID, logger: Logger) async throws -> Response {
        let registration = body.registration
        guard registration.type == "public-key" else { throw NexusFailure.verification(.badRequest, "type must be public-key") }
        guard let rawID = Base64URL.decode(registration.rawId), !rawID.isEmpty, Base64URL.decode(registration.id) == rawID else {
            throw NexusFailure.verification(.badRequest, "id and rawId must be the same base64url credential id")
        }
        let now = now()
        let (clientData, clientDataRaw) = try webAuthn { try rp.clientData(registration.response.clientDataJSON, expectedType: "webauthn.create") }
        let result = try await environment.database.transaction { db -> Result<NexusStore.StoredCredential, APIError> in
            let challenge = try await store.consumeChallenge(clientData.challenge, now: now, in: db)
            if let failure = Self.challengeProblem(challenge, user: user, ceremony: .registration, now: now) { return .failure(failure) }
            let verified: VerifiedRegistration
            do {
                verified = try rp.verifyRegistration(registration, clientDataRaw: clientDataRaw, requireUserVerification: challenge?.userVerification == "required")
            } catch let error as WebAuthnError {
                return .failure(NexusFailure.verification(.unauthorized, error.description))
            } catch let error as CBORError {
                return .failure(NexusFailure.verification(.badRequest, "Malformed attestation: \(error.description)"))
            }
            let credential = NexusStore.StoredCredential(
                id: Base64URL.encode(verified.credentialID), userID: user, publicKey: verified.publicKeyCOSE,
                signCount: verified.signCount, transports: registration.response.transports ?? ["internal"],
                attestationFormat: verified.format, name: body.name.map(Self.credentialName), createdAt: now, lastUsedAt: nil
            )
            guard try await store.insertCredential(credential, in: db) else {
                return .failure(NexusFailure.verification(.conflict, "Credential already registered"))
            }
            return .success(credential)
        }
        switch result {
        case .failure(let error):
            logger.notice("nexus registration refused", metadata: ["reason": "\(String(decoding: error.body, as: UTF8.self))"])
            throw error
        case .success(let credential):
            struct Registered: Encodable { var verified = true; var credential: NexusWire.Credential }
            return try .json(Registered(credential: credential.wire), status: .created)
        }
    }

    func authenticationOptions(for user: UserID, intent: ChallengeIntent) async throws -> Response {
        let challenge = Self.newChallenge()
        let now = now()
        let credentials = try await environment.database.read { db in try await store.credentials(of: user, in: db) }
        guard !credentials.isEmpty else {
            throw NexusFailure.error(.notFound, "no_credentials", "No biometric credential is enrolled for this user. Enrol one or use your PIN.")
        }
        try await environment.database.transaction { db in
            try await store.insertChallenge(
                challenge, user: user, ceremony: .authentication, intent: intent, userVerification: configuration.userVerification,
                expiresAt: now.addingTimeInterval(configuration.challengeLifetime), now: now, in: db
            )
        }
        let options = NexusWire.AuthenticationOptions(
            challenge: challenge, rpId: rp.id,
            allowCredentials: credentials.map { NexusWire.CredentialDescriptor(id: $0.id, transports: $0.transports) },
            userVerification: configuration.userVerification, timeout: Int(configuration.challengeLifetime * 1000)
        )
        return try .json(options)
    }

    func verifyAuthentication(_ body: AuthenticationResponseJSON, user: UserID, logger: Logger) async throws -> Response {
        guard body.type == "public-key" else { throw NexusFailure.verification(.badRequest, "type must be public-key") }
        guard let rawID = Base64URL.decode(body.rawId), !rawID.isEmpty, Base64URL.decode(body.id) == rawID else {
            throw NexusFailure.verification(.badRequest, "id and rawId must be the same base64url credential id")
        }
        if let handle = body.response.userHandle, !handle.isEmpty, Base64URL.decode(handle) == nil {
            throw NexusFailure.verification(.badRequest, "userHandle is not valid base64url")
        }
        let now = now()
        let (clientData, clientDataRaw) = try webAuthn { try rp.clientData(body.response.clientDataJSON, expectedType: "webauthn.get") }
        let credentialID = Base64URL.encode(rawID)
        // Read, then check the assertion — the signature is the expensive part — outside the write
        // transaction, so verifications run side by side instead of inside the single writer.
        let (found, credential) = try await environment.database.read { db in
            (try await store.challenge(clientData.challenge, in: db), try await store.credential(id: credentialID, in: db))
        }
        guard found != nil else { throw NexusFailure.verification(.unauthorized, "Challenge not recognised") }
        let assessed = assessAssertion(body, clientDataRaw: clientDataRaw, challenge: found, credential: credential, user: user, logger: logger)
        // Any attempt spends the challenge; a valid one also moves the sign count. Both updates
        // are conditional, so a concurrent use of the same challenge or counter loses here.
        let outcome = try await environment.database.transaction { db -> Result<ChallengeIntent, APIError> in
            let challenge = try await store.consumeChallenge(clientData.challenge, now: now, in: db)
            if let failure = Self.challengeProblem(challenge, user: user, ceremony: .authentication, now: now) { return .failure(failure) }
            guard let challenge else { return .failure(NexusFailure.verification(.unauthorized, "Challenge not recognised")) }
            switch assessed {
            case .failure(let failure):
                return .failure(failure)
            case .success(let newCount):
                guard let credential,
                      try await store.advanceSignCount(credentialID: credentialID, from: credential.signCount, to: newCount, now: now, in: db) else {
                    return .failure(NexusFailure.verification(.unauthorized, "Sign count did not increase (possible cloned authenticator)"))
                }
                return .success(challenge.intent)
            }
        }
        switch outcome {
        case .failure(let error):
            logger.info("nexus verification refused", metadata: ["reason": "\(String(decoding: error.body, as: UTF8.self))"])
            throw error
        case .success(let intent):
            let token = try await environment.tokens.issue(
                for: user, purpose: Self.verificationPurpose, lifetime: configuration.verificationTokenLifetime, intent: intent.rawValue
            ).token
            return try .json(NexusWire.VerifySuccess(verificationToken: token, expiresIn: Int(configuration.verificationTokenLifetime)))
        }
    }

    /// The checks of an assertion that need no writes: the credential is known and the user's,
    /// the user handle matches, and the signature, flags and counter verify. Returns the new sign
    /// count.
    func assessAssertion(
        _ body: AuthenticationResponseJSON, clientDataRaw: Data, challenge: NexusStore.Challenge?, credential: NexusStore.StoredCredential?,
        user: UserID, logger: Logger
    ) -> Result<UInt32, APIError> {
        guard let credential else { return .failure(NexusFailure.verification(.unauthorized, "Unknown credential")) }
        guard credential.userID == user else {
            return .failure(NexusFailure.verification(.unauthorized, "Credential does not belong to this user"))
        }
        if let handle = body.response.userHandle.flatMap(Base64URL.decode), !handle.isEmpty, handle != Data(user.rawValue.utf8) {
            return .failure(NexusFailure.verification(.unauthorized, "userHandle does not match this user"))
        }
        do {
            let key = try COSEKey(cose: credential.publicKey)
            return .success(try rp.verifyAssertion(
                body, clientDataRaw: clientDataRaw, credentialKey: key, storedSignCount: credential.signCount,
                requireUserVerification: challenge?.userVerification == "required"
            ))
        } catch let error as WebAuthnError {
            if error.description.hasPrefix("Sign count") {
                logger.warning("nexus sign count regression: possible cloned authenticator", metadata: [
                    "credential": "\(credential.id)", "user": "\(user)",
                ])
            }
            return .failure(NexusFailure.verification(.unauthorized, error.description))
        } catch let error as CBORError {
            return .failure(NexusFailure.verification(.badRequest, "Malformed authenticator data: \(error.description)"))
        } catch {
            return .failure(NexusFailure.verification(.unauthorized, "\(error)"))
        }
    }

    /// Why a challenge cannot be used, or nil when it can.
    static func challengeProblem(_ challenge: NexusStore.Challenge?, user: UserID, ceremony: Ceremony, now: Date) -> APIError? {
        guard let challenge, challenge.ceremony == ceremony else { return NexusFailure.verification(.unauthorized, "Challenge not recognised") }
        guard challenge.userID == user else { return NexusFailure.verification(.unauthorized, "Challenge was not issued to this user") }
        guard challenge.usedAt == nil else { return NexusFailure.verification(.unauthorized, "Challenge already used") }
        guard challenge.expiresAt > now else { return NexusFailure.verification(.unauthorized, "Challenge expired") }
        return nil
    }

    /// WebAuthn field errors are 400 (malformed) or 401 (a check failed).
    func webAuthn<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as WebAuthnError {
            let malformed = error.description.contains("base64url") || error.description.contains("not valid JSON")
            throw NexusFailure.verification(malformed ? .badRequest : .unauthorized, error.description)
        }
    }
}

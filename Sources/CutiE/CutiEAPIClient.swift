import Crypto
import Foundation
import HTTPTypes
import PurseFormats
import PurseKit
import PurseHTTP
import Synchronization

/// The SDK's HTTP client: registers the device on first use, signs every request with the
/// device secret, and when the server no longer knows the token (401) registers again once.
///
/// The device id (`device_<UUID>`) lives in preferences; the device token and secret in the
/// ``SecureStore`` (the Keychain on iOS).
actor CutiEAPIClient {
    let appID: String
    let api: APIClient
    let store: any SecureStore
    let preferences: any Preferences
    let now: @Sendable () -> Date
    var context: [String: String] = [:]
    private var credentials: Credentials?

    static let deviceIDKey = "com.cutie.deviceID"
    static let credentialsKey = "com.cutie.deviceCredentials"

    struct Credentials: Codable, Sendable {
        var device_token: String
        var device_secret: String
        var token_id: String
    }

    init(appID: String, api: APIClient, store: any SecureStore, preferences: any Preferences, appAttest: (any AppAttestService)? = nil,
         now: @escaping @Sendable () -> Date = Date.init) {
        self.attest = appAttest.map { AttestState(service: $0) }
        self.attestService = appAttest
        self.appID = appID
        self.api = api
        self.store = store
        self.preferences = preferences
        self.now = now
    }

    /// This device's id, made once and kept in preferences.
    nonisolated var deviceID: String {
        if let id = preferences.string(forKey: Self.deviceIDKey), id.hasPrefix("device_") { return id }
        let id = "device_" + UUID().uuidString.lowercased()
        preferences.set(id, forKey: Self.deviceIDKey)
        return id
    }

    /// Sends a signed request and decodes the answer. With App Attest on, the device attests
    /// its key first (once), and every request then carries an assertion over the same text the
    /// signature covers; `assert: false` is for the attestation's own requests.
    func send<T: Decodable & Sendable>(_ method: HTTPRequest.Method, _ path: String, query: [URLQueryItem] = [], body: (any Encodable & Sendable)? = nil,
                                       idempotencyKey: String? = nil, assert: Bool = true, as type: T.Type = T.self) async throws -> T {
        let data = try body.map { try JSONEncoder.purse.encode($0) }
        var reRegistered = false
        while true {
            let credentials = try await ensureRegistered()
            if assert { await attestIfNeeded() }
            do {
                var request = try signedRequest(method, path, query: query, body: data, idempotencyKey: idempotencyKey, credentials: credentials)
                let response: TransportResponse
                if assert, let keyID = attest?.attestedKeyID {
                    // Assertions carry a counter the server requires to grow: one in flight at a time.
                    await acquireAssertionGate()
                    defer { releaseAssertionGate() }
                    request.headerFields[.appAssertion] = try await assertion(keyID: keyID, clientData: Self.clientData(of: request))
                    response = try await api.perform(request)
                } else {
                    response = try await api.perform(request)
                }
                do {
                    return try JSONDecoder.purse.decode(T.self, from: response.body)
                } catch {
                    throw CutiEError.decodingError("\(method) \(path): \(error)")
                }
            } catch let error as PurseError where error.kind == .unauthorized && !reRegistered && !CutiEError.isAppAttestRefusal(error) {
                // The token was revoked or the server forgot it: register again, once.
                reRegistered = true
                try await forget()
            }
        }
    }

    /// What a request's signature covers, which its assertion covers too.
    static func clientData(of request: TransportRequest) -> Data {
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        let target = (components?.percentEncodedPath ?? request.url.path) + (components?.percentEncodedQuery.map { "?" + $0 } ?? "")
        return Data(CutiERequestSignature.signedText(timestamp: request.headerFields[.requestTimestamp] ?? "", method: request.method.rawValue, target: target,
                                                     body: request.body ?? Data(), idempotencyKey: request.headerFields[.idempotencyKey]).utf8)
    }

    func signedRequest(_ method: HTTPRequest.Method, _ path: String, query: [URLQueryItem], body: Data?, idempotencyKey: String?, credentials: Credentials) throws -> TransportRequest {
        let base = api.baseURL.absoluteString.hasSuffix("/") ? String(api.baseURL.absoluteString.dropLast()) : api.baseURL.absoluteString
        guard var components = URLComponents(string: base + path) else { throw CutiEError.invalidRequest }
        if !query.isEmpty { components.queryItems = query }
        guard let url = components.url else { throw CutiEError.invalidRequest }
        var request = TransportRequest(method: method, url: url, headerFields: api.defaultHeaderFields, body: body, timeout: api.timeout)
        let timestamp = String(Int64(now().timeIntervalSince1970 * 1000))
        let target = components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        request.headerFields[.accept] = "application/json"
        if body != nil { request.headerFields[.contentType] = "application/json" }
        request.headerFields[.appID] = appID
        request.headerFields[.deviceID] = deviceID
        request.headerFields[.deviceToken] = credentials.device_token
        request.headerFields[.requestTimestamp] = timestamp
        request.headerFields[.requestSignature] = Self.signature(secret: credentials.device_secret, timestamp: timestamp, method: method.rawValue, target: target,
                                                                 body: body ?? Data(), idempotencyKey: idempotencyKey)
        if let idempotencyKey { request.headerFields[.idempotencyKey] = idempotencyKey }
        return request
    }

    static func signature(secret: String, timestamp: String, method: String, target: String, body: Data, idempotencyKey: String? = nil) -> String {
        CutiERequestSignature.sign(secret: secret, timestamp: timestamp, method: method, target: target, body: body, idempotencyKey: idempotencyKey)
    }

    /// The stored credentials, or new ones from `POST /v1/device/register`. A device id the
    /// server knows but this device has no token for (a restored backup, a revoked token) is
    /// given up for a new one.
    func ensureRegistered() async throws -> Credentials {
        if let credentials { return credentials }
        if let data = try await store.data(for: Self.credentialsKey), let stored = try? JSONDecoder().decode(Credentials.self, from: data) {
            credentials = stored
            return stored
        }
        for attempt in 0..<2 {
            var request = TransportRequest(method: .post, url: api.baseURL.appendingPathComponent("v1/device/register"), headerFields: api.defaultHeaderFields,
                                           body: try JSONEncoder.purse.encode(context), timeout: api.timeout)
            request.headerFields[.contentType] = "application/json"
            request.headerFields[.accept] = "application/json"
            request.headerFields[.appID] = appID
            request.headerFields[.deviceID] = deviceID
            do {
                let response = try await api.perform(request)
                let registered = try JSONDecoder().decode(Credentials.self, from: response.body)
                try await store.set(try JSONEncoder().encode(registered), for: Self.credentialsKey)
                credentials = registered
                return registered
            } catch let error as PurseError where error.status == 409 && attempt == 0 {
                preferences.set(nil, forKey: Self.deviceIDKey)
                if attest != nil {
                    attest?.loaded = false
                    attest?.attestedKeyID = nil
                }
            } catch is DecodingError {
                throw CutiEError.decodingError("device registration answer")
            }
        }
        throw CutiEError.serverError(401, "This device could not be registered")
    }

    /// Drops the credentials (after a 401), so the next call registers again.
    func forget() async throws {
        credentials = nil
        try await store.remove(Self.credentialsKey)
    }

    func setContext(_ values: [String: String]) { context = values }

    // MARK: App Attest

    /// App Attest's state on this device: the service, and the attested key once there is one.
    struct AttestState: Sendable {
        let service: any AppAttestService
        var attestedKeyID: String?
        /// Attesting failed (or is unsupported): requests go on with device-token auth, which the
        /// server accepts unless the app requires App Attest.
        var failure: (any Error)?
        var loaded = false
    }

    private var attest: AttestState? {
        didSet { attestedFlag.withLock { $0 = attest?.attestedKeyID != nil } }
    }
    /// Whether this device has an attested key, as last known (read without waiting).
    nonisolated let attestedFlag = Mutex(false)
    /// Whether App Attest was configured and the platform supports it.
    nonisolated var attestSupported: Bool { attestService?.isSupported ?? false }
    nonisolated let attestService: (any AppAttestService)?
    private var assertionBusy = false
    private var assertionWaiters: [CheckedContinuation<Void, Never>] = []

    /// The key id stored for this device (a new device id needs a new attestation).
    var attestStoreKey: String { "com.cutie.appAttestKeyID.\(deviceID)" }

    var isAttested: Bool {
        get async {
            await loadAttestedKey()
            return attest?.attestedKeyID != nil
        }
    }

    func loadAttestedKey() async {
        guard var state = attest, !state.loaded else { return }
        state.loaded = true
        if let data = try? await store.data(for: attestStoreKey), let keyID = String(data: data, encoding: .utf8), !keyID.isEmpty {
            state.attestedKeyID = keyID
        }
        attest = state
    }

    /// Forgets the attested key (``CutiEAppAttest/reset()``): the next request attests again.
    func forgetAttestedKey() async {
        try? await store.remove(attestStoreKey)
        guard attest != nil else { return }
        attest?.attestedKeyID = nil
        attest?.failure = nil
        attest?.loaded = true
    }

    /// Attests once per device; a failure is kept (and requests fall back to the device token).
    func attestIfNeeded() async {
        await loadAttestedKey()
        guard let state = attest, state.attestedKeyID == nil, state.failure == nil else { return }
        do {
            _ = try await performAttestation()
        } catch {
            attest?.failure = error
        }
    }

    struct Challenge: Decodable, Sendable { var challenge: String }
    struct AttestBody: Encodable, Sendable { var key_id: String; var attestation: String; var challenge: String }
    struct Attested: Decodable, Sendable { var success: Bool; var key_id: String }

    /// Asks for a challenge, has a new key attested over SHA-256(`challenge|keyId`), and sends
    /// the attestation; returns the key id.
    func performAttestation() async throws -> String {
        guard let service = attest?.service, service.isSupported else { throw AppAttestError.notSupported }
        let challenge = try await send(.post, "/v1/device/attest/challenge", assert: false, as: Challenge.self).challenge
        let keyID: String
        let attestation: Data
        do {
            keyID = try await service.generateKey()
            guard Data(base64Encoded: keyID) != nil else { throw AppAttestError.keyGenerationFailed }
            // As the Cuti-E SDK attests: SHA-256 of `challenge|keyId`.
            attestation = try await service.attestKey(keyID, clientDataHash: Data(SHA256.hash(data: Data("\(challenge)|\(keyID)".utf8))))
        } catch let error as AppAttestError {
            throw error
        } catch {
            throw AppAttestError.attestationFailed(error)
        }
        _ = try await send(.post, "/v1/device/attest", body: AttestBody(key_id: keyID, attestation: attestation.base64EncodedString(), challenge: challenge),
                           assert: false, as: Attested.self)
        try await store.set(Data(keyID.utf8), for: attestStoreKey)
        attest?.attestedKeyID = keyID
        attest?.failure = nil
        return keyID
    }

    /// An assertion (base64 CBOR) by the attested key over `clientData`.
    func assertion(keyID: String? = nil, clientData: Data) async throws -> String {
        await loadAttestedKey()
        guard let service = attest?.service else { throw AppAttestError.notSupported }
        guard let keyID = keyID ?? attest?.attestedKeyID else { throw AppAttestError.notAttested }
        do {
            return try await service.generateAssertion(keyID, clientDataHash: Data(SHA256.hash(data: clientData))).base64EncodedString()
        } catch {
            throw AppAttestError.assertionFailed(error)
        }
    }

    func acquireAssertionGate() async {
        if !assertionBusy {
            assertionBusy = true
            return
        }
        await withCheckedContinuation { assertionWaiters.append($0) }
    }

    func releaseAssertionGate() {
        if assertionWaiters.isEmpty { assertionBusy = false } else { assertionWaiters.removeFirst().resume() }
    }
}

/// The request signature Cuti-E's backend checks: lowercase hex HMAC-SHA256, keyed with the
/// device secret (base64url, from registration), of ``CutiESignedText``, sent as `X-Signature`
/// with `X-Timestamp` (Unix milliseconds).
public enum CutiERequestSignature {
    public static func sign(secret: String, timestamp: String, method: String, target: String, body: Data, idempotencyKey: String? = nil) -> String {
        let key = SymmetricKey(data: Base64URL.decode(secret) ?? Data(secret.utf8))
        let text = signedText(timestamp: timestamp, method: method, target: target, body: body, idempotencyKey: idempotencyKey)
        return Hex.encode(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key))
    }

    /// What the signature covers — and an App Attest assertion too (its client data).
    public static func signedText(timestamp: String, method: String, target: String, body: Data, idempotencyKey: String? = nil) -> String {
        CutiESignedText.make(timestamp: timestamp, method: method, target: target, bodySHA256Hex: Hex.encode(SHA256.hash(data: body)),
                             idempotencyKey: idempotencyKey)
    }
}

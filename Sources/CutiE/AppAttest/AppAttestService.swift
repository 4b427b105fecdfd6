import Crypto
import Foundation
import HTTPTypes
import PurseFormats
import PurseKit
import PurseHTTP

/// What the SDK needs of App Attest: DeviceCheck's `DCAppAttestService`, method for method, so
/// the device's Secure Enclave and the software attester below are interchangeable.
public protocol AppAttestService: Sendable {
    var isSupported: Bool { get }
    /// A new key pair; returns its key id (base64 of SHA-256 of the public key).
    func generateKey() async throws -> String
    /// Has Apple attest the key over `clientDataHash`; returns the attestation object (CBOR).
    func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data
    /// Signs `clientDataHash` with the key; returns the assertion (CBOR).
    func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data
}

#if canImport(DeviceCheck)
import DeviceCheck

/// The device's App Attest: keys in the Secure Enclave, attestations from Apple.
@available(iOS 14.0, macOS 11.0, *)
public struct DeviceCheckAppAttestService: AppAttestService {
    public init() {}
    public var isSupported: Bool { DCAppAttestService.shared.isSupported }
    public func generateKey() async throws -> String { try await DCAppAttestService.shared.generateKey() }
    public func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try await DCAppAttestService.shared.attestKey(keyId, clientDataHash: clientDataHash)
    }
    public func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try await DCAppAttestService.shared.generateAssertion(keyId, clientDataHash: clientDataHash)
    }
}
#endif

/// App Attest in software, for platforms without a Secure Enclave (Linux, the simulator): the
/// same attestation objects and assertions a device makes — authenticator data with the app id's
/// hash, the environment's AAGUID and the key id, a credential certificate with the nonce
/// extension — with the certificates issued by a development CA (the sandbox's
/// `/sandbox/appattest/certificate`) instead of Apple's. A server accepts them only when it
/// trusts that development root (`CUTIE_APP_ATTEST_DEV_ROOT`, or its own sandbox).
///
/// Keys and their counters live in the ``SecureStore``.
public actor SoftwareAppAttestService: AppAttestService {
    /// Where the development CA is, and the transport to reach it.
    let issuer: URL
    let transport: any HTTPTransport
    let store: any SecureStore
    /// Team id "." bundle id: what the device's entitlements say on Apple platforms.
    var appIdentifier: String?
    let cutieAppID: String?
    var development: Bool

    struct StoredKey: Codable {
        var privateKey: Data
        var counter: UInt32
    }

    /// Keys already read from the store (the store stays the record: every counter is saved
    /// before its assertion leaves).
    private var loaded: [String: (P256.Signing.PrivateKey, StoredKey)] = [:]

    /// - Parameters:
    ///   - sandboxURL: the server whose `/sandbox/appattest` issues certificates.
    ///   - appIdentifier: team id "." bundle id; nil asks the sandbox for the Cuti-E app's.
    public init(sandboxURL: URL, transport: any HTTPTransport, store: any SecureStore, appIdentifier: String? = nil, cutieAppID: String? = nil,
                development: Bool = true) {
        issuer = sandboxURL.appendingPathComponent("sandbox/appattest")
        self.transport = transport
        self.store = store
        self.appIdentifier = appIdentifier
        self.cutieAppID = cutieAppID
        self.development = development
    }

    public nonisolated var isSupported: Bool { true }

    static func storeKey(_ keyId: String) -> String { "com.cutie.appattest.software.\(keyId)" }

    public func generateKey() async throws -> String {
        let key = P256.Signing.PrivateKey()
        let keyID = Data(SHA256.hash(data: key.publicKey.x963Representation)).base64EncodedString()
        try await save(StoredKey(privateKey: key.rawRepresentation, counter: 0), keyId: keyID)
        return keyID
    }

    public func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        let (key, stored) = try await load(keyId)
        guard stored.counter == 0 else { throw AppAttestError.attestationFailed(AppAttestFailure("this key was already attested")) }
        let keyID = Data(SHA256.hash(data: key.publicKey.x963Representation))
        let appIdentifier = try await resolveAppIdentifier()
        var authData = Data(SHA256.hash(data: Data(appIdentifier.utf8)))
        authData.append(0x40)  // attested credential data
        authData.append(contentsOf: [0, 0, 0, 0])
        authData.append(development ? Data("appattestdevelop".utf8) : Data("appattest".utf8) + Data(repeating: 0, count: 7))
        authData.append(contentsOf: [0, 32])
        authData.append(keyID)
        authData.append(Self.coseKey(key.publicKey))
        let nonce = Data(SHA256.hash(data: authData + clientDataHash))
        let x5c = try await issue(publicKey: key.publicKey, nonce: nonce)
        let object: CBOR = .map([
            (.text("fmt"), .text("apple-appattest")),
            (.text("attStmt"), .map([
                (.text("x5c"), .array(x5c.map { .bytes($0) })),
                (.text("receipt"), .bytes(Data("purse-software-attester".utf8))),
            ])),
            (.text("authData"), .bytes(authData)),
        ])
        return object.encoded
    }

    public func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        var (key, stored) = try await load(keyId)
        stored.counter += 1
        try await save(stored, keyId: keyId)
        var authData = Data(SHA256.hash(data: Data(try await resolveAppIdentifier().utf8)))
        authData.append(0)
        withUnsafeBytes(of: stored.counter.bigEndian) { authData.append(contentsOf: $0) }
        let nonce = Data(SHA256.hash(data: authData + clientDataHash))
        let signature = try key.signature(for: nonce)
        let object: CBOR = .map([(.text("signature"), .bytes(signature.derRepresentation)), (.text("authenticatorData"), .bytes(authData))])
        return object.encoded
    }

    // MARK: Parts

    /// The COSE_Key of a P-256 key (kty EC2, alg ES256, crv P-256, x, y).
    static func coseKey(_ key: P256.Signing.PublicKey) -> Data {
        let raw = key.rawRepresentation
        let object: CBOR = .map([
            (.int(1), .int(2)), (.int(3), .int(-7)), (.int(-1), .int(1)),
            (.int(-2), .bytes(raw.prefix(32))), (.int(-3), .bytes(raw.suffix(32))),
        ])
        return object.encoded
    }

    struct Issue: Encodable { var public_key: String; var nonce: String }
    struct Issued: Decodable { var x5c: [String] }
    struct AppInfo: Decodable { var app_identifier: String; var environment: String }

    func issue(publicKey: P256.Signing.PublicKey, nonce: Data) async throws -> [Data] {
        let body = try JSONEncoder().encode(Issue(public_key: publicKey.x963Representation.base64EncodedString(), nonce: nonce.base64EncodedString()))
        let response = try await transport.send(TransportRequest(method: .post, url: issuer.appendingPathComponent("certificate"),
                                                                 headerFields: [.contentType: "application/json"], body: body, timeout: .seconds(15)))
        guard response.status == 200, let issued = try? JSONDecoder().decode(Issued.self, from: response.body) else {
            throw AppAttestError.serverError("the App Attest development CA refused: HTTP \(response.status.code)")
        }
        return try issued.x5c.map {
            guard let der = Data(base64Encoded: $0) else { throw CutiEError.decodingError("x5c is not base64") }
            return der
        }
    }

    func resolveAppIdentifier() async throws -> String {
        if let appIdentifier { return appIdentifier }
        guard let cutieAppID else { throw AppAttestError.attestationFailed(AppAttestFailure("the software attester needs the app identifier (team id and bundle id)")) }
        let response = try await transport.send(TransportRequest(method: .get, url: issuer.appendingPathComponent("apps").appendingPathComponent(cutieAppID),
                                                                 headerFields: [.accept: "application/json"], body: nil, timeout: .seconds(15)))
        guard response.status == 200, let info = try? JSONDecoder().decode(AppInfo.self, from: response.body) else {
            throw AppAttestError.serverError("the sandbox does not know app \(cutieAppID) for App Attest: HTTP \(response.status.code)")
        }
        appIdentifier = info.app_identifier
        development = info.environment == "development"
        return info.app_identifier
    }

    func load(_ keyId: String) async throws -> (P256.Signing.PrivateKey, StoredKey) {
        if let cached = loaded[keyId] { return cached }
        guard let data = try await store.data(for: Self.storeKey(keyId)), let stored = try? JSONDecoder().decode(StoredKey.self, from: data),
              let key = try? P256.Signing.PrivateKey(rawRepresentation: stored.privateKey) else {
            throw AppAttestError.notAttested
        }
        loaded[keyId] = (key, stored)
        return (key, stored)
    }

    func save(_ stored: StoredKey, keyId: String) async throws {
        try await store.set(try JSONEncoder().encode(stored), for: Self.storeKey(keyId))
        if let key = loaded[keyId]?.0 ?? (try? P256.Signing.PrivateKey(rawRepresentation: stored.privateKey)) { loaded[keyId] = (key, stored) }
    }
}

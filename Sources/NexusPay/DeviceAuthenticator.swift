import PurseFormats
import Crypto
import Foundation
import PurseKit
import PurseHTTP

/// The phone's side of WebAuthn: a platform authenticator over the device key.
///
/// It builds exactly what a browser and a platform authenticator would: `clientDataJSON`
/// (`{type, challenge, origin}`), authenticator data (SHA-256 of the RP id, flags UP|UV, a
/// signature counter that only grows) and an ES256 DER signature over
/// `authenticatorData ‖ SHA-256(clientDataJSON)`. The credential id, counter and key live in
/// the ``SecureStore``.
public actor DeviceAuthenticator {
    let store: any SecureStore
    let origin: String
    let loadKey: @Sendable (String, any SecureStore) async throws -> any DeviceKey

    static let keyTag = "nexus.device.key"
    static let credentialTag = "nexus.credential.id"
    static let counterTag = "nexus.credential.counter"

    /// - Parameters:
    ///   - store: Where the key, credential id and counter are kept.
    ///   - origin: The origin written into `clientDataJSON` (an app's associated domain, e.g.
    ///     `https://nexus-data.com`; the CLI uses the server URL). It must be one the server allows.
    ///   - loadKey: Loads or creates the signing key (Secure Enclave on iPhone).
    public init(
        store: any SecureStore, origin: String,
        loadKey: @escaping @Sendable (String, any SecureStore) async throws -> any DeviceKey = { tag, store in
            try await SoftwareDeviceKey.loadOrCreate(tag: tag, in: store)
        }
    ) {
        self.store = store
        self.origin = origin
        self.loadKey = loadKey
    }

    /// The enrolled credential's id (base64url), if this device has one.
    public func credentialID() async throws -> String? {
        try await store.string(for: Self.credentialTag)
    }

    /// Forgets the credential (after it was removed on the server).
    public func reset() async throws {
        try await store.remove(Self.credentialTag)
        try await store.remove(Self.counterTag)
        try await store.remove(Self.keyTag)
    }

    /// Creates a credential for `options` (attestation `none`).
    /// - Parameter userVerified: Whether the biometric prompt just succeeded (sets UV).
    public func makeRegistration(for options: CreationOptions, userVerified: Bool, name: String? = nil) async throws -> Registration {
        let key = try await loadKey(Self.keyTag, store)
        let credentialID = Data(RandomBytes.make(16))
        let clientData = try Self.clientDataJSON(type: "webauthn.create", challenge: options.challenge, origin: origin)
        let (x, y) = key.publicKeyCoordinates
        let coseKey = CBOR.map([
            (.int(1), .int(2)), (.int(3), .int(-7)), (.int(-1), .int(1)), (.int(-2), .bytes(x)), (.int(-3), .bytes(y)),
        ]).encoded
        var authData = Self.rpIDHash(options.rp.id)
        authData.append(Self.flags(userVerified: userVerified, attested: true))
        authData.append(contentsOf: Self.bigEndian(0))
        authData.append(Data(count: 16))  // AAGUID: none for a software authenticator
        authData.append(contentsOf: [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)])
        authData.append(credentialID)
        authData.append(coseKey)
        let attestation = CBOR.map([
            (.text("fmt"), .text("none")), (.text("attStmt"), .map([])), (.text("authData"), .bytes(authData)),
        ]).encoded
        try await store.setString(Base64URL.encode(credentialID), for: Self.credentialTag)
        try await store.setString("0", for: Self.counterTag)
        return Registration(
            id: Base64URL.encode(credentialID), rawId: Base64URL.encode(credentialID),
            response: .init(clientDataJSON: Base64URL.encode(clientData), attestationObject: Base64URL.encode(attestation), transports: ["internal"]),
            name: name
        )
    }

    /// Signs the server's challenge.
    /// - Throws: ``PurseError`` `domain("not_enrolled")` when this device has no credential the
    ///   server allows.
    public func makeAssertion(for options: AuthenticationOptions, userVerified: Bool) async throws -> Assertion {
        guard let credentialID = try await credentialID(),
              options.allowCredentials.isEmpty || options.allowCredentials.contains(where: { $0.id == credentialID }) else {
            throw PurseError.domain("not_enrolled", message: "This device has no enrolled passkey for this account")
        }
        let key = try await loadKey(Self.keyTag, store)
        // The signature counter only grows; at its end it stays there (a relying party reads a
        // counter that stops growing as a possible clone, never one that went back to zero).
        let stored = UInt32(try await store.string(for: Self.counterTag) ?? "0") ?? 0
        let counter = stored == .max ? stored : stored + 1
        try await store.setString(String(counter), for: Self.counterTag)
        let clientData = try Self.clientDataJSON(type: "webauthn.get", challenge: options.challenge, origin: origin)
        var authData = Self.rpIDHash(options.rpId)
        authData.append(Self.flags(userVerified: userVerified, attested: false))
        authData.append(contentsOf: Self.bigEndian(counter))
        let signature = try await key.sign(authData + Data(SHA256.hash(data: clientData)))
        return Assertion(
            id: credentialID, rawId: credentialID,
            response: .init(
                clientDataJSON: Base64URL.encode(clientData), authenticatorData: Base64URL.encode(authData),
                signature: Base64URL.encode(signature), userHandle: nil
            )
        )
    }

    static func clientDataJSON(type: String, challenge: String, origin: String) throws -> Data {
        struct ClientData: Encodable { var type: String; var challenge: String; var origin: String; var crossOrigin = false }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return try encoder.encode(ClientData(type: type, challenge: challenge, origin: origin))
    }

    static func rpIDHash(_ rpID: String) -> Data { Data(SHA256.hash(data: Data(rpID.utf8))) }

    static func flags(userVerified: Bool, attested: Bool) -> UInt8 {
        var flags: UInt8 = 0x01  // UP
        if userVerified { flags |= 0x04 }
        if attested { flags |= 0x40 }
        return flags
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}

enum RandomBytes {
    static func make(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}

import Crypto
import Foundation

/// A P-256 signing key bound to this device: the Secure Enclave on Apple hardware,
/// swift-crypto elsewhere. Signatures are ECDSA over SHA-256, DER-encoded (what WebAuthn's ES256
/// and `SecKeyCreateSignature(.ecdsaSignatureMessageX962SHA256)` produce).
public protocol DeviceKey: Sendable {
    /// The public key as an uncompressed X9.63 point (`04 ‖ x ‖ y`, 65 bytes).
    var publicKeyX963: Data { get }
    /// Signs `message` (hashing it with SHA-256).
    func sign(_ message: Data) async throws -> Data
}

extension DeviceKey {
    /// The public key's x and y coordinates, 32 bytes each.
    public var publicKeyCoordinates: (x: Data, y: Data) {
        let raw = publicKeyX963.dropFirst()
        return (Data(raw.prefix(32)), Data(raw.suffix(32)))
    }
}

/// A software P-256 key, kept in a ``SecureStore``.
public struct SoftwareDeviceKey: DeviceKey {
    let privateKey: P256.Signing.PrivateKey

    public init(privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) {
        self.privateKey = privateKey
    }

    public var publicKeyX963: Data { privateKey.publicKey.x963Representation }

    public func sign(_ message: Data) async throws -> Data {
        try privateKey.signature(for: message).derRepresentation
    }

    /// Loads the key stored under `tag`, or creates and stores one.
    public static func loadOrCreate(tag: String, in store: any SecureStore) async throws -> SoftwareDeviceKey {
        if let raw = try await store.data(for: tag) {
            return SoftwareDeviceKey(privateKey: try P256.Signing.PrivateKey(rawRepresentation: raw))
        }
        let key = SoftwareDeviceKey()
        try await store.set(key.privateKey.rawRepresentation, for: tag)
        return key
    }

    /// Loads the key stored under `tag`, if there is one.
    public static func load(tag: String, from store: any SecureStore) async throws -> SoftwareDeviceKey? {
        guard let raw = try await store.data(for: tag) else { return nil }
        return SoftwareDeviceKey(privateKey: try P256.Signing.PrivateKey(rawRepresentation: raw))
    }
}

#if canImport(CryptoKit) && !os(Linux)
import CryptoKit

/// A key that never leaves the Secure Enclave; the store keeps only its encrypted handle.
@available(iOS 13.0, macOS 10.15, *)
public struct SecureEnclaveDeviceKey: DeviceKey {
    let key: SecureEnclave.P256.Signing.PrivateKey

    public var publicKeyX963: Data { key.publicKey.x963Representation }

    public func sign(_ message: Data) async throws -> Data {
        try key.signature(for: message).derRepresentation
    }

    /// Loads the handle stored under `tag`, or creates a key (requiring user presence to sign).
    public static func loadOrCreate(tag: String, in store: any SecureStore) async throws -> SecureEnclaveDeviceKey {
        if let handle = try await store.data(for: tag) {
            return SecureEnclaveDeviceKey(key: try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: handle))
        }
        var error: Unmanaged<CFError>?
        guard let access = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, [.privateKeyUsage, .biometryCurrentSet], &error
        ) else {
            throw SecureStoreError("cannot create access control")
        }
        let key = try SecureEnclave.P256.Signing.PrivateKey(accessControl: access)
        try await store.set(key.dataRepresentation, for: tag)
        return SecureEnclaveDeviceKey(key: key)
    }
}
#endif

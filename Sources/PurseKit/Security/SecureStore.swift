import Foundation

/// Where secrets live on the device: tokens, PIN hashes, device keys.
///
/// The Keychain on Apple platforms (``KeychainSecureStore``), an encrypted file store elsewhere
/// (``EncryptedFileSecureStore``), memory in tests (``InMemorySecureStore``).
public protocol SecureStore: Sendable {
    func data(for key: String) async throws -> Data?
    func set(_ data: Data, for key: String) async throws
    func remove(_ key: String) async throws
}

extension SecureStore {
    public func string(for key: String) async throws -> String? {
        try await data(for: key).map { String(decoding: $0, as: UTF8.self) }
    }

    public func setString(_ value: String, for key: String) async throws {
        try await set(Data(value.utf8), for: key)
    }
}

/// Errors of the secure stores.
public struct SecureStoreError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A store that forgets everything when it goes away. For tests and previews.
public actor InMemorySecureStore: SecureStore {
    private var items: [String: Data]

    public init(_ items: [String: Data] = [:]) { self.items = items }

    public func data(for key: String) -> Data? { items[key] }
    public func set(_ data: Data, for key: String) { items[key] = data }
    public func remove(_ key: String) { items[key] = nil }
    public var keys: [String] { Array(items.keys) }
}

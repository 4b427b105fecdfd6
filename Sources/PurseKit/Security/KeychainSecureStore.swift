#if canImport(Security)
import Foundation
import PurseHTTP
import Security

/// The Keychain, for Apple platforms: generic-password items of one service, readable after the
/// first unlock, never synced or migrated to another device.
public struct KeychainSecureStore: SecureStore {
    public let service: String

    public init(service: String = "app.purse") { self.service = service }

    public func data(for key: String) async throws -> Data? {
        var query = baseQuery(key)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: AnyObject?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        switch status {
        case errSecSuccess: return result as? Data
        case errSecItemNotFound: return nil
        default: throw SecureStoreError("Keychain read failed (\(status))")
        }
    }

    public func set(_ data: Data, for key: String) async throws {
        let update: [String: Any] = [kSecValueData as String: data]
        let status = SecItemUpdate(baseQuery(key) as CFDictionary, update as CFDictionary)
        if status == errSecItemNotFound {
            var add = baseQuery(key)
            add[kSecValueData as String] = data
            add[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            let added = SecItemAdd(add as CFDictionary, nil)
            guard added == errSecSuccess else { throw SecureStoreError("Keychain write failed (\(added))") }
        } else if status != errSecSuccess {
            throw SecureStoreError("Keychain write failed (\(status))")
        }
    }

    public func remove(_ key: String) async throws {
        let status = SecItemDelete(baseQuery(key) as CFDictionary)
        guard status == errSecSuccess || status == errSecItemNotFound else {
            throw SecureStoreError("Keychain delete failed (\(status))")
        }
    }

    private func baseQuery(_ key: String) -> [String: Any] {
        [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: key,
        ]
    }
}
#endif

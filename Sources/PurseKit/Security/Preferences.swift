import Foundation
import Synchronization

/// Small, non-secret settings an app keeps between launches (identifiers, choices): what iOS
/// keeps in `UserDefaults`. Secrets go in a ``SecureStore``.
public protocol Preferences: Sendable {
    func string(forKey key: String) -> String?
    func set(_ value: String?, forKey key: String)
}

/// `UserDefaults` (thread-safe, as Apple documents it), standard or a suite.
public final class UserDefaultsPreferences: Preferences, @unchecked Sendable {
    private let defaults: UserDefaults

    public init(suiteName: String? = nil) {
        defaults = suiteName.flatMap { UserDefaults(suiteName: $0) } ?? .standard
    }

    public func string(forKey key: String) -> String? { defaults.string(forKey: key) }

    public func set(_ value: String?, forKey key: String) {
        if let value { defaults.set(value, forKey: key) } else { defaults.removeObject(forKey: key) }
    }
}

/// Preferences in memory, for tests and previews.
public final class InMemoryPreferences: Preferences {
    private let values: Mutex<[String: String]>

    public init(_ values: [String: String] = [:]) { self.values = Mutex(values) }

    public func string(forKey key: String) -> String? { values.withLock { $0[key] } }
    public func set(_ value: String?, forKey key: String) { values.withLock { $0[key] = value } }
}

import Crypto
import Foundation
import HTTPTypes
import PurseFormats
import PurseKit
import PurseHTTP
import Synchronization

// The Cuti-E SDK's public interface (github cuti-e/ios-sdk 2.4): its names, signatures and
// completion forms, beside this SDK's `async throws(CutiEError)` forms, so an app written
// against it builds against this module unchanged.

/// A device context field an app may send with new conversations and activity pings.
public enum DeviceContextField: String, CaseIterable, Sendable {
    case language, country, appVersion, osVersion, deviceModel
}

/// Which device context fields the SDK sends, as the app chooses for its users' privacy.
/// Conversations carry the OS version and device model when they are known, whatever the
/// choice.
public enum DeviceContextConfig: Sendable, Equatable {
    case none
    case minimal
    case standard
    case all
    case custom(Set<DeviceContextField>)

    public var enabledFields: Set<DeviceContextField> {
        switch self {
        case .none: []
        case .minimal: [.appVersion]
        case .standard: [.language, .country, .appVersion, .osVersion]
        case .all: Set(DeviceContextField.allCases)
        case .custom(let fields): fields
        }
    }
}

extension CutiE {
    /// What new conversations and activity pings say about the device.
    public func setDeviceContext(_ context: DeviceContextConfig) { state.withLock { $0.deviceContext = context } }

    public func setUserID(_ userID: String?) { setUserId(userID) }

    /// The app's version and build, sent with new conversations.
    public func setAppMetadata(version: String, build: String) {
        state.withLock {
            $0.appVersion = version
            $0.appBuild = build
        }
    }

    /// The device's language and region codes from its locale.
    static var localeContext: (language: String?, country: String?) {
        let locale = Locale.current
        return (locale.language.languageCode?.identifier, locale.region?.identifier)
    }

    /// Starts a conversation and calls back with its id (the completion form).
    public func createConversation(category: ConversationCategory, message: String, title: String? = nil,
                                   completion: @escaping @Sendable (Result<String, CutiEError>) -> Void) {
        let key = IdempotencyKey.make()
        Task {
            do throws(CutiEError) {
                completion(.success(try await createConversation(category: category, message: message, title: title, idempotencyKey: key)))
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// Sends a message in a conversation (the Cuti-E SDK's form of ``sendMessage(_:to:clientId:)``).
    public func sendMessage(conversationId: String, message: String) async throws(CutiEError) -> Message {
        try await sendMessage(message, to: conversationId)
    }

    /// Registers the APNs device token as hexadecimal text (what the Cuti-E SDK takes): checked
    /// at once (32 to 200 hex characters), then sent; a failure to send is told to the push
    /// delegate's error handler.
    @discardableResult
    public func registerForPushNotifications(deviceToken: String) -> Result<Void, CutiEError> {
        pushNotifications.registerToken(deviceToken)
    }

    /// Push notifications: permission, token registration, and the app's notifications.
    public var pushNotifications: CutiEPushNotifications { pushes }

    // MARK: Analytics

    /// Whether the user agreed to anonymous activity pings (at most one a day).
    /// Setting it records the user's answer, as ``setAnalyticsConsent(_:)`` does.
    public var analyticsEnabled: Bool {
        get { analytics.enabled }
        set { setAnalyticsConsent(newValue) }
    }

    public var hasAskedForAnalyticsConsent: Bool { analytics.asked }

    /// Records the user's answer; agreeing sends the day's ping.
    public func setAnalyticsConsent(_ enabled: Bool) {
        analytics.setConsent(enabled)
        if enabled { Task { await sendActivityPingIfDue() } }
    }

    struct PingBody: Encodable, Sendable {
        var hashed_device_id: String
        var consent: Bool
        var language: String?
        var country: String?
        var app_version: String?
        var os_version: String?
        var device_model: String?
    }

    struct Recorded: Decodable, Sendable { var success: Bool }

    /// The day's activity ping, when the user agreed and none was sent today: the device id
    /// hashed on the device, and the context fields the app chose.
    func sendActivityPingIfDue() async {
        guard analytics.enabled, let client = try? client() else { return }
        let today = String(ISO8601DateFormatter.string(from: Date(), timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate]).prefix(10))
        guard analytics.lastPingDay != today else { return }
        let context = state.withLock { $0 }
        let fields = context.deviceContext.enabledFields
        let locale = Self.localeContext
        let body = PingBody(hashed_device_id: Hex.encode(SHA256.hash(data: Data((client.deviceID + ":" + client.appID).utf8))), consent: true,
                            language: fields.contains(.language) ? locale.language : nil, country: fields.contains(.country) ? locale.country : nil,
                            app_version: fields.contains(.appVersion) ? context.appVersion : nil, os_version: fields.contains(.osVersion) ? context.osVersion : nil,
                            device_model: fields.contains(.deviceModel) ? context.deviceModel : nil)
        if (try? await client.send(.post, "/v1/activity/ping", body: body, as: Recorded.self)) != nil {
            analytics.lastPingDay = today
        }
    }
}

/// The user's analytics consent and the day of the last ping, kept in preferences.
final class CutiEAnalyticsConsent: Sendable {
    private let preferences = Mutex<(any Preferences)?>(nil)
    static let consentKey = "com.cutie.analytics.consent"
    static let lastPingKey = "com.cutie.analytics.lastPing"

    func use(_ store: any Preferences) { preferences.withLock { $0 = store } }

    var enabled: Bool { preferences.withLock { $0?.string(forKey: Self.consentKey) } == "granted" }
    var asked: Bool { preferences.withLock { $0?.string(forKey: Self.consentKey) } != nil }

    func setConsent(_ enabled: Bool) { preferences.withLock { $0?.set(enabled ? "granted" : "denied", forKey: Self.consentKey) } }

    var lastPingDay: String? {
        get { preferences.withLock { $0?.string(forKey: Self.lastPingKey) } }
        set { preferences.withLock { $0?.set(newValue, forKey: Self.lastPingKey) } }
    }
}

/// Told about Cuti-E pushes: a new message arrived, or the user tapped one.
public protocol CutiEPushNotificationDelegate: AnyObject {
    func cutiEDidReceiveMessage(conversationId: String, messagePreview: String?)
    func cutiEShouldOpenConversation(conversationId: String)
}

extension CutiEPushNotificationDelegate {
    public func cutiEDidReceiveMessage(conversationId: String, messagePreview: String?) {}
    public func cutiEShouldOpenConversation(conversationId: String) {}
}

/// Asks the user for permission to show notifications and says where it stands; on Apple
/// platforms the user notification center, elsewhere what the app provides.
public protocol PushPermissionRequester: Sendable {
    func requestAuthorization() async -> Bool
    /// Where the user's permission stands now.
    func authorizationStatus() async -> UNAuthorizationStatus
}

extension PushPermissionRequester {
    public func authorizationStatus() async -> UNAuthorizationStatus { .notDetermined }
}

/// Asks the platform for this device's APNs token, which arrives later in the app delegate's
/// `didRegisterForRemoteNotificationsWithDeviceToken` (pass it to
/// ``CutiEPushNotifications/didRegisterForRemoteNotifications(withDeviceToken:)``). On iOS,
/// `UIApplication.shared.registerForRemoteNotifications()`; elsewhere what the app provides.
public protocol RemoteNotificationRegistrar: Sendable {
    func registerForRemoteNotifications() async
}

#if !canImport(UserNotifications)
/// Where the user's permission for notifications stands: the values of Apple's
/// `UNAuthorizationStatus`, for platforms without UserNotifications.
public enum UNAuthorizationStatus: Int, Sendable {
    case notDetermined = 0, denied, authorized, provisional, ephemeral
}
#endif

/// Push notifications as the Cuti-E SDK's `CutiEPushNotifications`: permission, the device
/// token, and what a Cuti-E push means (its `conversation_id`).
///
/// Granted permission registers for remote notifications at once, so the token reaches the
/// app delegate and, through ``didRegisterForRemoteNotifications(withDeviceToken:)``, the
/// service. A token that arrives before the SDK is configured is kept and sent once it is.
public final class CutiEPushNotifications: NSObject, @unchecked Sendable {
    private let lock = NSLock()
    private weak var delegateStorage: (any CutiEPushNotificationDelegate)?
    private var requester: (any PushPermissionRequester)?
    private var registrar: (any RemoteNotificationRegistrar)?
    private var enabled = false
    private var pendingToken: String?
    private var lastFailure: String?
    private weak var owner: CutiE?

    override init() {}

    /// The push notifications of ``CutiE/shared`` (the Cuti-E SDK's singleton).
    public static var shared: CutiEPushNotifications { CutiE.shared.pushNotifications }

    func attach(_ cutie: CutiE) { lock.withLock { owner = cutie } }

    private var cutie: CutiE? { lock.withLock { owner } }

    public weak var delegate: (any CutiEPushNotificationDelegate)? {
        get { lock.withLock { delegateStorage } }
        set { lock.withLock { delegateStorage = newValue } }
    }

    /// Whether the user allowed notifications, as last asked.
    public var isEnabled: Bool { lock.withLock { enabled } }

    /// Why the platform last refused to register for remote notifications, if it did.
    public var registrationFailure: String? { lock.withLock { lastFailure } }

    /// How permission is asked (the platform's notification center by default).
    public func setPermissionRequester(_ requester: (any PushPermissionRequester)?) { lock.withLock { self.requester = requester } }

    /// How the device token is asked for (`UIApplication` on iOS by default).
    public func setRemoteNotificationRegistrar(_ registrar: (any RemoteNotificationRegistrar)?) { lock.withLock { self.registrar = registrar } }

    private var currentRequester: (any PushPermissionRequester)? { lock.withLock { self.requester } ?? Self.platformRequester }

    /// Asks the user to allow notifications (alert, badge, sound); when they do, registers for
    /// remote notifications.
    public func requestPermission() async -> Bool {
        let granted = await currentRequester?.requestAuthorization() ?? false
        lock.withLock { enabled = granted }
        if granted { await askForDeviceToken() }
        return granted
    }

    public func requestPermission(completion: @escaping @Sendable (Bool) -> Void) {
        Task { completion(await requestPermission()) }
    }

    /// Where the user's permission stands, without asking.
    public func checkPermissionStatus(completion: @escaping @Sendable (UNAuthorizationStatus) -> Void) {
        let requester = currentRequester
        Task {
            let status = await requester?.authorizationStatus() ?? .notDetermined
            lock.withLock { enabled = status == .authorized }
            completion(status)
        }
    }

    /// Asks the platform for the device token (the answer comes to the app delegate).
    public func registerForRemoteNotifications() {
        Task { await askForDeviceToken() }
    }

    private func askForDeviceToken() async {
        await (lock.withLock { registrar } ?? Self.platformRegistrar)?.registerForRemoteNotifications()
    }

    /// The app delegate's `didFailToRegisterForRemoteNotificationsWithError`: kept as
    /// ``registrationFailure``; pushes stay off until a token arrives.
    public func didFailToRegisterForRemoteNotifications(withError error: any Error) {
        lock.withLock { lastFailure = String(describing: error) }
    }

    static var platformRequester: (any PushPermissionRequester)? {
        #if canImport(UserNotifications) && !os(Linux)
        return UserNotificationsRequester()
        #else
        return nil
        #endif
    }

    static var platformRegistrar: (any RemoteNotificationRegistrar)? {
        #if canImport(UIKit) && os(iOS)
        return UIApplicationRegistrar()
        #else
        return nil
        #endif
    }

    /// Sends a token that arrived before the SDK was configured.
    func sendPendingToken() {
        guard let token = lock.withLock({ () -> String? in defer { pendingToken = nil }; return pendingToken }) else { return }
        registerToken(token)
    }

    /// The token as the APNs callback gives it (bytes), registered as hexadecimal.
    public func didRegisterForRemoteNotifications(withDeviceToken deviceToken: Data) {
        registerToken(Hex.encode(deviceToken))
    }

    /// Why a token cannot be an APNs device token (32 to 200 hexadecimal characters), or nil.
    public func validatePushToken(_ token: String) -> CutiEError? {
        if token.count < 32 { return .invalidPushToken("Token too short (minimum 32 characters)") }
        if token.count > 200 { return .invalidPushToken("Token too long (maximum 200 characters)") }
        if !token.allSatisfy({ $0.isASCII && $0.isHexDigit }) { return .invalidPushToken("Token must contain only hexadecimal characters (0-9, a-f)") }
        return nil
    }

    /// Checks the token and registers it with the service in the background.
    @discardableResult
    public func registerToken(_ token: String) -> Result<Void, CutiEError> {
        if let problem = validatePushToken(token) { return .failure(problem) }
        guard let cutie, cutie.isConfigured else {
            lock.withLock { pendingToken = token }
            return .failure(.notConfigured)
        }
        lock.withLock { lastFailure = nil }
        Task { try? await cutie.registerPushToken(hex: token.lowercased()) }
        return .success(())
    }

    /// Stops pushes to this device.
    public func unregisterToken(completion: (@Sendable (Result<Void, CutiEError>) -> Void)? = nil) {
        guard let cutie else { completion?(.failure(.notConfigured)); return }
        Task {
            do throws(CutiEError) {
                try await cutie.unregisterForPushNotifications()
                completion?(.success(()))
            } catch {
                completion?(.failure(error))
            }
        }
    }

    public func clearBadgeCount() { cutie?.clearBadgeCount() }

    /// Whether a push is Cuti-E's (it names a conversation).
    public func isCutiENotification(_ userInfo: [AnyHashable: Any]) -> Bool {
        (userInfo["conversation_id"] as? String).map { !$0.isEmpty } ?? false
    }

    /// A push that arrived: the badge is updated and the delegate told. False when it is not Cuti-E's.
    @discardableResult
    public func handleNotification(_ userInfo: [AnyHashable: Any]) -> Bool {
        guard let id = cutie?.handleNotification(userInfo) else { return false }
        let aps = userInfo["aps"] as? [String: Any]
        let alert = aps?["alert"]
        let preview = (alert as? [String: Any])?["body"] as? String ?? alert as? String
        delegate?.cutiEDidReceiveMessage(conversationId: id, messagePreview: preview)
        return true
    }

    /// A push the user tapped: the delegate is asked to open its conversation.
    @discardableResult
    public func handleNotificationTap(_ userInfo: [AnyHashable: Any]) -> Bool {
        guard let id = cutie?.handleNotification(userInfo) else { return false }
        delegate?.cutiEShouldOpenConversation(conversationId: id)
        return true
    }
}

#if canImport(UserNotifications) && !os(Linux)
import UserNotifications

struct UserNotificationsRequester: PushPermissionRequester {
    func requestAuthorization() async -> Bool {
        (try? await UNUserNotificationCenter.current().requestAuthorization(options: [.alert, .badge, .sound])) ?? false
    }

    func authorizationStatus() async -> UNAuthorizationStatus {
        await UNUserNotificationCenter.current().notificationSettings().authorizationStatus
    }
}
#endif

#if canImport(UIKit) && os(iOS)
import UIKit

struct UIApplicationRegistrar: RemoteNotificationRegistrar {
    func registerForRemoteNotifications() async {
        await MainActor.run { UIApplication.shared.registerForRemoteNotifications() }
    }
}
#endif

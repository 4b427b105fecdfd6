import Foundation
import PurseFormats
import PurseKit
import Synchronization

/// Told when the user opens a push about a conversation.
public protocol CutiEDelegate: AnyObject, Sendable {
    func cutiE(didReceiveNotificationFor conversationId: String)
}

/// The SDK's entry point: `CutiE.shared.configure(appId:apiURL:)`, then conversations, the
/// inbox, push registration and device linking.
///
/// Every call registers the device on first use and signs its requests; errors are
/// ``CutiEError``.
public final class CutiE: Sendable {
    public static let shared = CutiE()

    /// The hosted service; `purse serve` answers the same API at its own URL.
    public static let defaultAPIURL = URL(string: "https://api.cuti-e.com")!

    struct State: Sendable {
        var client: CutiEAPIClient?
        var appAttest: CutiEAppAttest?
        var userID: String?
        var userName: String?
        var appVersion: String?
        var osVersion: String?
        var deviceModel: String?
        var badgeCount = 0
    }

    private let state = Mutex(State())
    private let delegateBox = Mutex<WeakDelegate>(WeakDelegate())
    /// Sets the app icon's badge (UNUserNotificationCenter on iOS); the SDK calls it with the unread count.
    private let badgeSetter = Mutex<(@Sendable (Int) -> Void)?>(nil)

    struct WeakDelegate: @unchecked Sendable { weak var value: (any CutiEDelegate)? }

    public init() {}

    // MARK: Configuration

    /// Configures the SDK with the app's id from the admin dashboard. With `useAppAttest`, the
    /// device attests a key on first use and signs an assertion into every request; with
    /// `certificatePinning` (Google Trust Services' roots by default), a server whose chain
    /// carries none of the pinned keys gets nothing.
    public func configure(appId: String, apiURL: URL = CutiE.defaultAPIURL, useAppAttest: Bool = false,
                          certificatePinning: CutiECertificatePinning? = CutiECertificatePinning()) {
        configure(appId: appId, apiURL: apiURL, transport: Self.defaultTransport(pinning: apiURL.scheme == "https" ? certificatePinning : nil),
                  store: Self.defaultStore(), preferences: UserDefaultsPreferences(), useAppAttest: useAppAttest)
    }

    /// URLSession, with the pinning delegate when pins are given. Elsewhere than Apple platforms
    /// URLSession cannot pin: pass `PinnedTLSTransport` (PurseKitAHC) to the full `configure`;
    /// asked to pin here, the SDK refuses to send rather than send unpinned.
    static func defaultTransport(pinning: CutiECertificatePinning?) -> any HTTPTransport {
        guard let pinning else { return URLSessionTransport() }
        #if canImport(Security) && canImport(Darwin)
        return URLSessionTransport(session: URLSession(configuration: .default, delegate: URLSessionPinningDelegate(pinning: pinning), delegateQueue: nil))
        #else
        _ = pinning
        return UnpinnableTransport()
        #endif
    }

    /// Configures the SDK with its parts given: the transport (AsyncHTTPClient on Linux, a test
    /// router, a pinned transport), where secrets and preferences go, App Attest, and the clock.
    /// `appAttestService` nil with `useAppAttest` picks the platform's (DeviceCheck, or the
    /// software attester).
    public func configure(appId: String, apiURL: URL, transport: any HTTPTransport, store: any SecureStore, preferences: any Preferences,
                          retry: RetryPolicy = RetryPolicy(), useAppAttest: Bool = false, appAttestService: (any AppAttestService)? = nil,
                          now: @escaping @Sendable () -> Date = Date.init) {
        let api = APIClient(session: ClientSession(baseURL: apiURL), transport: transport, retry: retry,
                            defaultHeaders: ["User-Agent": "CutiE-Swift/1.0"])
        let service = useAppAttest
            ? appAttestService ?? CutiEAppAttest.defaultService(apiURL: apiURL, appID: appId, transport: transport, store: store) : nil
        let client = CutiEAPIClient(appID: appId, api: api, store: store, preferences: preferences, appAttest: service, now: now)
        let attest = service == nil ? nil : CutiEAppAttest(client: client)
        state.withLock {
            $0.client = client
            $0.appAttest = attest
        }
    }

    /// App Attest, when configured with `useAppAttest`.
    public var appAttest: CutiEAppAttest? { state.withLock { $0.appAttest } }

    public var isConfigured: Bool { state.withLock { $0.client != nil } }

    public var delegate: (any CutiEDelegate)? {
        get { delegateBox.withLock { $0.value } }
        set { delegateBox.withLock { $0.value = newValue } }
    }

    /// What the conversations say about the app: sent with each new conversation.
    public func setAppContext(appVersion: String?, osVersion: String?, deviceModel: String?) {
        state.withLock {
            $0.appVersion = appVersion
            $0.osVersion = osVersion
            $0.deviceModel = deviceModel
        }
    }

    public func setUserId(_ userId: String?) { state.withLock { $0.userID = userId } }
    public func setUserName(_ userName: String?) { state.withLock { $0.userName = userName } }
    public func setBadgeHandler(_ handler: (@Sendable (Int) -> Void)?) { badgeSetter.withLock { $0 = handler } }

    /// This device's id (`device_<UUID>`), once configured.
    public var deviceID: String? { state.withLock { $0.client }?.deviceID }

    func client() throws -> CutiEAPIClient {
        guard let client = state.withLock({ $0.client }) else { throw CutiEError.notConfigured }
        return client
    }

    func call<T: Sendable>(_ body: (CutiEAPIClient) async throws -> T) async throws(CutiEError) -> T {
        do {
            return try await body(try client())
        } catch {
            throw CutiEError.from(error)
        }
    }

    // MARK: Conversations

    struct CreateBody: Encodable, Sendable {
        var category: String
        var initial_message: String
        var title: String?
        var user_id: String?
        var user_name: String?
        var app_version: String?
        var os_version: String?
        var device_model: String?
    }

    struct Created: Decodable, Sendable {
        var conversation_id: String
    }

    /// Starts a conversation; returns its id. `idempotencyKey` names the attempt: sending the same
    /// conversation again with it (after an answer was lost) starts it once.
    public func createConversation(category: ConversationCategory, message: String, title: String? = nil,
                                   idempotencyKey key: String = IdempotencyKey.make()) async throws(CutiEError) -> String {
        let trimmed = message.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .invalidRequest("Write a message first") }
        let context = state.withLock { $0 }
        let body = CreateBody(category: category.rawValue, initial_message: message, title: title?.isEmpty == true ? nil : title,
                              user_id: context.userID, user_name: context.userName, app_version: context.appVersion,
                              os_version: context.osVersion, device_model: context.deviceModel)
        return try await call { try await $0.send("POST", "/v1/conversations", body: body, idempotencyKey: key, as: Created.self).conversation_id }
    }

    struct ListBody: Decodable, Sendable {
        var conversations: [Conversation]
        var total_unread: Int
    }

    /// The inbox: this device's (and its linked devices') conversations, newest activity first.
    public func getConversations() async throws(CutiEError) -> [Conversation] {
        try await inbox().conversations
    }

    /// The inbox and its unread total (which also sets the badge).
    public func inbox() async throws(CutiEError) -> (conversations: [Conversation], totalUnread: Int) {
        let list = try await call { try await $0.send("GET", "/v1/conversations", as: ListBody.self) }
        setBadge(list.total_unread)
        return (list.conversations, list.total_unread)
    }

    public func getConversation(id: String) async throws(CutiEError) -> Conversation {
        try await call { try await $0.send("GET", "/v1/conversations/\(Self.pathSegment(id))", as: Conversation.self) }
    }

    struct MessageBody: Encodable, Sendable {
        var message: String
        var client_id: String?
        var user_name: String?
    }

    /// Sends a message. `clientId` names it across retries: sending again with the same id
    /// stores it once (the conversation screen's retry of a failed message).
    public func sendMessage(_ message: String, to conversationId: String, clientId: String = IdempotencyKey.make()) async throws(CutiEError) -> Message {
        guard !message.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { throw .invalidRequest("Write a message first") }
        let name = state.withLock { $0.userName }
        return try await call {
            try await $0.send("POST", "/v1/conversations/\(Self.pathSegment(conversationId))/messages",
                              body: MessageBody(message: message, client_id: clientId, user_name: name), idempotencyKey: clientId, as: Message.self)
        }
    }

    /// How many replies from support the user has not read (on all linked devices).
    public func getUnreadCount() async throws(CutiEError) -> Int {
        let list = try await call { try await $0.send("GET", "/v1/conversations", query: [URLQueryItem(name: "limit", value: "1")], as: ListBody.self) }
        setBadge(list.total_unread)
        return list.total_unread
    }

    struct Marked: Decodable, Sendable { var marked: Int }

    public func markAllRead(conversationId: String) async throws(CutiEError) {
        _ = try await call { try await $0.send("POST", "/v1/conversations/\(Self.pathSegment(conversationId))/messages/mark-all-read", as: Marked.self) }
        if let unread = try? await getUnreadCount() { setBadge(unread) }
    }

    // MARK: Push notifications

    struct PushBody: Encodable, Sendable {
        var platform: String
        var push_token: String
        var bundle_id: String?
        var environment: String
    }

    struct Success: Decodable, Sendable { var success: Bool }

    /// Registers the APNs device token the app got in `didRegisterForRemoteNotificationsWithDeviceToken`.
    /// - Parameter environment: `sandbox` for development builds, `production` for TestFlight and the App Store.
    public func registerForPushNotifications(deviceToken: Data, bundleId: String? = Bundle.main.bundleIdentifier,
                                             environment: String = "production") async throws(CutiEError) {
        let body = PushBody(platform: "ios", push_token: Hex.encode(deviceToken), bundle_id: bundleId, environment: environment)
        _ = try await call { try await $0.send("POST", "/v1/notifications/register", body: body, as: Success.self) }
    }

    /// The conversation a push is about (its `conversation_id`), told to the delegate; nil for
    /// pushes that are not Cuti-E's.
    @discardableResult
    public func handleNotification(_ userInfo: [AnyHashable: Any]) -> String? {
        guard let id = userInfo["conversation_id"] as? String, !id.isEmpty else { return nil }
        if let aps = userInfo["aps"] as? [String: Any], let badge = aps["badge"] as? Int { setBadge(badge) }
        delegate?.cutiE(didReceiveNotificationFor: id)
        return id
    }

    /// The unread count the SDK last learned (the app icon's badge).
    public var badgeCount: Int { state.withLock { $0.badgeCount } }

    public func clearBadgeCount() { setBadge(0) }

    func setBadge(_ count: Int) {
        state.withLock { $0.badgeCount = count }
        badgeSetter.withLock { $0 }?(count)
    }

    // MARK: Device linking

    /// A token for another device to scan; show ``linkQRCode(for:)``.
    public func initiateLinkToken() async throws(CutiEError) -> LinkToken {
        try await call { try await $0.send("POST", "/v1/sdk/link/initiate", as: LinkToken.self) }
    }

    /// The QR code of a link token (what the other device scans).
    public func linkQRCode(for token: LinkToken, errorCorrection: QRCode.ErrorCorrection = .medium) -> QRCode? {
        try? QRCode.encode(text: token.token, errorCorrection: errorCorrection)
    }

    struct ConfirmBody: Encodable, Sendable {
        var link_token: String
        var device_name: String?
    }

    struct Confirmed: Decodable, Sendable {
        var success: Bool
        var group_id: String
    }

    /// Joins the inbox of the device that showed `token`; returns the shared group's id.
    public func confirmLink(token: String, deviceName: String? = nil) async throws(CutiEError) -> String {
        let token = token.trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.hasPrefix("lnk_") else { throw .invalidRequest("That is not a Cuti-E link code") }
        return try await call { try await $0.send("POST", "/v1/sdk/link/confirm", body: ConfirmBody(link_token: token, device_name: deviceName), as: Confirmed.self).group_id }
    }

    struct StatusBody: Decodable, Sendable { var status: LinkStatus }

    public func checkLinkStatus(token: String) async throws(CutiEError) -> LinkStatus {
        try await call { try await $0.send("GET", "/v1/sdk/link/status/\(Self.pathSegment(token))", as: StatusBody.self).status }
    }

    struct Devices: Decodable, Sendable { var devices: [LinkedDevice] }

    public func getLinkedDevices() async throws(CutiEError) -> [LinkedDevice] {
        try await call { try await $0.send("GET", "/v1/sdk/link/devices", as: Devices.self).devices }
    }

    public func unlinkDevice(id: String) async throws(CutiEError) {
        _ = try await call { try await $0.send("DELETE", "/v1/sdk/link/devices/\(Self.pathSegment(id))", as: Success.self) }
    }

    // MARK: Subscriptions

    struct VerifyBody: Encodable, Sendable {
        var platform: String
        var signed_transaction: String
        var product_id: String
    }

    struct VerifiedSubscription: Decodable, Sendable {
        var tier: String
        var status: String
        var expires_at: Int64?
        var grace_period_expires_at: Int64?
    }

    /// This app's tier and this month's feedback against its limit.
    public struct Usage: Decodable, Sendable, Equatable {
        public var tier: String
        public var status: String
        public var period: String
        public var feedback_received: Int64
        public var limit: Int64?
        public var remaining: Int64?
    }

    /// Sends a verified StoreKit transaction (its JWS) to the backend, which verifies it again
    /// and records the app's tier.
    func verifySubscription(signedTransaction: String, productID: String) async throws(CutiEError) -> VerifiedSubscription {
        #if os(macOS)
        let platform = "macos"
        #else
        let platform = "ios"
        #endif
        let body = VerifyBody(platform: platform, signed_transaction: signedTransaction, product_id: productID)
        return try await call { try await $0.send("POST", "/v1/subscription/verify", body: body, idempotencyKey: IdempotencyKey.make(), as: VerifiedSubscription.self) }
    }

    public func getUsage() async throws(CutiEError) -> Usage {
        try await call { try await $0.send("GET", "/v1/usage", as: Usage.self) }
    }

    // MARK: Helpers

    static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-_."))) ?? text
    }

    static func defaultStore() -> any SecureStore {
        #if canImport(Security)
        KeychainSecureStore(service: "com.cutie.sdk")
        #else
        EncryptedFileSecureStore(directory: EncryptedFileSecureStore.defaultDirectory())
        #endif
    }
}

/// Refuses every request: pinning was asked for where this transport cannot pin.
struct UnpinnableTransport: HTTPTransport {
    func send(_ request: TransportRequest) async throws -> TransportResponse {
        throw CertificatePinningError(host: request.url.host ?? "the server")
    }
}

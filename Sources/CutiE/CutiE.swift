import Foundation
import HTTPTypes
import PurseFormats
import PurseKit
import PurseHTTP
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
        var appBuild: String?
        var deviceContext: DeviceContextConfig = .none
        var badgeCount = 0
    }

    let state = Mutex(State())
    let pushes = CutiEPushNotifications()
    let analytics = CutiEAnalyticsConsent()
    private let delegateBox = Mutex<WeakDelegate>(WeakDelegate())
    /// Sets the app icon's badge (UNUserNotificationCenter on iOS); the SDK calls it with the unread count.
    private let badgeSetter = Mutex<(@Sendable (Int) -> Void)?>(nil)

    struct WeakDelegate: @unchecked Sendable { weak var value: (any CutiEDelegate)? }

    public init() {
        pushes.attach(self)
    }

    // MARK: Configuration

    /// Configures the SDK with the app's id from the admin dashboard, as the Cuti-E SDK's
    /// `configure(appId:apiURL:useAppAttest:deviceContext:)`: `apiURL` the service (the hosted
    /// one, or `purse serve`'s URL); with `useAppAttest`, the device attests a key on first use and
    /// signs an assertion into every request; `deviceContext`, what new conversations say about
    /// the device. Connections to the hosted service's hosts are pinned (Google Trust Services'
    /// roots); others are validated as usual.
    public func configure(appId: String, apiURL: String = CutiE.defaultAPIURL.absoluteString, useAppAttest: Bool = false,
                          deviceContext: DeviceContextConfig = .none) {
        guard let url = URL(string: apiURL), url.scheme != nil, url.host != nil else {
            state.withLock { $0.client = nil }
            return
        }
        configure(appId: appId, apiURL: url, useAppAttest: useAppAttest, deviceContext: deviceContext)
    }

    /// ``configure(appId:apiURL:useAppAttest:deviceContext:)`` with a URL, and the pinning given:
    /// a pinned host's server whose chain carries none of the pinned keys gets nothing.
    public func configure(appId: String, apiURL: URL, useAppAttest: Bool = false, deviceContext: DeviceContextConfig = .none,
                          certificatePinning: CutiECertificatePinning? = CutiECertificatePinning()) {
        let pinning = apiURL.scheme == "https" && certificatePinning?.applies(to: apiURL.host ?? "") == true ? certificatePinning : nil
        configure(appId: appId, apiURL: apiURL, transport: Self.defaultTransport(pinning: pinning),
                  store: Self.defaultStore(), preferences: UserDefaultsPreferences(), useAppAttest: useAppAttest)
        setDeviceContext(deviceContext)
    }

    /// URLSession requiring TLS 1.3 where the platform lets us say so, with the pinning delegate
    /// when pins are given. Elsewhere than Apple platforms URLSession cannot pin: pass
    /// `PinnedTLSTransport` (PurseHTTPNIO) to the full `configure`; asked to pin here, the SDK
    /// refuses to send rather than send unpinned.
    static func defaultTransport(pinning: CutiECertificatePinning?) -> any HTTPTransport {
        #if canImport(Security) && canImport(Darwin)
        let configuration = URLSessionConfiguration.default
        configuration.tlsMinimumSupportedProtocolVersion = .TLSv13
        let delegate = pinning.map { URLSessionPinningDelegate(pinning: $0) }
        return URLSessionTransport(session: URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil))
        #else
        guard pinning == nil else { return UnpinnableTransport() }
        return URLSessionTransport()
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
                            defaultHeaderFields: [.userAgent: "CutiE-Swift/1.0"])
        let service = useAppAttest
            ? appAttestService ?? CutiEAppAttest.defaultService(apiURL: apiURL, appID: appId, transport: transport, store: store) : nil
        let client = CutiEAPIClient(appID: appId, api: api, store: store, preferences: preferences, appAttest: service, now: now)
        let attest = CutiEAppAttest(client: service == nil ? nil : client)
        state.withLock {
            $0.client = client
            $0.appAttest = attest
        }
        analytics.use(preferences)
        pushes.sendPendingToken()
        Task { await sendActivityPingIfDue() }
    }

    /// The Cuti-E SDK's older form, from when apps had an API key: the key is not needed and
    /// is ignored.
    @available(*, deprecated, message: "Cuti-E needs no API key: call configure(appId:apiURL:)")
    public func configure(apiKey: String, appId: String, apiURL: String = CutiE.defaultAPIURL.absoluteString) {
        configure(appId: appId, apiURL: apiURL)
    }

    /// What the SDK was configured with, or nil before ``configure(appId:apiURL:useAppAttest:deviceContext:)``.
    public var configuration: CutiEConfiguration? {
        let snapshot = state.withLock { $0 }
        guard let client = snapshot.client else { return nil }
        return CutiEConfiguration(apiURL: client.api.session.baseURL.absoluteString, deviceID: client.deviceID, appId: client.appID,
                                  useAppAttest: snapshot.appAttest?.client != nil, deviceContext: snapshot.deviceContext,
                                  userID: snapshot.userID, userName: snapshot.userName, appVersion: snapshot.appVersion, appBuild: snapshot.appBuild)
    }

    /// App Attest: supported and in use when configured with `useAppAttest`.
    public var appAttest: CutiEAppAttest { state.withLock { $0.appAttest } ?? CutiEAppAttest(client: nil) }

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
        var language: String?
        var country: String?
    }

    struct Created: Decodable, Sendable {
        var conversation_id: String
    }

    /// Starts a conversation; returns its id. `idempotencyKey` names the attempt: sending the same
    /// conversation again with it (after an answer was lost) starts it once.
    public func createConversation(category: ConversationCategory, message: String, title: String? = nil,
                                   idempotencyKey key: String = IdempotencyKey.make()) async throws(CutiEError) -> String {
        let trimmed = message.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .invalidRequest }
        let context = state.withLock { $0 }
        let fields = context.deviceContext.enabledFields
        let locale = Self.localeContext
        let body = CreateBody(category: category.rawValue, initial_message: message, title: title?.isEmpty == true ? nil : title,
                              user_id: context.userID, user_name: context.userName, app_version: context.appVersion,
                              os_version: context.osVersion, device_model: context.deviceModel,
                              language: fields.contains(.language) ? locale.language : nil, country: fields.contains(.country) ? locale.country : nil)
        return try await call { try await $0.send(.post, "/v1/conversations", body: body, idempotencyKey: key, as: Created.self).conversation_id }
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
        let list = try await call { try await $0.send(.get, "/v1/conversations", as: ListBody.self) }
        setBadge(list.total_unread)
        return (list.conversations, list.total_unread)
    }

    public func getConversation(id: String) async throws(CutiEError) -> Conversation {
        try await call { try await $0.send(.get, "/v1/conversations/\(Self.pathSegment(id))", as: Conversation.self) }
    }

    struct MessageBody: Encodable, Sendable {
        var message: String
        var client_id: String?
        var user_name: String?
    }

    /// Sends a message. `clientId` names it across retries: sending again with the same id
    /// stores it once (the conversation screen's retry of a failed message).
    public func sendMessage(_ message: String, to conversationId: String, clientId: String = IdempotencyKey.make()) async throws(CutiEError) -> Message {
        guard !message.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else { throw .invalidRequest }
        let name = state.withLock { $0.userName }
        return try await call {
            try await $0.send(.post, "/v1/conversations/\(Self.pathSegment(conversationId))/messages",
                              body: MessageBody(message: message, client_id: clientId, user_name: name), idempotencyKey: clientId, as: Message.self)
        }
    }

    /// How many replies from support the user has not read (on all linked devices).
    public func getUnreadCount() async throws(CutiEError) -> Int {
        let list = try await call { try await $0.send(.get, "/v1/conversations", query: [URLQueryItem(name: "limit", value: "1")], as: ListBody.self) }
        setBadge(list.total_unread)
        return list.total_unread
    }

    struct Marked: Decodable, Sendable { var marked: Int }

    public func markAllRead(conversationId: String) async throws(CutiEError) {
        _ = try await call { try await $0.send(.post, "/v1/conversations/\(Self.pathSegment(conversationId))/messages/mark-all-read", as: Marked.self) }
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
        try await registerPushToken(hex: Hex.encode(deviceToken), bundleId: bundleId, environment: environment)
    }

    func registerPushToken(hex: String, bundleId: String? = Bundle.main.bundleIdentifier, environment: String = "production") async throws(CutiEError) {
        let body = PushBody(platform: "ios", push_token: hex, bundle_id: bundleId, environment: environment)
        _ = try await call { try await $0.send(.post, "/v1/notifications/register", body: body, as: Success.self) }
    }

    struct UnregisterBody: Encodable, Sendable { var platform: String }

    /// Stops pushes to this device.
    public func unregisterForPushNotifications() async throws(CutiEError) {
        _ = try await call { try await $0.send(.delete, "/v1/notifications/unregister", body: UnregisterBody(platform: "ios"), as: Success.self) }
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
        try await call { try await $0.send(.post, "/v1/sdk/link/initiate", as: LinkToken.self) }
    }

    /// The QR code of a link token (what the other device scans).
    public func linkQRCode(for token: LinkToken, errorCorrection: QRCode.ErrorCorrection = .medium) -> QRCode? {
        try? QRCode.encode(text: token.linkToken, errorCorrection: errorCorrection)
    }

    struct ConfirmBody: Encodable, Sendable {
        var link_token: String
        var device_name: String?
    }

    /// Joins the inbox of the device that showed `token`; answers the shared group.
    public func confirmLink(token: String, deviceName: String? = nil) async throws(CutiEError) -> LinkConfirmResponse {
        let token = token.trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.hasPrefix("lnk_") else { throw .invalidRequest }
        return try await call { try await $0.send(.post, "/v1/sdk/link/confirm", body: ConfirmBody(link_token: token, device_name: deviceName), as: LinkConfirmResponse.self) }
    }

    public func checkLinkStatus(token: String) async throws(CutiEError) -> LinkStatusResponse {
        try await call { try await $0.send(.get, "/v1/sdk/link/status/\(Self.pathSegment(token))", as: LinkStatusResponse.self) }
    }

    public func getLinkedDevices() async throws(CutiEError) -> LinkedDevicesResponse {
        try await call { try await $0.send(.get, "/v1/sdk/link/devices", as: LinkedDevicesResponse.self) }
    }

    /// Gives a device of this inbox (this one, or another) an inbox of its own again.
    public func unlinkDevice(_ deviceId: String) async throws(CutiEError) {
        _ = try await call { try await $0.send(.delete, "/v1/sdk/link/devices/\(Self.pathSegment(deviceId))", as: Success.self) }
    }

    // MARK: Subscriptions

    struct VerifyBody: Encodable, Sendable {
        var platform: String
        var signed_transaction: String
        var product_id: String
    }

    struct VerifiedSubscription: Decodable, Sendable {
        var tier: CutiETier
        var status: PlanStatus
        var expires_at: Int64?
        var grace_period_expires_at: Int64?
    }

    /// This app's tier and this month's feedback against its limit.
    public struct Usage: Decodable, Sendable, Equatable {
        public var tier: CutiETier
        public var status: PlanStatus
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
        return try await call { try await $0.send(.post, "/v1/subscription/verify", body: body, idempotencyKey: IdempotencyKey.make(), as: VerifiedSubscription.self) }
    }

    public func getUsage() async throws(CutiEError) -> Usage {
        try await call { try await $0.send(.get, "/v1/usage", as: Usage.self) }
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

/// What the SDK is configured with (the Cuti-E SDK's `CutiEConfiguration`): a snapshot taken
/// when ``CutiE/configuration`` is read. `apiKey` is always nil: Cuti-E needs none.
public final class CutiEConfiguration: Sendable {
    public let apiKey: String?
    public let apiURL: String
    public let deviceID: String
    public let appId: String
    private let details: Mutex<(userID: String?, userName: String?, appVersion: String?, appBuild: String?)>
    public let useAppAttest: Bool
    public let deviceContext: DeviceContextConfig

    public var userID: String? {
        get { details.withLock { $0.userID } }
        set { details.withLock { $0.userID = newValue } }
    }

    public var userName: String? {
        get { details.withLock { $0.userName } }
        set { details.withLock { $0.userName = newValue } }
    }

    public var appVersion: String? {
        get { details.withLock { $0.appVersion } }
        set { details.withLock { $0.appVersion = newValue } }
    }

    public var appBuild: String? {
        get { details.withLock { $0.appBuild } }
        set { details.withLock { $0.appBuild = newValue } }
    }

    init(apiURL: String, deviceID: String, appId: String, useAppAttest: Bool, deviceContext: DeviceContextConfig,
         userID: String?, userName: String?, appVersion: String?, appBuild: String?) {
        apiKey = nil
        self.apiURL = apiURL
        self.deviceID = deviceID
        self.appId = appId
        self.useAppAttest = useAppAttest
        self.deviceContext = deviceContext
        details = Mutex((userID, userName, appVersion, appBuild))
    }
}

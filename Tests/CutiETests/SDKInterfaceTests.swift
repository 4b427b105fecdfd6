import CutiE
import CutiEService
import Foundation
import PurseDatabase
import PurseHTTP
import PurseKit
import PurseServer
import PurseTestSupport
import SQLKit
import Synchronization
import Testing

// A typical app's Cuti-E code, written against the Cuti-E SDK's documented interface (its
// README and public declarations, github cuti-e/ios-sdk 2.4): it must build against this
// module unchanged. Only the UIKit and SwiftUI presenters (`showInbox`, `showFeedback`,
// `requestAnalyticsConsent(from:)`, `CutiEInboxView`) are left out: SwiftUI and UIKit exist on
// Apple platforms only, and their behaviour is the view models' (CutiEViewModelTests).

/// At launch (`application(_:didFinishLaunchingWithOptions:)`).
func configureCutiEAtLaunch() {
    CutiE.shared.configure(appId: "your_app_id_here")
    CutiE.shared.configure(appId: "your_app_id", apiURL: "https://cutie-worker-sandbox.invotekas.workers.dev")
    CutiE.shared.configure(appId: "your_app_id", useAppAttest: true)
    CutiE.shared.configure(appId: "app_xxx", deviceContext: .none)
    CutiE.shared.configure(appId: "app_xxx", deviceContext: .custom([.language, .country]))
    CutiE.shared.setUserId("user123")
    CutiE.shared.setUserID("user123")
    CutiE.shared.setUserName("Ada")
    CutiE.shared.setAppMetadata(version: "1.2.0", build: "42")
    if CutiE.shared.isConfigured, CutiE.shared.appAttest.isSupported, CutiE.shared.appAttest.isAttested {
        print("Device is attested")
    }
}

/// The app's notification handler.
final class MyNotificationHandler: CutiEPushNotificationDelegate {
    let opened = Mutex<[String]>([])
    let received = Mutex<[String]>([])

    init(_ cutie: CutiE = .shared) {
        cutie.pushNotifications.delegate = self
    }

    func cutiEDidReceiveMessage(conversationId: String, messagePreview: String?) {
        received.withLock { $0.append(conversationId) }
    }

    func cutiEShouldOpenConversation(conversationId: String) {
        opened.withLock { $0.append(conversationId) }
    }
}

/// Feedback, the inbox, pushes and linking, as the README shows them (on `cutie`, which an app
/// spells `CutiE.shared`). Returns the conversation it made.
func typicalCutiEUse(_ cutie: CutiE, deviceToken: String, scannedToken: String?) async throws -> String {
    let created: String = try await withCheckedThrowingContinuation { continuation in
        cutie.createConversation(category: .bug, message: "The app crashes when I tap the save button", title: "Crash on Save") { result in
            switch result {
            case .success(let conversationId):
                print("Created conversation: \(conversationId)")
                continuation.resume(returning: conversationId)
            case .failure(let error):
                print(describe(error))
                continuation.resume(throwing: error)
            }
        }
    }
    let conversations = try await cutie.getConversations()
    for conversation in conversations {
        print(conversation.id, conversation.title ?? "", conversation.status.displayName, conversation.category?.displayName ?? "",
              conversation.messageCount ?? 0, conversation.createdAt, conversation.hasUnread)
    }
    let conversation = try await cutie.getConversation(id: created)
    for message in conversation.messages ?? [] where message.senderType == .admin {
        print(message.id, message.conversationID, message.senderName ?? "", message.message, message.isInternalNote, message.createdAt)
    }
    let message = try await cutie.sendMessage(conversationId: created, message: "Thanks for the help!")
    print(message.id, try await cutie.getUnreadCount())

    cutie.pushNotifications.requestPermission { granted in print(granted ? "Push notifications enabled" : "User denied push notifications") }
    _ = await cutie.pushNotifications.requestPermission()
    if case .failure(let error) = cutie.registerForPushNotifications(deviceToken: deviceToken) { print(error.localizedDescription) }
    let userInfo: [AnyHashable: Any] = ["conversation_id": created, "aps": ["alert": ["title": "Support", "body": "We replied"], "badge": 1]]
    if cutie.pushNotifications.isCutiENotification(userInfo) {
        cutie.pushNotifications.handleNotification(userInfo)
        cutie.pushNotifications.handleNotificationTap(userInfo)
    }
    cutie.pushNotifications.clearBadgeCount()

    if let scannedToken {
        let result = try await cutie.confirmLink(token: scannedToken, deviceName: "My iPad")
        print("Linked to group: \(result.groupId)")
    } else {
        let response = try await cutie.initiateLinkToken()
        let qrCodeData = response.linkToken
        let status = try await cutie.checkLinkStatus(token: qrCodeData)
        if status.status == .confirmed { print("Device linked successfully!") }
        print(response.expirationDate)
    }
    let devices = try await cutie.getLinkedDevices()
    for device in devices.devices { print("\(device.deviceName) - \(device.deviceId)", device.isCurrent, device.joinedDate) }

    cutie.setAnalyticsConsent(true)
    print(cutie.analyticsEnabled, cutie.hasAskedForAnalyticsConsent)
    return created
}

/// Every case of the SDK's error, switched over exhaustively (no `default`), as an app does.
func describe(_ error: CutiEError) -> String {
    switch error {
    case .notConfigured: "SDK not configured. Call CutiE.shared.configure() first"
    case .invalidAPIKey: "Invalid API key"
    case .networkError(let underlying):
        if let urlError = underlying as? URLError, urlError.code == .notConnectedToInternet { "Offline" } else { "Network error: \(underlying.localizedDescription)" }
    case .serverError(let code, let message): "Server error (\(code)): \(message)"
    case .decodingError(let details): details ?? "Failed to decode response"
    case .invalidRequest: "Invalid request"
    case .invalidPushToken(let reason): "Bad token: \(reason)"
    }
}

/// App Attest's error, exhaustively.
func describe(_ error: AppAttestError) -> String {
    switch error {
    case .notSupported: "not supported"
    case .notAttested: "not attested"
    case .hashingFailed: "hashing failed"
    case .keyGenerationFailed: "no key"
    case .attestationFailed(let underlying): "attestation: \(underlying.localizedDescription)"
    case .assertionFailed(let underlying): "assertion: \(underlying.localizedDescription)"
    case .serverError(let message): "server: \(message)"
    }
}

/// The app delegate's push callbacks, as the SDK's README wires them.
final class PushAppDelegate {
    func application(didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data) {
        CutiE.shared.pushNotifications.didRegisterForRemoteNotifications(withDeviceToken: deviceToken)
    }

    func application(didFailToRegisterForRemoteNotificationsWithError error: any Error) {
        CutiEPushNotifications.shared.didFailToRegisterForRemoteNotifications(withError: error)
    }
}

/// An app upgraded from the API-key era, which the SDK still accepts (deprecated).
@available(*, deprecated)
func configureTheOldWay() {
    CutiE.shared.configure(apiKey: "ck_legacy", appId: "your_app_id", apiURL: "https://api.cuti-e.com")
}

/// The rest of the SDK's public declarations: models made in the app (previews, tests), the
/// words' display forms, App Attest, the configuration, permission status.
func theRestOfTheInterface() async {
    let message = Message(id: "msg_1", conversationID: "conv_1", senderType: .admin, senderName: "Support", message: "Hi", createdAt: 1_700_000_000_000)
    let conversation = Conversation(id: "conv_1", customerID: "cus_1", title: "Crash", category: .bug, status: .open, priority: .high,
                                    assignedAdminID: "adm_1", messages: [message], createdAt: 1_700_000_000_000)
    print(conversation.customerID ?? "", conversation.assignedAdminID ?? "", conversation.appName ?? "", conversation.updatedDate, message.createdDate)
    for category in ConversationCategory.allCases { print(category.displayName, category.sfSymbol, category.color) }
    for status in ConversationStatus.allCases { print(status.displayName, status.color) }
    for priority in ConversationPriority.allCases { print(priority.displayName, priority.color) }
    for tag in conversation.tags ?? [] { print(tag.id, tag.conversationID, tag.tagName, tag.tagColor ?? "") }

    let attest = CutiEAppAttest.shared
    if attest.isSupported && !attest.isAttested { attest.reset() }
    do {
        _ = try await CutiE.shared.appAttest.generateAssertion(for: Data("payload".utf8))
    } catch let error as AppAttestError {
        print(describe(error))
    } catch {
        print(error.localizedDescription)
    }
    if let status = try? JSONDecoder().decode(AttestationStatus.self, from: Data(#"{"attested":true,"attestation":{"key_id":"k","environment":"production","sign_count":3,"created_at":1,"last_assertion_at":2}}"#.utf8)),
       let info = status.attestation {
        print(status.attested, info.keyId, info.environment, info.signCount, info.createdAt, info.lastAssertionAt ?? 0)
    }
    if let configuration = CutiE.shared.configuration {
        print(configuration.appId, configuration.apiURL, configuration.deviceID, configuration.apiKey ?? "-", configuration.useAppAttest,
              configuration.deviceContext, configuration.userID ?? "", configuration.userName ?? "", configuration.appVersion ?? "", configuration.appBuild ?? "")
    }
    CutiE.shared.analyticsEnabled = false
    CutiEPushNotifications.shared.checkPermissionStatus { status in
        switch status {
        case .authorized, .provisional, .ephemeral: print("allowed")
        case .denied: print("denied")
        case .notDetermined: print("not asked")
        @unknown default: print("unknown")
        }
    }
    CutiEPushNotifications.shared.registerForRemoteNotifications()
    if let problem = CutiEPushNotifications.shared.validatePushToken("abc") { print(describe(problem)) }
    CutiEPushNotifications.shared.unregisterToken { result in print(result) }
    print(CutiEPushNotifications.shared.isEnabled)
}

@Suite("Cuti-E: the Cuti-E SDK's interface")
struct SDKInterfaceTests {
    @Test("an app written against the Cuti-E SDK builds here and runs against our service")
    func typicalIntegration() async throws {
        try await CutiEHarness.withServer { h in
            let phone = h.device()
            let handler = MyNotificationHandler(phone.cutie)
            phone.cutie.setUserID("user123")
            phone.cutie.setAppMetadata(version: "1.2.0", build: "42")
            let tokenHex = String(repeating: "0a", count: 32)
            let id = try await typicalCutiEUse(phone.cutie, deviceToken: tokenHex, scannedToken: nil)
            #expect(handler.received.withLock { $0 } == [id] && handler.opened.withLock { $0 } == [id])
            guard case .failure(.invalidPushToken) = phone.cutie.registerForPushNotifications(deviceToken: "xyz") else {
                Issue.record("a 3-character push token was taken"); return
            }
            #expect(phone.cutie.analyticsEnabled && phone.cutie.hasAskedForAnalyticsConsent)
            // The token went to the service in the background; the day's ping too.
            for _ in 0..<50 {
                let rows = try await h.environment.database.read { db in
                    (try await db.raw("SELECT push_token FROM cutie_push_tokens").all().count, try await db.raw("SELECT app_id FROM cutie_activity").all().count)
                }
                if rows == (1, 1) { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            let tokens = try await h.environment.database.read { db in try await db.raw("SELECT push_token FROM cutie_push_tokens").all() }
            #expect(try tokens.map { try $0.decode(column: "push_token", as: String.self) } == [tokenHex])
            let pings = try await h.environment.database.read { db in try await db.raw("SELECT app_id FROM cutie_activity").all() }
            #expect(pings.count == 1)

            // A second device links by the first one's code, the README's target-device path.
            let tablet = h.device()
            let code = try await phone.cutie.initiateLinkToken()
            _ = try await typicalCutiEUse(tablet.cutie, deviceToken: String(repeating: "0b", count: 32), scannedToken: code.linkToken)
            #expect(try await phone.cutie.getLinkedDevices().linked)
            try await phone.cutie.unlinkDevice(tablet.cutie.deviceID ?? "")
            #expect(try await tablet.cutie.getLinkedDevices().linked == false)
        }
    }

    /// Stands in for the user's answer and for APNs: grants, and hands the app delegate a token.
    struct Granting: PushPermissionRequester {
        func requestAuthorization() async -> Bool { true }
        func authorizationStatus() async -> UNAuthorizationStatus { .authorized }
    }

    struct APNs: RemoteNotificationRegistrar {
        let push: CutiEPushNotifications
        let token: Data
        func registerForRemoteNotifications() async { push.didRegisterForRemoteNotifications(withDeviceToken: token) }
    }

    /// The push tokens the service holds, once the SDK's background registration has sent one
    /// (up to 2 s).
    static func pushTokens(in h: CutiEHarness) async throws -> [String] {
        var stored: [String] = []
        for _ in 0..<100 where stored.isEmpty {
            try await Task.sleep(for: .milliseconds(20))
            stored = try await h.environment.database.read { db in
                try await db.raw("SELECT push_token FROM cutie_push_tokens").all().map { try $0.decode(column: "push_token", as: String.self) }
            }
        }
        return stored
    }

    @Test("granted permission registers for remote notifications, and the token reaches the service")
    func permissionRegistersTheDevice() async throws {
        try await CutiEHarness.withServer { h in
            let phone = h.device()
            let token = Data((0..<32).map { UInt8($0) })
            phone.cutie.pushNotifications.setPermissionRequester(Granting())
            phone.cutie.pushNotifications.setRemoteNotificationRegistrar(APNs(push: phone.cutie.pushNotifications, token: token))
            _ = try await phone.cutie.getConversations()
            #expect(await phone.cutie.pushNotifications.requestPermission())
            let stored = try await Self.pushTokens(in: h)
            #expect(stored == [token.map { String(format: "%02x", $0) }.joined()])
            let status = await withCheckedContinuation { continuation in
                phone.cutie.pushNotifications.checkPermissionStatus { continuation.resume(returning: $0) }
            }
            #expect(status == .authorized && phone.cutie.pushNotifications.isEnabled)
            // A refusal by the platform is kept where the app can see it.
            phone.cutie.pushNotifications.didFailToRegisterForRemoteNotifications(withError: URLError(.notConnectedToInternet))
            #expect(phone.cutie.pushNotifications.registrationFailure != nil)
        }
    }

    @Test("a token that arrives before configure is sent once the SDK is configured")
    func earlyTokenWaits() async throws {
        try await CutiEHarness.withServer { h in
            let cutie = CutiE()
            let token = String(repeating: "ab", count: 32)
            guard case .failure(.notConfigured) = cutie.registerForPushNotifications(deviceToken: token) else {
                Issue.record("an unconfigured SDK took the token as sent"); return
            }
            let clock = h.server.clock
            cutie.configure(appId: "app_sandbox", apiURL: URL(string: "http://localhost")!, transport: RouterTransport(client: h.client),
                            store: InMemorySecureStore(), preferences: InMemoryPreferences(), retry: RetryPolicy(maxAttempts: 1), now: { clock.now })
            let stored = try await Self.pushTokens(in: h)
            #expect(stored == [token])
        }
    }

    @Test("the SDK's errors convert as its own did: every HTTP refusal is serverError with the service's words")
    func errorsAsTheSDKs() {
        #expect(CutiEError(PurseError.server(status: 404, message: "Conversation not found")) == .serverError(404, "Conversation not found"))
        #expect(describe(CutiEError(PurseError.offline("no route"))) == "Offline")
        #expect(CutiEError.serverError(503, "down").isRetryable && !CutiEError.serverError(400, "bad").isRetryable)
        #expect(!CutiEError.networkError(URLError(.cancelled)).isRetryable && CutiEError.networkError(URLError(.timedOut)).isRetryable)
        #expect(CutiEError.serverError(409, "This conversation is closed").localizedDescription == "This conversation is closed")
    }

    @Test("pinning applies to the hosted service's hosts only; a self-hosted backend is validated as usual")
    func pinnedHosts() {
        let pinning = CutiECertificatePinning()
        #expect(pinning.applies(to: "api.cuti-e.com") && pinning.applies(to: "API.CUTI-E.COM") && pinning.applies(to: "x.invotekas.workers.dev"))
        #expect(!pinning.applies(to: "feedback.example.com") && !pinning.applies(to: "cuti-e.com.evil.example"))
        #expect(CutiECertificatePinning(hosts: ["feedback.example.com"]).applies(to: "feedback.example.com"))
    }
}

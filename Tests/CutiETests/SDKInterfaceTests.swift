import CutiE
import CutiEService
import Foundation
import PurseDatabase
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
                switch error {
                case .notConfigured: print("SDK not configured. Call CutiE.shared.configure() first")
                case .networkError(let underlyingError): print("Network error: \(underlyingError)")
                case .serverError(let code, let message): print("Server error (\(code)): \(message)")
                case .decodingError: print("Failed to decode response")
                case .invalidRequest: print("Invalid request")
                default: print("Error: \(error.localizedDescription)")
                }
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

    @Test("pinning applies to the hosted service's hosts only; a self-hosted backend is validated as usual")
    func pinnedHosts() {
        let pinning = CutiECertificatePinning()
        #expect(pinning.applies(to: "api.cuti-e.com") && pinning.applies(to: "API.CUTI-E.COM") && pinning.applies(to: "x.invotekas.workers.dev"))
        #expect(!pinning.applies(to: "feedback.example.com") && !pinning.applies(to: "cuti-e.com.evil.example"))
        #expect(CutiECertificatePinning(hosts: ["feedback.example.com"]).applies(to: "feedback.example.com"))
    }
}

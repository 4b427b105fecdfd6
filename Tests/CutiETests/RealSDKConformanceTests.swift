@testable import CutiE
@testable import CutiEService
import Crypto
import Foundation
import HTTPTypes
import PurseDatabase
import PurseFormats
import PurseKit
import PurseHTTP
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// The answers' shapes as the real Cuti-E SDK (github cuti-e/ios-sdk 2.4.x, `Models.swift`,
/// `CutiEAPIClient.swift`, `CutiEAppAttest.swift`) declares them: what it requires is required
/// here, with its types and coding keys, so an answer that decodes here decodes there.
enum RealSDK {
    struct RegisterResponse: Decodable { let deviceToken: String; let tokenId: String; let isNew: Bool }  // decoded with .convertFromSnakeCase

    struct CreateConversationResponse: Decodable {
        let conversationId: String; let status: String?; let messageId: String?; let createdAt: Int?
        enum CodingKeys: String, CodingKey { case conversationId = "conversation_id", status, messageId = "message_id", createdAt = "created_at" }
    }

    enum Category: String, Decodable { case bug, feature, question, feedback, other }
    enum Status: String, Decodable { case open, in_progress, waiting_user, waiting_admin, resolved, closed }
    enum Priority: String, Decodable { case low, normal, high, urgent }
    enum SenderType: String, Decodable { case user, admin, system }

    struct Conversation: Decodable {
        let id: String; let customerID: String?; let userID: String?; let userName: String?; let deviceID: String?; let title: String?
        let category: Category?; let status: Status; let priority: Priority?; let assignedAdminID: String?; let appId: String?; let appName: String?
        let messageCount: Int?; let unreadCount: Int?; let messages: [Message]?; let tags: [Tag]?; let createdAt: Int64; let updatedAt: Int64?
        enum CodingKeys: String, CodingKey {
            case id = "conversation_id", customerID = "customer_id", userID = "user_id", userName = "user_name", deviceID = "device_id", title, category, status
            case priority, assignedAdminID = "assigned_admin_id", appId = "app_id", appName = "app_name", messageCount = "message_count"
            case unreadCount = "unread_count", messages, tags, createdAt = "created_at", updatedAt = "updated_at"
        }
    }

    struct Message: Decodable {
        let id: String; let conversationID: String; let senderType: SenderType; let senderID: String?; let senderName: String?
        let senderAvatarUrl: String?; let message: String; let messageType: String; let isInternalNote: Bool; let createdAt: Int64
        enum CodingKeys: String, CodingKey {
            case id = "message_id", conversationID = "conversation_id", senderType = "sender_type", senderID = "sender_id", senderName = "sender_name"
            case senderAvatarUrl = "sender_avatar_url", message, messageType = "message_type", isInternalNote = "is_internal_note", createdAt = "created_at"
        }
    }

    struct Tag: Decodable {
        let id: String; let conversationID: String; let tagName: String; let tagColor: String?
        enum CodingKeys: String, CodingKey { case id = "tag_id", conversationID = "conversation_id", tagName = "tag_name", tagColor = "tag_color" }
    }

    struct ConversationsListResponse: Decodable {
        let conversations: [Conversation]; let totalUnread: Int?
        enum CodingKeys: String, CodingKey { case conversations, totalUnread = "total_unread" }
    }

    struct LinkTokenResponse: Decodable {
        let linkToken: String; let expiresAt: Int64; let expiresIn: Int; let hasExistingGroup: Bool
        enum CodingKeys: String, CodingKey { case linkToken = "link_token", expiresAt = "expires_at", expiresIn = "expires_in", hasExistingGroup = "has_existing_group" }
    }

    struct LinkConfirmResponse: Decodable {
        let success: Bool; let groupId: String; let message: String
        enum CodingKeys: String, CodingKey { case success, groupId = "group_id", message }
    }

    enum LinkTokenStatus: String, Decodable { case pending, confirmed, expired }

    struct LinkStatusResponse: Decodable {
        let status: LinkTokenStatus; let linkToken: String?; let groupId: String?; let targetDeviceName: String?; let confirmedAt: Int64?; let expiresAt: Int64?
        enum CodingKeys: String, CodingKey {
            case status, linkToken = "link_token", groupId = "group_id", targetDeviceName = "target_device_name", confirmedAt = "confirmed_at", expiresAt = "expires_at"
        }
    }

    struct LinkedDevice: Decodable {
        let deviceId: String; let deviceName: String; let joinedAt: Int64; let isPrimary: Bool; let isCurrent: Bool
        enum CodingKeys: String, CodingKey { case deviceId = "device_id", deviceName = "device_name", joinedAt = "joined_at", isPrimary = "is_primary", isCurrent = "is_current" }
    }

    struct LinkedDevicesResponse: Decodable {
        let linked: Bool; let groupId: String?; let devices: [LinkedDevice]
        enum CodingKeys: String, CodingKey { case linked, groupId = "group_id", devices }
    }

    struct UnlinkDeviceResponse: Decodable { let success: Bool; let message: String }

    struct AttestChallengeResponse: Decodable {
        let challenge: String; let expiresAt: Int64; let expiresIn: Int
        enum CodingKeys: String, CodingKey { case challenge, expiresAt = "expires_at", expiresIn = "expires_in" }
    }

    struct AttestResponse: Decodable {
        let success: Bool; let attestationId: String; let attested: Bool
        enum CodingKeys: String, CodingKey { case success, attestationId = "attestation_id", attested }
    }

    struct AttestationStatus: Decodable { let attested: Bool; let attestation: AttestationInfo? }

    struct AttestationInfo: Decodable {
        let keyId: String; let environment: String; let signCount: Int; let createdAt: Int64; let lastAssertionAt: Int64?
        enum CodingKeys: String, CodingKey { case keyId = "key_id", environment, signCount = "sign_count", createdAt = "created_at", lastAssertionAt = "last_assertion_at" }
    }

    struct EmptyResponse: Decodable {}
    struct ErrorResponse: Decodable { let error: String }
}

/// A device as the real SDK drives the service: its headers (`X-App-ID`, `X-Device-ID`,
/// `X-Device-Token`, `X-CutiE-SDK-Version`, never a signature or an Idempotency-Key), its bodies,
/// and its answer to a 401 (drop the token, register again with the same id).
struct RealSDKDevice {
    let harness: CutiEHarness
    let appID: String
    var deviceID = "device_" + UUID().uuidString
    var token: String?

    var headers: [String: String] {
        var headers = ["Content-Type": "application/json", "Accept": "application/json", "X-CutiE-SDK-Version": "2.4.1", "X-App-ID": appID, "X-Device-ID": deviceID]
        headers["X-Device-Token"] = token
        return headers
    }

    /// `registerDeviceToken`.
    mutating func register() async throws -> RealSDK.RegisterResponse {
        let body = try JSONSerialization.data(withJSONObject: ["app_version": "3.1", "app_id": appID, "os_version": "18.2", "device_model": "iPhone"])
        var registering = headers
        registering["X-Device-Token"] = nil
        let (status, data) = try await harness.rawData(.post, "/v1/device/register", body: body, headers: registering)
        #expect(status == .ok, "\(String(decoding: data, as: UTF8.self))")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let answer = try decoder.decode(RealSDK.RegisterResponse.self, from: data)
        token = answer.deviceToken
        return answer
    }

    /// `performRequest`: decodes a success with `T`, an error with the SDK's `ErrorResponse`.
    mutating func request<T: Decodable>(_ method: HTTPRequest.Method, _ endpoint: String, body: [String: Any]? = nil, as type: T.Type,
                                        sourceLocation: SourceLocation = #_sourceLocation) async throws -> Result<T, SDKFailure> {
        if token == nil { _ = try await register() }
        let (status, data) = try await harness.rawData(method, endpoint, body: try body.map { try JSONSerialization.data(withJSONObject: $0) }, headers: headers)
        if status.code >= 400 {
            if status == .unauthorized { token = nil }
            let error = try JSONDecoder().decode(RealSDK.ErrorResponse.self, from: data)
            return .failure(SDKFailure(status: status.code, message: error.error))
        }
        do {
            return .success(try JSONDecoder().decode(T.self, from: data))
        } catch {
            Issue.record("\(method) \(endpoint): the real SDK's \(T.self) does not decode \(String(decoding: data, as: UTF8.self)): \(error)", sourceLocation: sourceLocation)
            throw error
        }
    }

    mutating func success<T: Decodable>(_ method: HTTPRequest.Method, _ endpoint: String, body: [String: Any]? = nil, as type: T.Type,
                                        sourceLocation: SourceLocation = #_sourceLocation) async throws -> T {
        switch try await request(method, endpoint, body: body, as: type, sourceLocation: sourceLocation) {
        case .success(let value): return value
        case .failure(let failure):
            Issue.record("\(method) \(endpoint): \(failure.status) \(failure.message)", sourceLocation: sourceLocation)
            throw failure
        }
    }
}

struct SDKFailure: Error { let status: Int; let message: String }

@Suite("Cuti-E: the real SDK's requests and models")
struct RealSDKConformanceTests {
    /// Every call the real SDK makes, in its form, against our service; every answer decoded
    /// with the SDK's models.
    @Test("every call of the real SDK, as it sends it, answers in the shape its models decode", arguments: TestEngines.all)
    func realSDKJourney(engine: DatabaseEngine) async throws {
        try await CutiEHarness.withServer(engine: engine) { h in
            var phone = RealSDKDevice(harness: h, appID: "app_sandbox")
            let registered = try await phone.register()
            #expect(registered.isNew && registered.deviceToken.hasPrefix("cdt_"))

            // createConversation, with the device context the app opted into.
            let created = try await phone.success(.post, "/v1/conversations", body: [
                "category": "bug", "initial_message": "The export button does nothing", "app_id": "app_sandbox", "title": "Export", "user_id": "u-42",
                "user_name": "Ada", "app_version": "3.1", "os_version": "18.2", "device_model": "iPhone", "language": "nb", "country": "NO",
            ], as: RealSDK.CreateConversationResponse.self)
            #expect(created.status == "open" && created.createdAt != nil)
            let stored = try await h.environment.database.read { db in
                try await db.raw("SELECT language, country FROM cutie_conversations WHERE id = \(bind: created.conversationId)").first()
            }
            #expect(try stored?.decode(column: "language", as: String?.self) == "nb" && stored?.decode(column: "country", as: String?.self) == "NO")

            // Support answers; the SDK lists, counts unread, opens, marks read, replies.
            let admin = try await h.adminSession()
            #expect(try await h.adminReply(created.conversationId, "Fixed in 3.2", session: admin).0 == .created)
            let list = try await phone.success(.get, "/v1/conversations", as: RealSDK.ConversationsListResponse.self)
            #expect(list.conversations.count == 1 && list.totalUnread == 1 && list.conversations[0].status == .waiting_user)
            let unread = try await phone.success(.get, "/v1/conversations?limit=1", as: RealSDK.ConversationsListResponse.self)
            #expect(unread.totalUnread == 1)
            let conversation = try await phone.success(.get, "/v1/conversations/\(created.conversationId)", as: RealSDK.Conversation.self)
            #expect(conversation.messages?.map(\.senderType) == [.user, .admin] && conversation.category == .bug)
            _ = try await phone.success(.post, "/v1/conversations/\(created.conversationId)/messages/mark-all-read", as: RealSDK.EmptyResponse.self)
            let reply = try await phone.success(.post, "/v1/conversations/\(created.conversationId)/messages", body: ["message": "Thanks!", "user_name": "Ada"],
                                                as: RealSDK.Message.self)
            #expect(reply.senderType == .user && reply.messageType == "text" && !reply.isInternalNote)
            #expect(try await phone.success(.get, "/v1/conversations", as: RealSDK.ConversationsListResponse.self).totalUnread == 0)

            // Pushes: a 32-character token (the SDK's shortest), from an app extension.
            _ = try await phone.success(.post, "/v1/notifications/register", body: [
                "platform": "ios", "push_token": String(repeating: "ab", count: 16), "bundle_id": "com.purse.cutie.sandbox.widget", "user_id": "u-42",
                "app_version": "3.1", "os_version": "18.2", "device_model": "iPhone",
            ], as: RealSDK.EmptyResponse.self)
            _ = try await phone.success(.delete, "/v1/notifications/unregister", body: ["platform": "ios"], as: RealSDK.EmptyResponse.self)

            // Device linking: the phone shows a QR code, a tablet scans it.
            let link = try await phone.success(.post, "/v1/sdk/link/initiate", as: RealSDK.LinkTokenResponse.self)
            #expect(!link.hasExistingGroup && link.expiresIn > 0)
            var pending = try await phone.success(.get, "/v1/sdk/link/status/\(link.linkToken)", as: RealSDK.LinkStatusResponse.self)
            #expect(pending.status == .pending && pending.linkToken == link.linkToken && pending.confirmedAt == nil)
            var tablet = RealSDKDevice(harness: h, appID: "app_sandbox")
            let confirmed = try await tablet.success(.post, "/v1/sdk/link/confirm", body: ["link_token": link.linkToken, "device_name": "Ada's iPad"],
                                                     as: RealSDK.LinkConfirmResponse.self)
            #expect(confirmed.success && !confirmed.message.isEmpty)
            pending = try await phone.success(.get, "/v1/sdk/link/status/\(link.linkToken)", as: RealSDK.LinkStatusResponse.self)
            #expect(pending.status == .confirmed && pending.groupId == confirmed.groupId && pending.targetDeviceName == "Ada's iPad" && pending.confirmedAt != nil)
            let devices = try await tablet.success(.get, "/v1/sdk/link/devices", as: RealSDK.LinkedDevicesResponse.self)
            // The list names identities, never the ids the devices send (those are no credential,
            // but a list has no need of them).
            #expect(devices.linked && devices.devices.count == 2 && devices.devices.filter(\.isPrimary).count == 1)
            #expect(!devices.devices.map(\.deviceId).contains(phone.deviceID) && !devices.devices.map(\.deviceId).contains(tablet.deviceID))
            #expect(devices.devices.first { $0.isCurrent }?.deviceName == "Ada's iPad")
            #expect(try await tablet.success(.get, "/v1/conversations", as: RealSDK.ConversationsListResponse.self).conversations.count == 1)
            let unlinked = try await phone.success(.delete, "/v1/sdk/link/devices/\(tablet.deviceID)", as: RealSDK.UnlinkDeviceResponse.self)
            #expect(unlinked.success && !unlinked.message.isEmpty)
            #expect(try await tablet.success(.get, "/v1/sdk/link/devices", as: RealSDK.LinkedDevicesResponse.self).linked == false)

            // App Attest, as CutiEAppAttest does: challenge, attestKey over SHA-256("challenge|keyId"), submit.
            let challenge = try await phone.success(.post, "/v1/device/attest/challenge", as: RealSDK.AttestChallengeResponse.self)
            let service = SoftwareAppAttestService(sandboxURL: URL(string: "http://localhost")!, transport: RouterTransport(client: h.client), store: InMemorySecureStore(),
                                                   cutieAppID: "app_sandbox")
            let keyID = try await service.generateKey()
            let attestation = try await service.attestKey(keyID, clientDataHash: Data(SHA256.hash(data: Data("\(challenge.challenge)|\(keyID)".utf8))))
            let attested = try await phone.success(.post, "/v1/device/attest", body: ["key_id": keyID, "attestation": attestation.base64EncodedString()],
                                                   as: RealSDK.AttestResponse.self)
            #expect(attested.success && attested.attested && !attested.attestationId.isEmpty)
            var status = try await phone.success(.get, "/v1/device/attest/status", as: RealSDK.AttestationStatus.self)
            #expect(status.attested && status.attestation?.keyId == keyID && status.attestation?.signCount == 0)
            // submitAssertion: an assertion over client data the app chose.
            let clientData = "purchase:42"
            let assertion = try await service.generateAssertion(keyID, clientDataHash: Data(SHA256.hash(data: Data(clientData.utf8))))
            _ = try await phone.success(.post, "/v1/device/attest/assert", body: ["key_id": keyID, "assertion": assertion.base64EncodedString(), "client_data": clientData],
                                        as: RealSDK.EmptyResponse.self)
            // The same assertion again is a replay: 400, and the device keeps its token.
            let replayed = try await phone.request(.post, "/v1/device/attest/assert", body: ["key_id": keyID, "assertion": assertion.base64EncodedString(),
                                                                                           "client_data": clientData], as: RealSDK.EmptyResponse.self)
            guard case .failure(let replay) = replayed else { Issue.record("a replayed assertion was accepted"); return }
            #expect(replay.status == 400 && replay.message.contains("replay") && phone.token != nil)
            status = try await phone.success(.get, "/v1/device/attest/status", as: RealSDK.AttestationStatus.self)
            #expect(status.attestation?.signCount == 1 && status.attestation?.lastAssertionAt != nil)
            // The SDK's revokeAttestation sends no assertion: an attested key is forgotten only by
            // a request it asserted, so the revocation is refused with 403 (never 401: the SDK
            // keeps its token) and the device stays attested.
            guard case .failure(let revoke) = try await phone.request(.delete, "/v1/device/attest", as: RealSDK.EmptyResponse.self) else {
                Issue.record("an unasserted revocation was accepted"); return
            }
            #expect(revoke.status == 403 && phone.token != nil)
            #expect(try await phone.success(.get, "/v1/device/attest/status", as: RealSDK.AttestationStatus.self).attested == true)

            // The activity ping, with consent; without it nothing is stored.
            let hashed = Hex.encode(SHA256.hash(data: Data(phone.deviceID.utf8)))
            _ = try await phone.success(.post, "/v1/activity/ping", body: ["hashed_device_id": hashed, "consent": true, "language": "nb", "country": "NO", "app_version": "3.1"],
                                        as: RealSDK.EmptyResponse.self)
            _ = try await phone.success(.post, "/v1/activity/ping", body: ["hashed_device_id": String(hashed.reversed()), "consent": false], as: RealSDK.EmptyResponse.self)
            // Counted by the identity the token proves, not by the hash the device sends.
            let pings = try await h.environment.database.read { db in try await db.raw("SELECT hashed_device_id, language FROM cutie_activity").all() }
            #expect(try pings.count == 1 && pings.first?.decode(column: "language", as: String?.self) == "nb")

            // Errors come as {error} the SDK shows: an unknown conversation, a bad category.
            guard case .failure(let missing) = try await phone.request(.get, "/v1/conversations/conv_nope", as: RealSDK.Conversation.self) else {
                Issue.record("an unknown conversation answered"); return
            }
            #expect(missing.status == 404 && missing.message == "Conversation not found")
            guard case .failure(let bad) = try await phone.request(.post, "/v1/conversations", body: ["category": "rant", "initial_message": "x"],
                                                                    as: RealSDK.CreateConversationResponse.self) else {
                Issue.record("a bad category was accepted"); return
            }
            #expect(bad.status == 400 && bad.message == "category must be one of bug, feature, question, feedback, other")

            // Support revokes the token: a 401, the SDK drops it and registers again under its id.
            // Without its token it proves nothing, so it starts a new, empty inbox, and works on.
            try await h.environment.database.transaction { db in try await db.raw("UPDATE cutie_device_tokens SET revoked_at = 1").run() }
            guard case .failure(let revoked) = try await phone.request(.get, "/v1/conversations", as: RealSDK.ConversationsListResponse.self) else {
                Issue.record("a revoked token answered"); return
            }
            #expect(revoked.status == 401 && phone.token == nil)
            let again = try await phone.success(.get, "/v1/conversations", as: RealSDK.ConversationsListResponse.self)
            #expect(again.conversations.isEmpty && phone.token != nil)
            _ = try await phone.success(.post, "/v1/conversations", body: ["category": "bug", "initial_message": "Still there?"],
                                        as: RealSDK.CreateConversationResponse.self)
        }
    }
}

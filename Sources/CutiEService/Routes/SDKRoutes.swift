import Crypto
import CutiEVocabulary
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PurseDatabase
import PurseFormats
import PurseHTTP
import PurseServer
import SQLKit

/// What the SDK calls, under `/v1`: device registration, conversations and messages, push
/// registration and device linking. Every route but registration takes a signed request
/// (``DeviceAuthenticator``); a device reaches only its group's conversations — anything else
/// is 404, as if it did not exist.
struct SDKRoutes: Sendable {
    let environment: ServerEnvironment
    let configuration: CutiEConfiguration
    let auth: DeviceAuthenticator
    let limits: DeviceLimits

    static let notFound = APIError.notFound("Conversation not found")

    /// A signed route: the body collected (it is signed too), then the caller.
    ///
    /// A POST without an Idempotency-Key takes its signature as its key: the same signed bytes
    /// sent again within the signature window — a transport's retry, or a captured request played
    /// again — are answered from the first one's record and change nothing more.
    func signed(assertions: AssertionPolicy = .asApp, _ body: @escaping @Sendable (Request, ByteBuffer, DeviceCaller) async throws -> Response)
        -> @Sendable (Request, PurseRequestContext) async throws -> Response {
        { request, context in
            var request = request
            let buffer = try await request.collectJSONBody(context: context)
            var caller = try await auth.authenticate(request, body: buffer, assertions: assertions)
            caller.clientAddress = environment.clientAddress(of: request, context: context)
            if request.method == .post, request.headers[.idempotencyKey] == nil, let signature = request.headers[.requestSignature] {
                var head = request.head
                head.headerFields[.idempotencyKey] = "signature." + signature.lowercased().prefix(128)
                request = Request(head: head, body: .init(buffer: buffer))
            }
            return try await body(request, buffer, caller)
        }
    }

    func mount(on router: Router<PurseRequestContext>) {
        let v1 = router.group("v1")
        v1.post("device/register") { request, context in
            var request = request
            let body = try await request.collectJSONBody(context: context)
            return try await auth.register(request, body: body, address: environment.clientAddress(of: request, context: context), limits: limits)
        }
        v1.post("conversations", use: signed(createConversation))
        // The inbox is read most: the signature check and the listing share one read.
        v1.get("conversations") { request, _ in
            try request.requireOnlyQuery(["limit"])
            let limit = try Self.limit(request.uri.queryParameters.get("limit"))
            try auth.checkForm(request)
            let (caller, page) = try await environment.database.read { db in
                let caller = try await auth.authenticate(request, body: ByteBuffer(), in: db)
                return (caller, try await ConversationStore().list(group: caller.groupID, limit: limit, in: db))
            }
            try await auth.commitAssertion(caller)
            return try ConversationList(conversations: page.conversations, total_unread: page.totalUnread).response()
        }
        v1.get("conversations/{id}", use: signed { request, _, caller in
            let id = Self.conversationID(request)
            guard let conversation = try await environment.database.read({ db in
                try await ConversationStore().load(id, group: caller.groupID, reader: .user, withMessages: true, in: db)
            }) else { throw Self.notFound }
            return try Response.json(conversation)
        })
        v1.post("conversations/{id}/messages", use: signed(sendMessage))
        v1.post("conversations/{id}/messages/mark-all-read", use: signed { request, _, caller in
            let id = Self.conversationID(request)
            let marked = try await environment.database.transaction { db in
                guard try await Self.owns(id, caller: caller, in: db) else { throw Self.notFound }
                return try await ConversationStore().markRead(id, reader: .user, now: environment.now().epochMillis, in: db)
            }
            return try Response.json(MarkRead(success: true, marked: marked))
        })
        v1.post("notifications/register", use: signed(registerPush))
        // The Cuti-E SDK sends pings outside its token pipeline: a token is not required.
        v1.post("activity/ping") { request, context in
            var request = request
            let body = try await request.collectJSONBody(context: context)
            return try await activityPing(request, body: body, address: environment.clientAddress(of: request, context: context))
        }
        v1.delete("notifications/unregister", use: signed { _, _, caller in
            let now = environment.now().epochMillis
            try await environment.database.transaction { db in
                try await DeviceStore().deactivatePushTokens(app: caller.appID, device: caller.deviceID, now: now, in: db)
            }
            return try Response.json(Success(success: true))
        })
        LinkRoutes(routes: self).mount(on: v1)
        AppAttestRoutes(routes: self).mount(on: v1)
        SubscriptionRoutes(routes: self).mount(on: v1)
    }

    // MARK: Conversations

    struct CreateConversation: Decodable {
        var category: ConversationCategory
        var initial_message: String
        var title: String?
        var user_id: String?
        var user_name: String?
        var app_version: String?
        var os_version: String?
        var device_model: String?
        var app_id: String?
        var attachment_url: String?
        /// The device's language and region (`en`, `US`), which the SDK sends when the app opts in.
        var language: String?
        var country: String?
    }

    struct Created: Codable {
        var conversation_id: ConversationID
        var status: ConversationStatus
        var message_id: String
        var created_at: Int64
    }

    func createConversation(_ request: Request, body: ByteBuffer, caller: DeviceCaller) async throws -> Response {
        let input = try JSONBody.decode(CreateConversation.self, from: body)
        let category = input.category
        try Limits.text(input.initial_message, field: "initial_message", max: configuration.maxMessageLength)
        if let title = input.title { try Limits.text(title, field: "title", max: 200) }
        for (field, value) in [("user_id", input.user_id), ("user_name", input.user_name), ("app_version", input.app_version),
                               ("os_version", input.os_version), ("device_model", input.device_model)] {
            if let value { try Limits.text(value, field: field, max: 100, allowEmpty: true) }
        }
        let language = try Self.localeCode(input.language, field: "language", max: 16)
        let country = try Self.localeCode(input.country, field: "country", max: 8)
        if let appID = input.app_id, appID != caller.appID { throw APIError.badRequest("app_id must be the app of X-App-ID") }
        let attachment = try Self.attachment(input.attachment_url)
        let addressKey = caller.clientAddress.map { DeviceLimits.addressKey($0, app: caller.appID) }
        return try await environment.idempotent(request, body: body, user: caller.idempotencyOwner, keyRequired: false) { db in
            if let addressKey, try await QuotaStore().isBlocked(app: caller.appID, kind: .address, value: addressKey, in: db) {
                throw DeviceAuthenticator.blocked
            }
            try await limits.admitConversation(caller, now: environment.now(), in: db)
            // An attested device is one real device: it is not held by its network's share, so
            // users behind one carrier NAT are not shut out by each other.
            try await SubscriptionRoutes.countFeedback(app: caller.appID, address: caller.attested ? nil : caller.clientAddress, limits: limits,
                                                       now: environment.now(), in: db)
            let now = environment.now().epochMillis
            let id = ConversationID(RandomID.make("conv"))
            try await ConversationStore().create(ConversationStore.NewConversation(
                id: id, app: caller.appID, device: caller.deviceID, title: input.title, category: category, userID: input.user_id,
                userName: input.user_name, appVersion: input.app_version, osVersion: input.os_version, deviceModel: input.device_model,
                language: language, country: country, addressKey: addressKey), now: now, in: db)
            let (message, _) = try await ConversationStore().append(
                to: id, sender: .user, senderID: caller.deviceID, senderName: input.user_name, text: input.initial_message,
                attachmentURL: attachment, note: false, clientID: nil, now: now, in: db)
            // The first message leaves the conversation open, not waiting_admin.
            try await ConversationStore().setStatus(id, to: .open, in: db)
            try await DeviceStore().rememberUser(app: caller.appID, device: caller.deviceID, userID: input.user_id, userName: input.user_name, in: db)
            return (.created, try JSONCoding.encoder.encode(Created(conversation_id: id, status: .open, message_id: message.message_id, created_at: now)))
        }
    }

    struct SendMessage: Decodable {
        var message: String
        var attachment_url: String?
        var client_id: String?
        var user_name: String?
    }

    func sendMessage(_ request: Request, body: ByteBuffer, caller: DeviceCaller) async throws -> Response {
        let id = Self.conversationID(request)
        let input = try JSONBody.decode(SendMessage.self, from: body)
        try Limits.text(input.message, field: "message", max: configuration.maxMessageLength)
        if let clientID = input.client_id { try Limits.text(clientID, field: "client_id", max: 64) }
        if let name = input.user_name { try Limits.text(name, field: "user_name", max: 100, allowEmpty: true) }
        let attachment = try Self.attachment(input.attachment_url)
        return try await environment.idempotent(request, body: body, user: caller.idempotencyOwner, keyRequired: false) { db in
            guard let state = try await ConversationStore().state(of: id, in: db), state.group == caller.groupID else { throw Self.notFound }
            guard state.status != .closed else {
                throw APIError.conflict("This conversation is closed; start a new one")
            }
            let (message, isNew) = try await ConversationStore().append(
                to: id, sender: .user, senderID: caller.deviceID, senderName: input.user_name, text: input.message, attachmentURL: attachment,
                note: false, clientID: input.client_id, now: environment.now().epochMillis, in: db)
            return (isNew ? .created : .ok, message.json.data)
        }
    }

    // MARK: Push registration

    struct PushRegistration: Decodable {
        var platform: String
        var push_token: String
        var bundle_id: String?
        var environment: String?
        var user_id: String?
        var app_version: String?
        var os_version: String?
        var device_model: String?
    }

    func registerPush(_ request: Request, body: ByteBuffer, caller: DeviceCaller) async throws -> Response {
        let input = try JSONBody.decode(PushRegistration.self, from: body)
        guard ["ios", "macos"].contains(input.platform) else { throw APIError.badRequest("platform must be ios or macos") }
        let token = input.push_token.lowercased()
        // The Cuti-E SDK's rule: 32 to 200 hexadecimal characters.
        guard (32...200).contains(token.utf8.count), token.allSatisfy(\.isHexDigit) else {
            throw APIError.badRequest("push_token must be the APNs device token in hexadecimal (32 to 200 characters)")
        }
        let pushEnvironment = input.environment ?? "production"
        guard ["sandbox", "production"].contains(pushEnvironment) else { throw APIError.badRequest("environment must be sandbox or production") }
        try await environment.database.transaction { db in
            guard let app = try await CutiEApp.load(caller.appID, in: db) else { throw DeviceAuthenticator.unauthorized }
            // The app's bundle id, or one of its extensions' (`com.example.app.widget`): the SDK
            // sends the running bundle's id.
            if let bundle = input.bundle_id, bundle != app.bundleID, !bundle.hasPrefix(app.bundleID + ".") || bundle.utf8.count > 155 {
                throw APIError.badRequest("bundle_id \(bundle.prefix(155)) is not this app's (\(app.bundleID)) nor one of its extensions'")
            }
            try await DeviceStore().registerPushToken(app: caller.appID, device: caller.deviceID, platform: input.platform, token: token,
                                                      bundleID: app.bundleID, environment: pushEnvironment, now: environment.now().epochMillis, in: db)
        }
        return try Response.json(Success(success: true))
    }

    // MARK: Activity

    /// `POST /v1/activity/ping`: the SDK's opt-in analytics, at most once a day per device, sent
    /// with the app id and, when the device has one, its token. Only a ping with `consent: true`
    /// is recorded, with the context fields the app chose to send.
    ///
    /// `hashed_device_id` is the SHA-256 the SDK makes on the device, but anyone can make up
    /// fifty of them, so it is not what is counted. A ping counts one active device per proven
    /// identity (a valid device token) and day, or else per client address and day; only a ping
    /// that has neither (in-process callers) is counted by the hash it sends.
    struct ActivityPing: Decodable {
        var hashed_device_id: String
        var consent: Bool
        var language: String?
        var country: String?
        var app_version: String?
        var os_version: String?
        var device_model: String?
    }

    struct Recorded: Encodable {
        var success: Bool
        var recorded: Bool
    }

    func activityPing(_ request: Request, body: ByteBuffer, address: String?) async throws -> Response {
        let input = try JSONBody.decode(ActivityPing.self, from: body)
        guard input.hashed_device_id.utf8.count == 64, input.hashed_device_id.utf8.allSatisfy({ $0 < 0x80 && Character(UnicodeScalar($0)).isHexDigit }) else {
            throw APIError.badRequest("hashed_device_id must be the device id's SHA-256: 64 hexadecimal characters")
        }
        let language = try Self.localeCode(input.language, field: "language", max: 16)
        let country = try Self.localeCode(input.country, field: "country", max: 8)
        for (field, value) in [("app_version", input.app_version), ("os_version", input.os_version), ("device_model", input.device_model)] {
            if let value { try Limits.text(value, field: field, max: 100, allowEmpty: true) }
        }
        let app = try await environment.database.read { db in try await auth.app(of: request, in: db) }
        guard input.consent else { return try Response.json(Recorded(success: true, recorded: false)) }
        let counted: String
        if let identity = try await auth.possession(request, body: body, claimedID: request.headers[.deviceID] ?? "") {
            counted = Self.activityKey("identity", app: app.id, identity.deviceID)
        } else if let address {
            counted = Self.activityKey("address", app: app.id, address)
        } else {
            counted = input.hashed_device_id.lowercased()
        }
        let now = environment.now()
        let day = String(ISO8601DateFormatter.string(from: now, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate]).prefix(10))
        let ping = DeviceStore.Ping(app: app.id, day: day, hashedDeviceID: counted, language: language, country: country,
                                    appVersion: input.app_version, osVersion: input.os_version, deviceModel: input.device_model)
        try await environment.database.transaction { db in try await DeviceStore().recordActivity(ping, now: now.epochMillis, in: db) }
        return try Response.json(Recorded(success: true, recorded: true))
    }

    /// What an activity row counts, keyed and hashed so the table names no identity or address.
    static func activityKey(_ kind: String, app: String, _ value: String) -> String {
        Hex.encode(SHA256.hash(data: Data("cutie activity\u{0}\(kind)\u{0}\(app)\u{0}\(value)".utf8)))
    }

    /// A language or region code as the SDK sends it (`en`, `nb-NO`, `US`): letters, digits, `-`, `_`.
    static func localeCode(_ value: String?, field: String, max: Int) throws -> String? {
        guard let value, !value.isEmpty else { return nil }
        guard value.utf8.count <= max, value.utf8.allSatisfy({ $0 < 0x80 && (Character(UnicodeScalar($0)).isLetter || Character(UnicodeScalar($0)).isNumber || $0 == 0x2D || $0 == 0x5F) }) else {
            throw APIError.badRequest("\(field) must be a language or region code such as en or US")
        }
        return value
    }

    // MARK: Helpers

    struct ConversationList: Encodable {
        var conversations: [ConversationBody]
        var total_unread: Int

        /// The inbox as `Response.json` writes it, byte for byte, written field by field: the
        /// inbox is the SDK's most frequent read, and `JSONEncoder` was a seventh of its cost.
        /// A conversation with tags or messages (never in an inbox) goes through `JSONEncoder`.
        func response() throws -> Response {
            if let data = inboxData { return .jsonData(data) }
            return try Response.json(self)
        }

        /// The bytes, or nil when a conversation has tags or messages.
        var inboxData: Data? {
            guard conversations.allSatisfy({ $0.tags == nil && $0.messages == nil }) else { return nil }
            var list = JSONObjectWriter()
            list.field("conversations", conversations.map(\.inboxJSON))
            list.field("total_unread", total_unread)
            return list.data
        }
    }

    struct MarkRead: Encodable {
        var success: Bool
        var marked: Int
    }

    struct Success: Codable { var success: Bool }

    static func conversationID(_ request: Request) -> ConversationID {
        let parts = request.uri.path.split(separator: "/")
        guard let index = parts.firstIndex(of: "conversations"), index + 1 < parts.count else { return "" }
        return ConversationID(String(parts[index + 1]))
    }

    static func owns(_ conversation: ConversationID, caller: DeviceCaller, in db: any DatabaseSession) async throws -> Bool {
        try await ConversationStore().isInGroup(conversation, group: caller.groupID, in: db)
    }

    static func limit(_ text: String?) throws -> Int {
        guard let text else { return 50 }
        guard let limit = Int(text), (1...100).contains(limit) else { throw APIError.badRequest("limit must be 1 to 100") }
        return limit
    }

    /// An attachment is an https URL of an image the app uploaded elsewhere (at most 2048 characters).
    static func attachment(_ text: String?) throws -> String? {
        guard let text else { return nil }
        guard text.utf8.count <= 2048, let url = URL(string: text), url.scheme == "https", url.host != nil else {
            throw APIError.badRequest("attachment_url must be an https URL of at most 2048 characters")
        }
        return text
    }
}

import CutiEVocabulary
import Foundation
import PurseAPNs
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// What support staff do, for the JSON API and the dashboard's pages alike: find
/// conversations, answer (the answer is pushed to the user's devices), change status,
/// priority and category, assign, tag, keep canned responses, and see the pushes sent.
struct AdminDesk: Sendable {
    let environment: ServerEnvironment
    let configuration: CutiEConfiguration
    var store: AdminStore { AdminStore() }

    struct Filters: Sendable {
        var app: String?
        var status: ConversationStatus?
        var category: ConversationCategory?
        var priority: ConversationPriority?
        var tag: String?
        /// An admin id, `me` (resolved by the caller) or `none`.
        var assignee: String?
        var unreadOnly = false
        var search: String?
        var limit = 50

        /// From query parameters (the same names on the page and in the API).
        static let names: Set<String> = ["app_id", "status", "category", "priority", "tag", "assignee", "unread", "q", "limit"]

        static func parse(_ value: (String) -> String?) throws -> Filters {
            func nonEmpty(_ name: String) -> String? { value(name).flatMap { $0.isEmpty ? nil : $0 } }
            for name in ["app_id", "tag", "assignee", "q"] {
                if let text = value(name) { try Limits.text(text, field: name, max: 200, allowEmpty: true) }
            }
            var filters = Filters()
            filters.app = nonEmpty("app_id")
            filters.status = try nonEmpty("status").map { raw throws(APIError) in try .requestValue(raw, field: "status") }
            filters.category = try nonEmpty("category").map { raw throws(APIError) in try .requestValue(raw, field: "category") }
            filters.priority = try nonEmpty("priority").map { raw throws(APIError) in try .requestValue(raw, field: "priority") }
            filters.tag = nonEmpty("tag")
            filters.assignee = nonEmpty("assignee")
            switch value("unread") {
            case nil, "", "false": filters.unreadOnly = false
            case "true": filters.unreadOnly = true
            default: throw APIError.badRequest("unread must be true or false")
            }
            filters.search = nonEmpty("q")
            if let limit = value("limit") {
                guard let parsed = Int(limit), (1...200).contains(parsed) else { throw APIError.badRequest("limit must be 1 to 200") }
                filters.limit = parsed
            }
            return filters
        }
    }

    struct Listed: Encodable {
        var conversations: [ConversationBody]
        var total_unread: Int
    }

    func list(_ filters: Filters, admin: Admin) async throws -> Listed {
        try await environment.database.read { db in
            Listed(conversations: try await store.conversations(filters, admin: admin.id, in: db), total_unread: try await store.totalUnread(in: db))
        }
    }

    struct Thread: Encodable {
        var conversation: ConversationBody
        var pushes: [PushRecord]
    }

    /// A conversation with every message (internal notes too) and its pushes; opening it marks
    /// the user's messages read by support.
    func open(_ id: ConversationID, markRead: Bool) async throws -> Thread {
        let now = environment.now().epochMillis
        return try await environment.database.transaction { db in
            guard try await ConversationStore().load(id, group: nil, reader: .admin, withMessages: false, in: db) != nil else {
                throw SDKRoutes.notFound
            }
            if markRead { _ = try await ConversationStore().markRead(id, reader: .admin, now: now, in: db) }
            let conversation = try await ConversationStore().load(id, group: nil, reader: .admin, withMessages: true, in: db)!
            return Thread(conversation: conversation, pushes: try await store.pushes(conversation: id, limit: 100, in: db))
        }
    }

    struct Reply: Encodable {
        var message: MessageBody
        var pushes_queued: Int
    }

    /// Answers a conversation (or adds an internal note, which the user never sees and no push announces).
    func reply(_ id: ConversationID, text: String, note: Bool, admin: Admin, clientID: String? = nil) async throws -> Reply {
        guard admin.canAnswer else { throw APIError.forbidden("Viewers cannot answer") }
        try Limits.text(text, field: "message", max: configuration.maxMessageLength)
        let now = environment.now().epochMillis
        let reply = try await environment.database.transaction { db in
            guard try await store.conversationExists(id, in: db) else { throw SDKRoutes.notFound }
            let (message, isNew) = try await ConversationStore().append(
                to: id, sender: .admin, senderID: admin.id, senderName: admin.name, text: text, attachmentURL: nil, note: note,
                clientID: clientID, now: now, in: db)
            _ = try await ConversationStore().markRead(id, reader: .admin, now: now, in: db)
            let queued = note || !isNew ? 0 : try await ConversationStore().enqueuePushes(for: message, environment: environment, in: db)
            return Reply(message: message, pushes_queued: queued)
        }
        if reply.pushes_queued > 0 { environment.jobs.wakeup.signal() }
        return reply
    }

    struct Change: Decodable, Sendable {
        var status: ConversationStatus?
        var priority: ConversationPriority?
        var category: ConversationCategory?
        /// An admin id; empty text unassigns.
        var assigned_admin_id: String?
    }

    func update(_ id: ConversationID, change: Change, admin: Admin) async throws -> ConversationBody {
        guard admin.canAnswer else { throw APIError.forbidden("Viewers cannot change conversations") }
        let (status, priority, category) = (change.status, change.priority, change.category)
        let now = environment.now().epochMillis
        return try await environment.database.transaction { db in
            guard try await store.conversationExists(id, in: db) else { throw SDKRoutes.notFound }
            var assignee: String?? = nil
            if let assigned = change.assigned_admin_id {
                if assigned.isEmpty {
                    assignee = .some(nil)
                } else {
                    guard try await store.isActiveAdmin(assigned, in: db) else { throw APIError.badRequest("assigned_admin_id must name an admin") }
                    assignee = .some(assigned)
                }
            }
            try await store.updateConversation(id, status: status, priority: priority, category: category, assignee: assignee, now: now, in: db)
            return try await ConversationStore().load(id, group: nil, reader: .admin, withMessages: false, in: db)!
        }
    }

    func tag(_ id: ConversationID, add: String?, remove: String?, admin: Admin) async throws -> [TagBody] {
        guard admin.canAnswer else { throw APIError.forbidden("Viewers cannot tag conversations") }
        return try await environment.database.transaction { db in
            guard try await store.conversationExists(id, in: db) else { throw SDKRoutes.notFound }
            if let add {
                let tag = add.trimmingCharacters(in: .whitespaces).lowercased()
                guard tag.utf8.count <= 40, tag.range(of: #"^[a-z0-9][a-z0-9 _-]*$"#, options: .regularExpression) != nil else {
                    throw APIError.badRequest("tag must be 1 to 40 letters, digits, spaces, _ or -")
                }
                try await store.addTag(tag, to: id, in: db)
            }
            if let remove { try await store.removeTag(remove, from: id, in: db) }
            return try await store.tags(of: id, in: db)
        }
    }

    struct Canned: Codable, Sendable {
        var canned_id: String
        var title: String
        var body: String
    }

    func cannedResponses() async throws -> [Canned] {
        try await environment.database.read { db in try await store.cannedResponses(in: db) }
    }

    func addCanned(title: String, body: String, admin: Admin) async throws -> Canned {
        guard admin.isOwner else { throw APIError.forbidden("Only owners manage canned responses") }
        try Limits.text(title, field: "title", max: 100)
        try Limits.text(body, field: "body", max: configuration.maxMessageLength)
        let canned = Canned(canned_id: RandomID.make("can"), title: title, body: body)
        let now = environment.now().epochMillis
        try await environment.database.transaction { db in try await store.insertCanned(canned, now: now, in: db) }
        return canned
    }

    func admins() async throws -> [Admin] {
        try await environment.database.read { db in try await store.activeAdmins(in: db) }
    }

    struct PushRecord: Codable, Sendable {
        var push_id: String
        var app_id: String
        var conversation_id: ConversationID
        var message_id: String
        var device_id: String
        /// The APNs token's last 8 characters: enough to tell devices apart, never enough to
        /// register it elsewhere.
        var push_token: String
        var status: PushStatus
        var apns_id: String?
        var reason: String?
        var attempts: Int
        var created_at: Int64
        var updated_at: Int64

        static func shown(_ token: String) -> String { "…" + token.suffix(8) }
    }
}

import Foundation
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

    struct Filters: Sendable {
        var app: String?
        var status: String?
        var category: String?
        var priority: String?
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
            filters.status = try nonEmpty("status").map { try ConversationValues.check($0, in: ConversationValues.statuses, field: "status") }
            filters.category = try nonEmpty("category").map { try ConversationValues.check($0, in: ConversationValues.categories, field: "category") }
            filters.priority = try nonEmpty("priority").map { try ConversationValues.check($0, in: ConversationValues.priorities, field: "priority") }
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
        var conditions: [SQLQueryString] = []
        if let app = filters.app { conditions.append("c.app_id = \(bind: app)") }
        if let status = filters.status { conditions.append("c.status = \(bind: status)") }
        if let category = filters.category { conditions.append("c.category = \(bind: category)") }
        if let priority = filters.priority { conditions.append("c.priority = \(bind: priority)") }
        if let tag = filters.tag { conditions.append("EXISTS (SELECT 1 FROM cutie_tags t WHERE t.conversation_id = c.id AND t.tag = \(bind: tag))") }
        switch filters.assignee {
        case nil: break
        case "none": conditions.append("c.assigned_admin_id IS NULL")
        case "me": conditions.append("c.assigned_admin_id = \(bind: admin.id)")
        case let id?: conditions.append("c.assigned_admin_id = \(bind: id)")
        }
        if filters.unreadOnly {
            conditions.append("EXISTS (SELECT 1 FROM cutie_messages m WHERE m.conversation_id = c.id AND m.read_at IS NULL AND \(ConversationStore.Reader.admin.unreadClause))")
        }
        if let search = filters.search {
            let pattern = "%" + search.lowercased().replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%").replacingOccurrences(of: "_", with: "\\_") + "%"
            conditions.append("""
                (LOWER(COALESCE(c.title, '')) LIKE \(bind: pattern) ESCAPE '\\' OR LOWER(COALESCE(c.user_name, '')) LIKE \(bind: pattern) ESCAPE '\\'
                 OR c.id = \(bind: search)
                 OR EXISTS (SELECT 1 FROM cutie_messages m WHERE m.conversation_id = c.id AND LOWER(m.message) LIKE \(bind: pattern) ESCAPE '\\'))
                """)
        }
        var clause: SQLQueryString = "TRUE"
        for condition in conditions { clause = "\(clause) AND \(condition)" }
        let whereClause = clause
        let limit = filters.limit
        return try await environment.database.read { db in
            let rows = try await db.raw("""
                SELECT \(unsafeRaw: ConversationStore.columns),
                    (SELECT COUNT(*) FROM cutie_messages m WHERE m.conversation_id = c.id AND m.read_at IS NULL AND \(ConversationStore.Reader.admin.unreadClause)) AS unread_count,
                    (SELECT m.message FROM cutie_messages m WHERE m.conversation_id = c.id ORDER BY m.created_at DESC, m.id DESC LIMIT 1) AS last_message
                FROM cutie_conversations c WHERE \(whereClause) ORDER BY c.updated_at DESC, c.id DESC LIMIT \(bind: limit)
                """).all()
            var conversations: [ConversationBody] = []
            for row in rows {
                var conversation = try ConversationStore.decode(row, unread: try row.decode(column: "unread_count", as: Int.self), showGroup: true)
                conversation.last_message = try row.decode(column: "last_message", as: String?.self).map { PushDelivery.preview($0) }
                conversation.tags = try await db.raw("SELECT tag FROM cutie_tags WHERE conversation_id = \(bind: conversation.conversation_id) ORDER BY tag").all().map {
                    TagBody(conversation: conversation.conversation_id, name: try $0.decode(column: "tag", as: String.self))
                }
                conversations.append(conversation)
            }
            let total = try await db.raw("""
                SELECT COUNT(*) AS unread FROM cutie_messages m WHERE m.read_at IS NULL AND \(ConversationStore.Reader.admin.unreadClause)
                """).first()?.decode(column: "unread", as: Int.self) ?? 0
            return Listed(conversations: conversations, total_unread: total)
        }
    }

    struct Thread: Encodable {
        var conversation: ConversationBody
        var pushes: [PushRecord]
    }

    /// A conversation with every message (internal notes too) and its pushes; opening it marks
    /// the user's messages read by support.
    func open(_ id: String, markRead: Bool) async throws -> Thread {
        let now = environment.now().epochMillis
        return try await environment.database.transaction { db in
            guard try await ConversationStore.load(id, group: nil, reader: .admin, withMessages: false, in: db) != nil else {
                throw SDKRoutes.notFound
            }
            if markRead { _ = try await ConversationStore.markRead(id, reader: .admin, now: now, in: db) }
            let conversation = try await ConversationStore.load(id, group: nil, reader: .admin, withMessages: true, in: db)!
            return Thread(conversation: conversation, pushes: try await Self.pushes(conversation: id, limit: 100, in: db))
        }
    }

    struct Reply: Encodable {
        var message: MessageBody
        var pushes_queued: Int
    }

    /// Answers a conversation (or adds an internal note, which the user never sees and no push announces).
    func reply(_ id: String, text: String, note: Bool, admin: Admin, clientID: String? = nil) async throws -> Reply {
        guard admin.canAnswer else { throw APIError.forbidden("Viewers cannot answer") }
        try Limits.text(text, field: "message", max: configuration.maxMessageLength)
        let now = environment.now().epochMillis
        let reply = try await environment.database.transaction { db in
            guard try await db.raw("SELECT 1 AS found FROM cutie_conversations WHERE id = \(bind: id)").first() != nil else { throw SDKRoutes.notFound }
            let (message, isNew) = try await ConversationStore.append(
                to: id, sender: "admin", senderID: admin.id, senderName: admin.name, text: text, attachmentURL: nil, note: note,
                clientID: clientID, now: now, in: db)
            _ = try await ConversationStore.markRead(id, reader: .admin, now: now, in: db)
            let queued = note || !isNew ? 0 : try await ConversationStore.enqueuePushes(for: message, environment: environment, in: db)
            return Reply(message: message, pushes_queued: queued)
        }
        if reply.pushes_queued > 0 { environment.jobs.wakeup.signal() }
        return reply
    }

    struct Change: Decodable, Sendable {
        var status: String?
        var priority: String?
        var category: String?
        /// An admin id; empty text unassigns.
        var assigned_admin_id: String?
    }

    func update(_ id: String, change: Change, admin: Admin) async throws -> ConversationBody {
        guard admin.canAnswer else { throw APIError.forbidden("Viewers cannot change conversations") }
        let status = try change.status.map { try ConversationValues.check($0, in: ConversationValues.statuses, field: "status") }
        let priority = try change.priority.map { try ConversationValues.check($0, in: ConversationValues.priorities, field: "priority") }
        let category = try change.category.map { try ConversationValues.check($0, in: ConversationValues.categories, field: "category") }
        let now = environment.now().epochMillis
        return try await environment.database.transaction { db in
            guard try await db.raw("SELECT 1 AS found FROM cutie_conversations WHERE id = \(bind: id)").first() != nil else { throw SDKRoutes.notFound }
            var assignee: String?? = nil
            if let assigned = change.assigned_admin_id {
                if assigned.isEmpty {
                    assignee = .some(nil)
                } else {
                    guard try await db.raw("SELECT 1 AS found FROM cutie_admins WHERE id = \(bind: assigned) AND disabled_at IS NULL").first() != nil else {
                        throw APIError.badRequest("assigned_admin_id must name an admin")
                    }
                    assignee = .some(assigned)
                }
            }
            try await db.raw("""
                UPDATE cutie_conversations SET status = COALESCE(\(bind: status), status), priority = COALESCE(\(bind: priority), priority),
                    category = COALESCE(\(bind: category), category),
                    assigned_admin_id = CASE WHEN \(bind: assignee != nil) THEN \(bind: assignee ?? nil) ELSE assigned_admin_id END,
                    updated_at = \(bind: now)
                WHERE id = \(bind: id)
                """).run()
            return try await ConversationStore.load(id, group: nil, reader: .admin, withMessages: false, in: db)!
        }
    }

    func tag(_ id: String, add: String?, remove: String?, admin: Admin) async throws -> [TagBody] {
        guard admin.canAnswer else { throw APIError.forbidden("Viewers cannot tag conversations") }
        return try await environment.database.transaction { db in
            guard try await db.raw("SELECT 1 AS found FROM cutie_conversations WHERE id = \(bind: id)").first() != nil else { throw SDKRoutes.notFound }
            if let add {
                let tag = add.trimmingCharacters(in: .whitespaces).lowercased()
                guard tag.utf8.count <= 40, tag.range(of: #"^[a-z0-9][a-z0-9 _-]*$"#, options: .regularExpression) != nil else {
                    throw APIError.badRequest("tag must be 1 to 40 letters, digits, spaces, _ or -")
                }
                try await db.raw("INSERT INTO cutie_tags (conversation_id, tag) VALUES (\(bind: id), \(bind: tag)) ON CONFLICT DO NOTHING").run()
            }
            if let remove {
                try await db.raw("DELETE FROM cutie_tags WHERE conversation_id = \(bind: id) AND tag = \(bind: remove)").run()
            }
            return try await db.raw("SELECT tag FROM cutie_tags WHERE conversation_id = \(bind: id) ORDER BY tag").all().map {
                TagBody(conversation: id, name: try $0.decode(column: "tag", as: String.self))
            }
        }
    }

    struct Canned: Codable, Sendable {
        var canned_id: String
        var title: String
        var body: String
    }

    func cannedResponses() async throws -> [Canned] {
        try await environment.database.read { db in
            try await db.raw("SELECT id, title, body FROM cutie_canned_responses ORDER BY title, id").all().map {
                Canned(canned_id: try $0.decode(column: "id", as: String.self), title: try $0.decode(column: "title", as: String.self),
                       body: try $0.decode(column: "body", as: String.self))
            }
        }
    }

    func addCanned(title: String, body: String, admin: Admin) async throws -> Canned {
        guard admin.isOwner else { throw APIError.forbidden("Only owners manage canned responses") }
        try Limits.text(title, field: "title", max: 100)
        try Limits.text(body, field: "body", max: configuration.maxMessageLength)
        let canned = Canned(canned_id: RandomID.make("can"), title: title, body: body)
        try await environment.database.transaction { db in
            try await db.raw("""
                INSERT INTO cutie_canned_responses (id, title, body, created_at)
                VALUES (\(bind: canned.canned_id), \(bind: title), \(bind: body), \(bind: environment.now().epochMillis))
                """).run()
        }
        return canned
    }

    func admins() async throws -> [Admin] {
        try await environment.database.read { db in
            try await db.raw("SELECT id, email, name, role FROM cutie_admins WHERE disabled_at IS NULL ORDER BY name, id").all().map {
                Admin(id: try $0.decode(column: "id", as: String.self), email: try $0.decode(column: "email", as: String.self),
                      name: try $0.decode(column: "name", as: String.self), role: try $0.decode(column: "role", as: String.self))
            }
        }
    }

    struct PushRecord: Codable, Sendable {
        var push_id: String
        var app_id: String
        var conversation_id: String
        var message_id: String
        var device_id: String
        var push_token: String
        var status: String
        var apns_id: String?
        var reason: String?
        var attempts: Int
        var created_at: Int64
        var updated_at: Int64
    }

    static func pushes(conversation: String?, limit: Int, in db: any DatabaseSession) async throws -> [PushRecord] {
        let filter: SQLQueryString = conversation.map { "WHERE conversation_id = \(bind: $0)" } ?? ""
        return try await db.raw("SELECT * FROM cutie_pushes \(filter) ORDER BY created_at DESC, id DESC LIMIT \(bind: limit)").all().map {
            PushRecord(push_id: try $0.decode(column: "id", as: String.self), app_id: try $0.decode(column: "app_id", as: String.self),
                       conversation_id: try $0.decode(column: "conversation_id", as: String.self),
                       message_id: try $0.decode(column: "message_id", as: String.self), device_id: try $0.decode(column: "device_id", as: String.self),
                       push_token: try $0.decode(column: "push_token", as: String.self), status: try $0.decode(column: "status", as: String.self),
                       apns_id: try $0.decode(column: "apns_id", as: String?.self), reason: try $0.decode(column: "reason", as: String?.self),
                       attempts: try $0.decode(column: "attempts", as: Int.self), created_at: try $0.decode(column: "created_at", as: Int64.self),
                       updated_at: try $0.decode(column: "updated_at", as: Int64.self))
        }
    }
}

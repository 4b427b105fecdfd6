import CutiEVocabulary
import Foundation
import PurseAPNs
import PurseDatabase
import PurseServer
import SQLKit

/// Support staff's rows: admin accounts and their sessions, the conversation queue as the desk
/// filters it, tags, canned responses and the pushes sent. Each method runs in the session it is
/// given.
struct AdminStore: Sendable {
    // MARK: Accounts and sessions

    /// An admin account with what signing in checks.
    struct Account: Sendable {
        var admin: Admin
        var passwordHash: String
        var disabled: Bool
    }

    /// Creates an admin; false when the e-mail has one.
    func createAdmin(_ admin: Admin, passwordHash: String, now: Int64, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            INSERT INTO cutie_admins (id, email, name, role, password_hash, created_at)
            VALUES (\(bind: admin.id), \(bind: admin.email), \(bind: admin.name), \(bind: admin.role), \(bind: passwordHash), \(bind: now))
            ON CONFLICT (email) DO NOTHING RETURNING id
            """).first() != nil
    }

    func account(email: String, in db: any DatabaseSession) async throws -> Account? {
        guard let row = try await db.raw("SELECT id, email, name, role, password_hash, disabled_at FROM cutie_admins WHERE email = \(bind: email)").first() else {
            return nil
        }
        return Account(admin: try Self.admin(row), passwordHash: try row.decode(column: "password_hash", as: String.self),
                       disabled: !(try row.decodeNil(column: "disabled_at")))
    }

    /// Starts a session (kept as its id's hash), dropping expired ones.
    func startSession(idHash: String, admin: String, csrfToken: String, now: Int64, expires: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("DELETE FROM cutie_admin_sessions WHERE expires_at <= \(bind: now)").run()
        try await db.raw("""
            INSERT INTO cutie_admin_sessions (id_hash, admin_id, csrf_token, created_at, expires_at)
            VALUES (\(bind: idHash), \(bind: admin), \(bind: csrfToken), \(bind: now), \(bind: expires))
            """).run()
    }

    func endSession(idHash: String, in db: any DatabaseSession) async throws {
        try await db.raw("DELETE FROM cutie_admin_sessions WHERE id_hash = \(bind: idHash)").run()
    }

    /// The admin of a live session of an enabled account, with its CSRF token.
    func session(idHash: String, now: Int64, in db: any DatabaseSession) async throws -> (admin: Admin, csrfToken: String)? {
        guard let row = try await db.raw("""
            SELECT a.id, a.email, a.name, a.role, a.disabled_at, s.csrf_token, s.expires_at
            FROM cutie_admin_sessions s JOIN cutie_admins a ON a.id = s.admin_id WHERE s.id_hash = \(bind: idHash)
            """).first(), try row.decode(column: "expires_at", as: Int64.self) > now, try row.decodeNil(column: "disabled_at") else { return nil }
        return (try Self.admin(row), try row.decode(column: "csrf_token", as: String.self))
    }

    func isActiveAdmin(_ id: String, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("SELECT 1 AS found FROM cutie_admins WHERE id = \(bind: id) AND disabled_at IS NULL").first() != nil
    }

    func activeAdmins(in db: any DatabaseSession) async throws -> [Admin] {
        try await db.raw("SELECT id, email, name, role FROM cutie_admins WHERE disabled_at IS NULL ORDER BY name, id").all().map(Self.admin)
    }

    static func admin(_ row: any SQLRow) throws -> Admin {
        Admin(id: try row.decode(column: "id", as: String.self), email: try row.decode(column: "email", as: String.self),
              name: try row.decode(column: "name", as: String.self), role: try row.decode(column: "role", as: String.self))
    }

    // MARK: The queue

    /// Conversations matching the filters, most recently updated first, with their unread count,
    /// last message and tags.
    func conversations(_ filters: AdminDesk.Filters, admin: String, in db: any DatabaseSession) async throws -> [ConversationBody] {
        var conditions: [SQLQueryString] = []
        if let app = filters.app { conditions.append("c.app_id = \(bind: app)") }
        if let status = filters.status { conditions.append("c.status = \(bind: status.rawValue)") }
        if let category = filters.category { conditions.append("c.category = \(bind: category.rawValue)") }
        if let priority = filters.priority { conditions.append("c.priority = \(bind: priority.rawValue)") }
        if let tag = filters.tag { conditions.append("EXISTS (SELECT 1 FROM cutie_tags t WHERE t.conversation_id = c.id AND t.tag = \(bind: tag))") }
        switch filters.assignee {
        case nil: break
        case "none": conditions.append("c.assigned_admin_id IS NULL")
        case "me": conditions.append("c.assigned_admin_id = \(bind: admin)")
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
        let rows = try await db.raw("""
            SELECT \(unsafeRaw: ConversationStore.columns),
                (SELECT COUNT(*) FROM cutie_messages m WHERE m.conversation_id = c.id AND m.read_at IS NULL AND \(ConversationStore.Reader.admin.unreadClause)) AS unread_count,
                (SELECT m.message FROM cutie_messages m WHERE m.conversation_id = c.id ORDER BY m.created_at DESC, m.id DESC LIMIT 1) AS last_message
            FROM cutie_conversations c WHERE \(clause) ORDER BY c.updated_at DESC, c.id DESC LIMIT \(bind: filters.limit)
            """).all()
        var conversations: [ConversationBody] = []
        for row in rows {
            var conversation = try ConversationStore.decode(row, unread: try row.decode(column: "unread_count", as: Int.self), showGroup: true)
            conversation.last_message = try row.decode(column: "last_message", as: String?.self).map { PushDelivery.preview($0) }
            conversation.tags = try await tags(of: conversation.conversation_id, in: db)
            conversations.append(conversation)
        }
        return conversations
    }

    /// Users' messages support has not read, over every conversation.
    func totalUnread(in db: any DatabaseSession) async throws -> Int {
        try await db.raw("""
            SELECT COUNT(*) AS unread FROM cutie_messages m WHERE m.read_at IS NULL AND \(ConversationStore.Reader.admin.unreadClause)
            """).first()?.decode(column: "unread", as: Int.self) ?? 0
    }

    func conversationExists(_ id: ConversationID, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("SELECT 1 AS found FROM cutie_conversations WHERE id = \(bind: id)").first() != nil
    }

    /// Changes what is given; `assignee` `.some(nil)` unassigns.
    func updateConversation(_ id: ConversationID, status: ConversationStatus?, priority: ConversationPriority?, category: ConversationCategory?, assignee: String??, now: Int64,
                            in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE cutie_conversations SET status = COALESCE(\(bind: status?.rawValue), status), priority = COALESCE(\(bind: priority?.rawValue), priority),
                category = COALESCE(\(bind: category?.rawValue), category),
                assigned_admin_id = CASE WHEN \(bind: assignee != nil) THEN \(bind: assignee ?? nil) ELSE assigned_admin_id END,
                updated_at = \(bind: now)
            WHERE id = \(bind: id)
            """).run()
    }

    func addTag(_ tag: String, to conversation: ConversationID, in db: any DatabaseSession) async throws {
        try await db.raw("INSERT INTO cutie_tags (conversation_id, tag) VALUES (\(bind: conversation), \(bind: tag)) ON CONFLICT DO NOTHING").run()
    }

    func removeTag(_ tag: String, from conversation: ConversationID, in db: any DatabaseSession) async throws {
        try await db.raw("DELETE FROM cutie_tags WHERE conversation_id = \(bind: conversation) AND tag = \(bind: tag)").run()
    }

    func tags(of conversation: ConversationID, in db: any DatabaseSession) async throws -> [TagBody] {
        try await db.raw("SELECT tag FROM cutie_tags WHERE conversation_id = \(bind: conversation) ORDER BY tag").all().map {
            TagBody(conversation: conversation, name: try $0.decode(column: "tag", as: String.self))
        }
    }

    // MARK: Canned responses and pushes

    func cannedResponses(in db: any DatabaseSession) async throws -> [AdminDesk.Canned] {
        try await db.raw("SELECT id, title, body FROM cutie_canned_responses ORDER BY title, id").all().map {
            AdminDesk.Canned(canned_id: try $0.decode(column: "id", as: String.self), title: try $0.decode(column: "title", as: String.self),
                             body: try $0.decode(column: "body", as: String.self))
        }
    }

    func insertCanned(_ canned: AdminDesk.Canned, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO cutie_canned_responses (id, title, body, created_at)
            VALUES (\(bind: canned.canned_id), \(bind: canned.title), \(bind: canned.body), \(bind: now))
            """).run()
    }

    /// The pushes sent, newest first: of one conversation, or all.
    func pushes(conversation: ConversationID?, limit: Int, in db: any DatabaseSession) async throws -> [AdminDesk.PushRecord] {
        let filter: SQLQueryString = conversation.map { "WHERE conversation_id = \(bind: $0)" } ?? ""
        return try await db.raw("SELECT * FROM cutie_pushes \(filter) ORDER BY created_at DESC, id DESC LIMIT \(bind: limit)").all().map {
            AdminDesk.PushRecord(
                push_id: try $0.decode(column: "id", as: String.self), app_id: try $0.decode(column: "app_id", as: String.self),
                conversation_id: try $0.decode(column: "conversation_id", as: ConversationID.self, of: "cutie_pushes"),
                message_id: try $0.decode(column: "message_id", as: String.self), device_id: try $0.decode(column: "device_id", as: String.self),
                push_token: AdminDesk.PushRecord.shown(try $0.decode(column: "push_token", as: String.self)), status: try $0.decode(column: "status", as: PushStatus.self, of: "cutie_pushes"),
                apns_id: try $0.decode(column: "apns_id", as: String?.self), reason: try $0.decode(column: "reason", as: String?.self),
                attempts: try $0.decode(column: "attempts", as: Int.self), created_at: try $0.decode(column: "created_at", as: Int64.self),
                updated_at: try $0.decode(column: "updated_at", as: Int64.self))
        }
    }
}

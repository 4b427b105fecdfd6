import Crypto
import CutiEVocabulary
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

enum ConversationTag {}
/// A conversation's id (`conv_…`). The SDK's public API keeps it a `String`, as the real SDK
/// does; inside the service it is typed, so it is never confused with a device, group or
/// message id. It encodes as the bare string.
typealias ConversationID = Tagged<ConversationTag, String>

/// A message on the wire (the SDK's `Message`).
struct MessageBody: Codable, Sendable, Equatable {
    var message_id: String
    var conversation_id: ConversationID
    var sender_type: SenderType
    var sender_id: String?
    var sender_name: String?
    var message: String
    var message_type: String
    var attachment_url: String?
    var is_internal_note: Bool
    var client_id: String?
    var created_at: Int64
    var read_at: Int64?
}

/// A tag on the wire (the SDK's `Tag`).
struct TagBody: Codable, Sendable, Equatable {
    var tag_id: String
    var conversation_id: ConversationID
    var tag_name: String
    var tag_color: String?

    init(conversation: ConversationID, name: String) {
        tag_id = "tag_" + Hex.encode(SHA256.hash(data: Data("\(conversation)/\(name)".utf8))).prefix(16)
        conversation_id = conversation
        tag_name = name
        tag_color = nil
    }
}

/// A conversation on the wire (the SDK's `Conversation`).
struct ConversationBody: Codable, Sendable {
    var conversation_id: ConversationID
    var app_id: String
    var device_id: String
    var group_id: String?
    var user_id: String?
    var user_name: String?
    var title: String?
    var category: ConversationCategory
    var status: ConversationStatus
    var priority: ConversationPriority
    var assigned_admin_id: String?
    var app_version: String?
    var os_version: String?
    var device_model: String?
    var message_count: Int
    /// Unread for whoever asks: admin replies for the device, user messages for support staff.
    var unread_count: Int
    var last_message: String?
    var tags: [TagBody]?
    var messages: [MessageBody]?
    var created_at: Int64
    var updated_at: Int64
}

extension MessageBody {
    /// The message as `JSONCoding.encoder` writes it: its fields in sorted key order, the absent
    /// optional ones left out. A message sent is answered inside its write transaction.
    var json: JSONObjectWriter {
        var object = JSONObjectWriter()
        object.field("attachment_url", ifPresent: attachment_url)
        object.field("client_id", ifPresent: client_id)
        object.field("conversation_id", conversation_id.rawValue)
        object.field("created_at", created_at)
        object.field("is_internal_note", is_internal_note)
        object.field("message", message)
        object.field("message_id", message_id)
        object.field("message_type", message_type)
        object.field("read_at", ifPresent: read_at)
        object.field("sender_id", ifPresent: sender_id)
        object.field("sender_name", ifPresent: sender_name)
        object.field("sender_type", sender_type.rawValue)
        return object
    }
}

extension ConversationBody {
    /// The conversation as `JSONCoding.encoder` writes it when it has no tags and no messages:
    /// its fields in sorted key order, the absent optional ones left out.
    var inboxJSON: JSONObjectWriter {
        var object = JSONObjectWriter()
        object.field("app_id", app_id)
        object.field("app_version", ifPresent: app_version)
        object.field("assigned_admin_id", ifPresent: assigned_admin_id)
        object.field("category", category.rawValue)
        object.field("conversation_id", conversation_id.rawValue)
        object.field("created_at", created_at)
        object.field("device_id", device_id)
        object.field("device_model", ifPresent: device_model)
        object.field("group_id", ifPresent: group_id)
        object.field("last_message", ifPresent: last_message)
        object.field("message_count", message_count)
        object.field("os_version", ifPresent: os_version)
        object.field("priority", priority.rawValue)
        object.field("status", status.rawValue)
        object.field("title", ifPresent: title)
        object.field("unread_count", unread_count)
        object.field("updated_at", updated_at)
        object.field("user_id", ifPresent: user_id)
        object.field("user_name", ifPresent: user_name)
        return object
    }
}

/// Conversations and their messages: every statement the SDK's routes and the admin desk run on
/// them. Each method runs in the session it is given.
struct ConversationStore: Sendable {
    /// Whose unread messages a count is about.
    enum Reader {
        /// The device's user: unread admin and system messages, internal notes never.
        case user
        /// Support staff: unread user messages.
        case admin

        var unreadClause: SQLQueryString { "\(unsafeRaw: unreadText)" }

        /// Which messages `m` this reader has not read yet, as SQL.
        var unreadText: String {
            switch self {
            case .user: "m.sender_type IN ('admin', 'system') AND m.is_internal_note = FALSE"
            case .admin: "m.sender_type = 'user'"
            }
        }
    }

    /// A group's inbox (every SDK list reads it). Values: group, limit.
    static let inbox = DatabaseStatement("""
        SELECT \(columns),
            (SELECT COUNT(*) FROM cutie_messages m WHERE m.conversation_id = c.id AND m.read_at IS NULL AND \(Reader.user.unreadText)) AS unread_count
        FROM cutie_conversations c WHERE c.group_id = $1 ORDER BY c.updated_at DESC, c.id DESC LIMIT $2
        """)

    static let columns = """
        c.id, c.app_id, c.device_id, c.group_id, c.user_id, c.user_name, c.title, c.category, c.status, c.priority, c.assigned_admin_id,
        c.app_version, c.os_version, c.device_model, c.message_count, c.created_at, c.updated_at
        """

    /// What the SDK's user sent with a new conversation, beside its first message.
    struct NewConversation: Sendable {
        var id: ConversationID
        var app: String
        var device: String
        var title: String?
        var category: ConversationCategory
        var userID: String?
        var userName: String?
        var appVersion: String?
        var osVersion: String?
        var deviceModel: String?
        var language: String?
        var country: String?
        /// The network it came from, hashed (``DeviceLimits/addressKey(_:app:)``), for the quota's
        /// accounting.
        var addressKey: String? = nil
    }

    /// Opens a conversation in the device's group (read from the device's row, so a device that
    /// linked meanwhile writes into its new group).
    func create(_ new: NewConversation, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO cutie_conversations (id, app_id, group_id, device_id, title, category, status, priority, user_id, user_name,
                app_version, os_version, device_model, language, country, address_key, message_count, created_at, updated_at)
            SELECT \(bind: new.id), \(bind: new.app), group_id, \(bind: new.device), \(bind: new.title), \(bind: new.category.rawValue), 'open', 'normal',
                \(bind: new.userID), \(bind: new.userName), \(bind: new.appVersion), \(bind: new.osVersion), \(bind: new.deviceModel),
                \(bind: new.language), \(bind: new.country), \(bind: new.addressKey), 0, \(bind: now), \(bind: now)
            FROM cutie_devices WHERE app_id = \(bind: new.app) AND device_id = \(bind: new.device)
            """).run()
    }

    func setStatus(_ conversation: ConversationID, to status: ConversationStatus, in db: any DatabaseSession) async throws {
        try await db.raw("UPDATE cutie_conversations SET status = \(bind: status.rawValue) WHERE id = \(bind: conversation)").run()
    }

    /// A conversation's group and status.
    func state(of conversation: ConversationID, in db: any DatabaseSession) async throws -> (group: String, status: ConversationStatus)? {
        guard let row = try await db.query(Self.state, [.text(conversation.rawValue)]).first else { return nil }
        return (try row.decode(column: "group_id", as: String.self), try row.decode(column: "status", as: ConversationStatus.self, of: "cutie_conversations"))
    }

    // The statements of a message sent (every SDK post runs them on the one SQLite writer),
    // written once with their values bound directly.

    static let state = DatabaseStatement("SELECT group_id, status FROM cutie_conversations WHERE id = $1")
    static let messageByClientID = DatabaseStatement("SELECT * FROM cutie_messages WHERE conversation_id = $1 AND client_id = $2")
    /// Values: id, conversation, sender type, sender id, sender name, text, type, internal note
    /// (0 or 1), attachment, client id, time.
    static let insertMessage = DatabaseStatement("""
        INSERT INTO cutie_messages (id, conversation_id, sender_type, sender_id, sender_name, message, message_type, is_internal_note, attachment_url, client_id, created_at)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8 <> 0, $9, $10, $11)
        """)
    /// Values: time, conversation. One per way a message moves the conversation's status on.
    static let userMessageMoves = DatabaseStatement("""
        UPDATE cutie_conversations SET message_count = message_count + 1, updated_at = $1,
            status = CASE WHEN status = 'in_progress' THEN status ELSE 'waiting_admin' END
        WHERE id = $2
        """)
    static let adminReplyMoves = DatabaseStatement("""
        UPDATE cutie_conversations SET message_count = message_count + 1, updated_at = $1,
            status = CASE WHEN status IN ('resolved', 'closed') THEN status ELSE 'waiting_user' END
        WHERE id = $2
        """)
    static let noteMoves = DatabaseStatement("UPDATE cutie_conversations SET message_count = message_count + 1, updated_at = $1 WHERE id = $2")

    /// Whether the conversation is in the group's inbox.
    func isInGroup(_ conversation: ConversationID, group: String, in db: any DatabaseSession) async throws -> Bool {
        guard conversation.rawValue.utf8.count <= 64 else { return false }
        return try await db.raw("SELECT 1 AS found FROM cutie_conversations WHERE id = \(bind: conversation) AND group_id = \(bind: group)").first() != nil
    }

    static func decode(_ row: any SQLRow, unread: Int, showGroup: Bool) throws -> ConversationBody {
        ConversationBody(
            conversation_id: try row.decode(column: "id", as: ConversationID.self, of: "cutie_conversations"), app_id: try row.decode(column: "app_id", as: String.self),
            device_id: try row.decode(column: "device_id", as: String.self),
            group_id: showGroup ? try row.decode(column: "group_id", as: String.self) : nil,
            user_id: try row.decode(column: "user_id", as: String?.self), user_name: try row.decode(column: "user_name", as: String?.self),
            title: try row.decode(column: "title", as: String?.self), category: try row.decode(column: "category", as: ConversationCategory.self, of: "cutie_conversations"),
            status: try row.decode(column: "status", as: ConversationStatus.self, of: "cutie_conversations"),
            priority: try row.decode(column: "priority", as: ConversationPriority.self, of: "cutie_conversations"),
            assigned_admin_id: try row.decode(column: "assigned_admin_id", as: String?.self),
            app_version: try row.decode(column: "app_version", as: String?.self), os_version: try row.decode(column: "os_version", as: String?.self),
            device_model: try row.decode(column: "device_model", as: String?.self),
            message_count: try row.decode(column: "message_count", as: Int.self), unread_count: unread, last_message: nil, tags: nil, messages: nil,
            created_at: try row.decode(column: "created_at", as: Int64.self), updated_at: try row.decode(column: "updated_at", as: Int64.self))
    }

    /// A group's conversations, newest activity first, with their unread counts, and the group's total unread.
    func list(group: String, limit: Int, in db: any DatabaseSession) async throws -> (conversations: [ConversationBody], totalUnread: Int) {
        let rows = try await db.query(Self.inbox, [.text(group), .integer(limit)])
        let conversations = try rows.map { try Self.decode($0, unread: try $0.decode(column: "unread_count", as: Int.self), showGroup: false) }
        // The whole inbox fits the page (the usual case): its total is the page's sum.
        if conversations.count < limit { return (conversations, conversations.reduce(0) { $0 + $1.unread_count }) }
        let total = try await db.raw("""
            SELECT COUNT(*) AS unread FROM cutie_messages m JOIN cutie_conversations c ON c.id = m.conversation_id
            WHERE c.group_id = \(bind: group) AND m.read_at IS NULL AND \(Reader.user.unreadClause)
            """).first()?.decode(column: "unread", as: Int.self) ?? 0
        return (conversations, total)
    }

    /// One conversation, when `group` (nil: support staff) may see it.
    func load(_ id: ConversationID, group: String?, reader: Reader, withMessages: Bool, in db: any DatabaseSession) async throws -> ConversationBody? {
        guard id.rawValue.utf8.count <= 64 else { return nil }
        guard let row = try await db.raw("""
            SELECT \(unsafeRaw: Self.columns),
                (SELECT COUNT(*) FROM cutie_messages m WHERE m.conversation_id = c.id AND m.read_at IS NULL AND \(reader.unreadClause)) AS unread_count
            FROM cutie_conversations c WHERE c.id = \(bind: id)
            """).first() else { return nil }
        var conversation = try Self.decode(row, unread: try row.decode(column: "unread_count", as: Int.self), showGroup: group == nil)
        if let group, try row.decode(column: "group_id", as: String.self) != group { return nil }
        conversation.tags = try await db.raw("SELECT tag FROM cutie_tags WHERE conversation_id = \(bind: id) ORDER BY tag").all().map {
            TagBody(conversation: id, name: try $0.decode(column: "tag", as: String.self))
        }
        if withMessages {
            conversation.messages = try await messages(of: id, includeNotes: reader == .admin, in: db)
        }
        return conversation
    }

    func messages(of conversation: ConversationID, includeNotes: Bool, in db: any DatabaseSession) async throws -> [MessageBody] {
        let notes: SQLQueryString = includeNotes ? "" : "AND is_internal_note = FALSE"
        return try await db.raw("""
            SELECT * FROM cutie_messages WHERE conversation_id = \(bind: conversation) \(notes) ORDER BY created_at, id
            """).all().map(Self.decodeMessage)
    }

    static func decodeMessage(_ row: any SQLRow) throws -> MessageBody {
        MessageBody(message_id: try row.decode(column: "id", as: String.self), conversation_id: try row.decode(column: "conversation_id", as: ConversationID.self, of: "cutie_messages"),
                    sender_type: try row.decode(column: "sender_type", as: SenderType.self, of: "cutie_messages"), sender_id: try row.decode(column: "sender_id", as: String?.self),
                    sender_name: try row.decode(column: "sender_name", as: String?.self), message: try row.decode(column: "message", as: String.self),
                    message_type: try row.decode(column: "message_type", as: String.self),
                    attachment_url: try row.decode(column: "attachment_url", as: String?.self),
                    is_internal_note: try row.decode(column: "is_internal_note", as: Bool.self),
                    client_id: try row.decode(column: "client_id", as: String?.self),
                    created_at: try row.decode(column: "created_at", as: Int64.self), read_at: try row.decode(column: "read_at", as: Int64?.self))
    }

    /// Appends a message and moves the conversation on: a user's message makes it
    /// `waiting_admin` (reopening a resolved one), an admin's reply `waiting_user`; notes change
    /// nothing. A message whose `client_id` was stored already is returned as it was.
    func append(
        to conversation: ConversationID, sender: SenderType, senderID: String?, senderName: String?, text: String, attachmentURL: String?,
        note: Bool, clientID: String?, now: Int64, in db: any DatabaseSession
    ) async throws -> (message: MessageBody, isNew: Bool) {
        if let clientID, let row = try await db.query(Self.messageByClientID, [.text(conversation.rawValue), .text(clientID)]).first {
            return (try Self.decodeMessage(row), false)
        }
        let message = MessageBody(
            message_id: RandomID.make("msg"), conversation_id: conversation, sender_type: sender, sender_id: senderID, sender_name: senderName,
            message: text, message_type: attachmentURL == nil ? "text" : "image", attachment_url: attachmentURL, is_internal_note: note,
            client_id: clientID, created_at: now, read_at: nil)
        try await db.run(Self.insertMessage, [
            .text(message.message_id), .text(conversation.rawValue), .text(sender.rawValue), .text(senderID), .text(senderName), .text(text),
            .text(message.message_type), .integer(note ? 1 : 0), .text(attachmentURL), .text(clientID), .integer(now),
        ])
        let moves = switch (sender, note) {
        case (.user, _): Self.userMessageMoves
        case (.admin, false): Self.adminReplyMoves
        case (.admin, true), (.system, _): Self.noteMoves
        }
        try await db.run(moves, [.integer(now), .text(conversation.rawValue)])
        return (message, true)
    }

    /// Marks what `reader` has not read in a conversation as read; returns how many.
    func markRead(_ conversation: ConversationID, reader: Reader, now: Int64, in db: any DatabaseSession) async throws -> Int {
        let rows = try await db.raw("""
            UPDATE cutie_messages SET read_at = \(bind: now)
            WHERE conversation_id = \(bind: conversation) AND read_at IS NULL AND id IN (
                SELECT m.id FROM cutie_messages m WHERE m.conversation_id = \(bind: conversation) AND m.read_at IS NULL AND \(reader.unreadClause))
            RETURNING id
            """).all()
        return rows.count
    }

    /// How many messages a group has not read: the app's badge.
    func badge(group: String, in db: any DatabaseSession) async throws -> Int {
        try await db.raw("""
            SELECT COUNT(*) AS unread FROM cutie_messages m JOIN cutie_conversations c ON c.id = m.conversation_id
            WHERE c.group_id = \(bind: group) AND m.read_at IS NULL AND \(Reader.user.unreadClause)
            """).first()?.decode(column: "unread", as: Int.self) ?? 0
    }

    /// Queues a push of `message` to every device of the conversation's group with an active
    /// push registration; the job runs after the transaction commits.
    func enqueuePushes(for message: MessageBody, environment: ServerEnvironment, in db: any DatabaseSession) async throws -> Int {
        let now = environment.now()
        let targets = try await db.raw("""
            SELECT p.app_id, p.device_id, p.push_token FROM cutie_push_tokens p
            JOIN cutie_devices d ON d.app_id = p.app_id AND d.device_id = p.device_id
            JOIN cutie_conversations c ON c.group_id = d.group_id
            WHERE c.id = \(bind: message.conversation_id) AND p.active = TRUE
            ORDER BY p.device_id
            """).all()
        for target in targets {
            let id = UUID().uuidString.lowercased()
            try await db.raw("""
                INSERT INTO cutie_pushes (id, app_id, conversation_id, message_id, device_id, push_token, status, attempts, created_at, updated_at)
                VALUES (\(bind: id), \(bind: try target.decode(column: "app_id", as: String.self)), \(bind: message.conversation_id), \(bind: message.message_id),
                        \(bind: try target.decode(column: "device_id", as: String.self)), \(bind: try target.decode(column: "push_token", as: String.self)),
                        'queued', 0, \(bind: now.epochMillis), \(bind: now.epochMillis))
                ON CONFLICT (message_id, device_id) DO NOTHING
                """).run()
            try await environment.jobs.enqueue(kind: PushDelivery.jobKind, payload: PushDelivery.Payload(push_id: id), runAt: now, maxAttempts: 8, in: db)
        }
        return targets.count
    }
}

import Foundation

/// What a conversation is about.
public enum ConversationCategory: String, Codable, Sendable, CaseIterable {
    case bug, feature, question, feedback, other

    public var displayName: String {
        switch self {
        case .bug: "Bug Report"
        case .feature: "Feature Request"
        case .question: "Question"
        case .feedback: "Feedback"
        case .other: "Other"
        }
    }
}

/// Where a conversation stands.
public enum ConversationStatus: String, Codable, Sendable, CaseIterable {
    case open, in_progress, waiting_user, waiting_admin, resolved, closed

    public var displayName: String {
        switch self {
        case .open: "Open"
        case .in_progress: "In Progress"
        case .waiting_user: "Waiting for You"
        case .waiting_admin: "Waiting for Support"
        case .resolved: "Resolved"
        case .closed: "Closed"
        }
    }
}

public enum ConversationPriority: String, Codable, Sendable, CaseIterable {
    case low, normal, high, urgent
}

/// Who wrote a message.
public enum SenderType: String, Codable, Sendable {
    case user, admin, system
}

/// A label support staff put on a conversation.
public struct Tag: Codable, Sendable, Hashable, Identifiable {
    public let id: String
    public let conversationID: String
    public let tagName: String
    public let tagColor: String?

    enum CodingKeys: String, CodingKey {
        case id = "tag_id", conversationID = "conversation_id", tagName = "tag_name", tagColor = "tag_color"
    }
}

/// One message of a conversation. Times are Unix milliseconds.
public struct Message: Codable, Sendable, Hashable, Identifiable {
    public let id: String
    public let conversationID: String
    public let senderType: SenderType
    public let senderID: String?
    public let senderName: String?
    public let message: String
    public let messageType: String
    public let attachmentURL: String?
    public let clientID: String?
    public let createdAt: Int64
    public let readAt: Int64?

    enum CodingKeys: String, CodingKey {
        case id = "message_id", conversationID = "conversation_id", senderType = "sender_type", senderID = "sender_id", senderName = "sender_name"
        case message, messageType = "message_type", attachmentURL = "attachment_url", clientID = "client_id", createdAt = "created_at", readAt = "read_at"
    }

    public var createdDate: Date { Date(timeIntervalSince1970: TimeInterval(createdAt) / 1000) }
    /// Written by this app's user (on any of their linked devices).
    public var isFromUser: Bool { senderType == .user }
}

/// A conversation with the app's support team.
public struct Conversation: Codable, Sendable, Hashable, Identifiable {
    public let id: String
    public let appId: String?
    public let deviceID: String?
    public let userID: String?
    public let userName: String?
    public let title: String?
    public let category: ConversationCategory?
    public let status: ConversationStatus
    public let priority: ConversationPriority?
    public let messageCount: Int?
    public let unreadCount: Int?
    public let messages: [Message]?
    public let tags: [Tag]?
    public let createdAt: Int64
    public let updatedAt: Int64?

    enum CodingKeys: String, CodingKey {
        case id = "conversation_id", appId = "app_id", deviceID = "device_id", userID = "user_id", userName = "user_name", title, category, status, priority
        case messageCount = "message_count", unreadCount = "unread_count", messages, tags, createdAt = "created_at", updatedAt = "updated_at"
    }

    public var hasUnread: Bool { (unreadCount ?? 0) > 0 }
    public var createdDate: Date { Date(timeIntervalSince1970: TimeInterval(createdAt) / 1000) }
    public var updatedDate: Date { Date(timeIntervalSince1970: TimeInterval(updatedAt ?? createdAt) / 1000) }
}

/// A device sharing this device's inbox.
public struct LinkedDevice: Codable, Sendable, Hashable, Identifiable {
    public let id: String
    public let deviceName: String?
    public let isCurrent: Bool
    public let createdAt: Int64
    public let linkedAt: Int64?
    public let lastSeenAt: Int64

    enum CodingKeys: String, CodingKey {
        case id = "device_id", deviceName = "device_name", isCurrent = "is_current", createdAt = "created_at", linkedAt = "linked_at", lastSeenAt = "last_seen_at"
    }
}

/// A link token to show (as a QR code) on the device that invites another.
public struct LinkToken: Codable, Sendable, Hashable {
    public let token: String
    /// Unix milliseconds.
    public let expiresAt: Int64
    public let expiresIn: Int
    public let hasExistingGroup: Bool

    enum CodingKeys: String, CodingKey {
        case token = "link_token", expiresAt = "expires_at", expiresIn = "expires_in", hasExistingGroup = "has_existing_group"
    }

    public var expiresDate: Date { Date(timeIntervalSince1970: TimeInterval(expiresAt) / 1000) }
}

/// What became of a link token.
public enum LinkStatus: String, Codable, Sendable {
    case pending, confirmed, expired
}

import Foundation
@_exported import CutiEVocabulary

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
    public let senderAvatarUrl: String?
    public let message: String
    public let messageType: String
    /// Support's notes to each other never reach the app; the member is the Cuti-E SDK's.
    public let isInternalNote: Bool
    public let attachmentURL: String?
    public let clientID: String?
    public let createdAt: Int64
    public let readAt: Int64?

    enum CodingKeys: String, CodingKey {
        case id = "message_id", conversationID = "conversation_id", senderType = "sender_type", senderID = "sender_id", senderName = "sender_name"
        case senderAvatarUrl = "sender_avatar_url", message, messageType = "message_type", isInternalNote = "is_internal_note"
        case attachmentURL = "attachment_url", clientID = "client_id", createdAt = "created_at", readAt = "read_at"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        conversationID = try container.decode(String.self, forKey: .conversationID)
        senderType = try container.decode(SenderType.self, forKey: .senderType)
        senderID = try container.decodeIfPresent(String.self, forKey: .senderID)
        senderName = try container.decodeIfPresent(String.self, forKey: .senderName)
        senderAvatarUrl = try container.decodeIfPresent(String.self, forKey: .senderAvatarUrl)
        message = try container.decode(String.self, forKey: .message)
        messageType = try container.decodeIfPresent(String.self, forKey: .messageType) ?? "text"
        isInternalNote = try container.decodeIfPresent(Bool.self, forKey: .isInternalNote) ?? false
        attachmentURL = try container.decodeIfPresent(String.self, forKey: .attachmentURL)
        clientID = try container.decodeIfPresent(String.self, forKey: .clientID)
        createdAt = try container.decode(Int64.self, forKey: .createdAt)
        readAt = try container.decodeIfPresent(Int64.self, forKey: .readAt)
    }

    /// A message made in the app (a preview, a test), with the Cuti-E SDK's parameters.
    public init(id: String, conversationID: String, senderType: SenderType, senderID: String? = nil, senderName: String? = nil,
                senderAvatarUrl: String? = nil, message: String, messageType: String = "text", isInternalNote: Bool = false,
                createdAt: Int64, attachmentURL: String? = nil, clientID: String? = nil, readAt: Int64? = nil) {
        self.id = id
        self.conversationID = conversationID
        self.senderType = senderType
        self.senderID = senderID
        self.senderName = senderName
        self.senderAvatarUrl = senderAvatarUrl
        self.message = message
        self.messageType = messageType
        self.isInternalNote = isInternalNote
        self.createdAt = createdAt
        self.attachmentURL = attachmentURL
        self.clientID = clientID
        self.readAt = readAt
    }

    public var createdDate: Date { Date(timeIntervalSince1970: TimeInterval(createdAt) / 1000) }
    /// Written by this app's user (on any of their linked devices).
    public var isFromUser: Bool { senderType == .user }
}

/// A conversation with the app's support team.
public struct Conversation: Codable, Sendable, Hashable, Identifiable {
    public let id: String
    /// The customer account the conversation belongs to, where the service keeps one.
    public let customerID: String?
    /// The support agent it is assigned to.
    public let assignedAdminID: String?
    public let appId: String?
    /// Not sent any more; kept for apps that read it (always nil).
    public let appName: String?
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
        case id = "conversation_id", customerID = "customer_id", assignedAdminID = "assigned_admin_id", appId = "app_id", appName = "app_name"
        case deviceID = "device_id", userID = "user_id", userName = "user_name", title, category, status, priority
        case messageCount = "message_count", unreadCount = "unread_count", messages, tags, createdAt = "created_at", updatedAt = "updated_at"
    }

    /// A conversation made in the app (a preview, a test), with the Cuti-E SDK's parameters.
    public init(id: String, customerID: String? = nil, userID: String? = nil, userName: String? = nil, deviceID: String? = nil, title: String? = nil,
                category: ConversationCategory? = nil, status: ConversationStatus, priority: ConversationPriority? = nil, assignedAdminID: String? = nil,
                appId: String? = nil, messageCount: Int? = nil, unreadCount: Int? = nil, messages: [Message]? = nil, tags: [Tag]? = nil,
                createdAt: Int64, updatedAt: Int64? = nil) {
        self.id = id
        self.customerID = customerID
        self.userID = userID
        self.userName = userName
        self.deviceID = deviceID
        self.title = title
        self.category = category
        self.status = status
        self.priority = priority
        self.assignedAdminID = assignedAdminID
        self.appId = appId
        self.appName = nil
        self.messageCount = messageCount
        self.unreadCount = unreadCount
        self.messages = messages
        self.tags = tags
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public var hasUnread: Bool { (unreadCount ?? 0) > 0 }
    public var createdDate: Date { Date(timeIntervalSince1970: TimeInterval(createdAt) / 1000) }
    public var updatedDate: Date { Date(timeIntervalSince1970: TimeInterval(updatedAt ?? createdAt) / 1000) }
}

/// A device sharing this device's inbox (the Cuti-E SDK's `LinkedDevice`): `joinedAt` when it
/// joined the group, `isPrimary` the device that made it; this service adds when the device was
/// registered, linked and last seen.
public struct LinkedDevice: Codable, Sendable, Hashable, Identifiable {
    public let deviceId: String
    public let deviceName: String
    public let joinedAt: Int64
    public let isPrimary: Bool
    public let isCurrent: Bool
    public let createdAt: Int64?
    public let linkedAt: Int64?
    public let lastSeenAt: Int64?

    public var id: String { deviceId }
    public var joinedDate: Date { Date(timeIntervalSince1970: TimeInterval(joinedAt) / 1000) }

    enum CodingKeys: String, CodingKey {
        case deviceId = "device_id", deviceName = "device_name", joinedAt = "joined_at", isPrimary = "is_primary", isCurrent = "is_current"
        case createdAt = "created_at", linkedAt = "linked_at", lastSeenAt = "last_seen_at"
    }
}

/// The devices sharing this device's inbox (the SDK's `LinkedDevicesResponse`): `linked` when
/// there is another.
public struct LinkedDevicesResponse: Codable, Sendable, Hashable {
    public let linked: Bool
    public let groupId: String?
    public let devices: [LinkedDevice]

    enum CodingKeys: String, CodingKey { case linked, groupId = "group_id", devices }
}

/// A link token to show (as a QR code) on the device that invites another (the SDK's
/// `LinkTokenResponse`).
public struct LinkTokenResponse: Codable, Sendable, Hashable {
    public let linkToken: String
    /// Unix milliseconds.
    public let expiresAt: Int64
    public let expiresIn: Int
    public let hasExistingGroup: Bool

    enum CodingKeys: String, CodingKey {
        case linkToken = "link_token", expiresAt = "expires_at", expiresIn = "expires_in", hasExistingGroup = "has_existing_group"
    }

    public var expirationDate: Date { Date(timeIntervalSince1970: TimeInterval(expiresAt) / 1000) }
}

public typealias LinkToken = LinkTokenResponse

public typealias LinkStatus = LinkTokenStatus

/// A link token's state (the SDK's `LinkStatusResponse`): once confirmed, by which device and when.
public struct LinkStatusResponse: Codable, Sendable, Hashable {
    public let status: LinkTokenStatus
    public let linkToken: String?
    public let groupId: String?
    public let targetDeviceName: String?
    public let confirmedAt: Int64?
    public let expiresAt: Int64?

    enum CodingKeys: String, CodingKey {
        case status, linkToken = "link_token", groupId = "group_id", targetDeviceName = "target_device_name", confirmedAt = "confirmed_at", expiresAt = "expires_at"
    }
}

/// A confirmed link (the SDK's `LinkConfirmResponse`): the group now shared.
public struct LinkConfirmResponse: Codable, Sendable, Hashable {
    public let success: Bool
    public let groupId: String
    public let message: String

    enum CodingKeys: String, CodingKey { case success, groupId = "group_id", message }
}

// How the app shows the shared words: an SF Symbol and a colour name per category, status and
// priority (the colour as SwiftUI's name for it, so the words stay platform-neutral).
extension ConversationCategory {
    public var sfSymbol: String {
        switch self {
        case .bug: "ladybug.fill"
        case .feature: "sparkles"
        case .question: "questionmark.circle.fill"
        case .feedback: "bubble.left.and.bubble.right.fill"
        case .other: "ellipsis.circle.fill"
        }
    }

    public var color: String {
        switch self {
        case .bug: "red"
        case .feature: "purple"
        case .question: "blue"
        case .feedback: "green"
        case .other: "gray"
        }
    }
}

extension ConversationStatus {
    public var color: String {
        switch self {
        case .open: "blue"
        case .in_progress: "orange"
        case .waiting_user: "yellow"
        case .waiting_admin: "red"
        case .resolved: "green"
        case .closed: "gray"
        }
    }
}

extension ConversationPriority {
    public var displayName: String {
        switch self {
        case .low: "Low"
        case .normal: "Normal"
        case .high: "High"
        case .urgent: "Urgent"
        }
    }

    public var color: String {
        switch self {
        case .low: "gray"
        case .normal: "blue"
        case .high: "orange"
        case .urgent: "red"
        }
    }
}

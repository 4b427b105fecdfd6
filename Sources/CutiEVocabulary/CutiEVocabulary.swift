import PurseFormats

/// The words the Cuti-E SDK and its service share on the wire: a conversation's category,
/// status and priority, who wrote a message, where a link token stands, an app's tier and
/// where its subscription stands. The SDK re-exports this module; the service decodes and
/// encodes the same types, so a value one side writes is a value the other reads. The raw
/// values are the Cuti-E SDK's own.

/// What a conversation is about.
public enum ConversationCategory: String, WireChoice {
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
public enum ConversationStatus: String, WireChoice {
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

public enum ConversationPriority: String, WireChoice {
    case low, normal, high, urgent
}

/// Who wrote a message.
public enum SenderType: String, WireChoice {
    case user, admin, system
}

/// What became of a link token.
public enum LinkTokenStatus: String, WireChoice {
    case pending, confirmed, expired
}

/// How much feedback an app may receive a month.
public enum CutiETier: String, WireChoice, Comparable {
    case free, starter, pro, business

    /// `com.cutie.starter.monthly` and the like.
    public static let productIDs = ["starter", "pro", "business"].flatMap { ["com.cutie.\($0).monthly", "com.cutie.\($0).yearly"] }

    /// The tier a subscription product unlocks: `com.cutie.starter|pro|business.monthly|yearly`.
    public init?(productID: String) {
        let parts = productID.split(separator: ".")
        guard parts.count == 4, parts[0] == "com", parts[1] == "cutie", ["monthly", "yearly"].contains(parts[3]),
              let tier = CutiETier(rawValue: String(parts[2])), tier != .free else { return nil }
        self = tier
    }

    /// New conversations a month; nil is unlimited.
    public var monthlyLimit: Int64? {
        switch self {
        case .free: 50
        case .starter: 500
        case .pro: 10_000
        case .business: nil
        }
    }

    public static func < (lhs: CutiETier, rhs: CutiETier) -> Bool {
        lhs.rank < rhs.rank
    }

    private var rank: Int {
        switch self {
        case .free: 0
        case .starter: 1
        case .pro: 2
        case .business: 3
        }
    }
}

/// Where an app's subscription stands (`GET /v1/usage` and `/v1/subscription/verify`).
public enum PlanStatus: String, WireChoice {
    /// No subscription: the free tier.
    case none
    case active
    /// A renewal failed; the tier holds until the grace period ends.
    case grace_period
    case expired
    /// Refunded or revoked by the App Store.
    case revoked
}

import Foundation
import PurseFormats

/// A Stripe account (the subset Purse reads and the sandbox writes).
public struct StripeAccount: Codable, Sendable, Equatable {
    public struct BusinessProfile: Codable, Sendable, Equatable {
        public var mcc: String?
        public var name: String?
        public var product_description: String?
        public var support_address: String?
        public var support_email: String?
        public var support_phone: String?
        public var support_url: String?
        public var url: String?

        public init() {}

        public func encode(to encoder: any Encoder) throws {
            // Stripe sends every key, null included; so does the seed.
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(mcc, forKey: .mcc)
            try container.encode(name, forKey: .name)
            try container.encode(product_description, forKey: .product_description)
            try container.encode(support_address, forKey: .support_address)
            try container.encode(support_email, forKey: .support_email)
            try container.encode(support_phone, forKey: .support_phone)
            try container.encode(support_url, forKey: .support_url)
            try container.encode(url, forKey: .url)
        }
    }

    public struct Capabilities: Codable, Sendable, Equatable {
        public var card_payments: String?
        public var transfers: String?
    }

    public struct Requirements: Codable, Sendable, Equatable {
        public var currently_due: [String]
        public var eventually_due: [String]
        public var past_due: [String]
        public var disabled_reason: String?
    }

    public var id: String
    public var object: String = "account"
    public var business_profile: BusinessProfile
    public var business_type: String?
    public var capabilities: Capabilities
    public var charges_enabled: Bool
    public var country: String
    public var created: Int
    public var default_currency: String
    public var details_submitted: Bool
    public var email: String?
    public var payouts_enabled: Bool
    public var type: String
    public var requirements: Requirements?
    public var metadata: [String: String]?

    /// `onboardingComplete` as Maly defines it: details submitted, nothing currently due, charges enabled.
    public var onboardingComplete: Bool {
        Self.onboardingComplete(detailsSubmitted: details_submitted, currentlyDue: requirements?.currently_due, chargesEnabled: charges_enabled)
    }

    /// The rule behind ``onboardingComplete``, for what a webhook carries of an account.
    public static func onboardingComplete(detailsSubmitted: Bool, currentlyDue: [String]?, chargesEnabled: Bool) -> Bool {
        detailsSubmitted && (currentlyDue?.isEmpty ?? true) && chargesEnabled
    }
}

/// The seed's view of an account: exactly the fields its example shows, nulls included.
public struct SeedAccountView: Encodable, Sendable {
    let account: StripeAccount

    enum Keys: String, CodingKey {
        case id, object, business_profile, business_type, capabilities, charges_enabled, country, created
        case default_currency, details_submitted, email, payouts_enabled, type
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(account.id, forKey: .id)
        try container.encode(account.object, forKey: .object)
        try container.encode(account.business_profile, forKey: .business_profile)
        try container.encode(account.business_type, forKey: .business_type)
        try container.encode(account.capabilities, forKey: .capabilities)
        try container.encode(account.charges_enabled, forKey: .charges_enabled)
        try container.encode(account.country, forKey: .country)
        try container.encode(account.created, forKey: .created)
        try container.encode(account.default_currency, forKey: .default_currency)
        try container.encode(account.details_submitted, forKey: .details_submitted)
        try container.encode(account.email, forKey: .email)
        try container.encode(account.payouts_enabled, forKey: .payouts_enabled)
        try container.encode(account.type, forKey: .type)
    }
}

public struct StripeAccountLink: Codable, Sendable, Equatable {
    public var object: String = "account_link"
    public var created: Int
    public var expires_at: Int
    public var url: String
}

/// Stripe's error body: `{"error": {"type", "code"?, "message", "param"?}}`.
public struct StripeErrorBody: Codable, Sendable, Equatable {
    public struct Detail: Codable, Sendable, Equatable {
        public var type: String
        public var code: String?
        public var message: String
        public var param: String?
        public var decline_code: String?
        public var request_log_url: String?
    }
    public var error: Detail
}

/// An event as Stripe posts it to a webhook endpoint.
public struct StripeEvent<Object: Codable & Sendable>: Codable, Sendable {
    public struct DataObject: Codable, Sendable { public var object: Object }
    public var id: String
    public var object: String = "event"
    public var api_version: String
    public var created: Int
    public var type: String
    public var livemode: Bool
    public var data: DataObject
}

/// A PaymentIntent (the fields a destination charge needs).
public struct StripePaymentIntent: Codable, Sendable, Equatable {
    public struct TransferData: Codable, Sendable, Equatable { public var destination: String }

    /// Where a PaymentIntent stands. Stripe adds values over time, so the set is open.
    public struct Status: OpenChoice {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let requiresPaymentMethod: Status = "requires_payment_method"
        public static let requiresConfirmation: Status = "requires_confirmation"
        public static let requiresAction: Status = "requires_action"
        public static let processing: Status = "processing"
        public static let requiresCapture: Status = "requires_capture"
        public static let canceled: Status = "canceled"
        public static let succeeded: Status = "succeeded"
    }

    public var id: String
    public var object: String = "payment_intent"
    public var amount: Int
    public var currency: String
    public var application_fee_amount: Int?
    public var transfer_data: TransferData?
    public var status: Status
    public var payment_method: String?
    public var created: Int
    public var metadata: [String: String]?
}

import Foundation
import HTTPTypes
import PurseKit
import PurseHTTP

/// `ConnectAccountStatus` of the seed.
public struct ConnectAccountStatus: Codable, Sendable, Equatable {
    public var hasAccount: Bool
    public var onboardingComplete: Bool
    public var chargesEnabled: Bool?
    public var payoutsEnabled: Bool?
    public var detailsSubmitted: Bool?

    public init(hasAccount: Bool, onboardingComplete: Bool, chargesEnabled: Bool? = nil, payoutsEnabled: Bool? = nil, detailsSubmitted: Bool? = nil) {
        self.hasAccount = hasAccount
        self.onboardingComplete = onboardingComplete
        self.chargesEnabled = chargesEnabled
        self.payoutsEnabled = payoutsEnabled
        self.detailsSubmitted = detailsSubmitted
    }
}

/// The account object `create-account` returns: the seed's 13 fields, with Stripe's names.
public struct ConnectAccount: Codable, Sendable, Equatable {
    public struct BusinessProfile: Codable, Sendable, Equatable {
        public var mcc: String?
        public var name: String?
        public var product_description: String?
        public var support_address: String?
        public var support_email: String?
        public var support_phone: String?
        public var support_url: String?
        public var url: String?
    }

    public struct Capabilities: Codable, Sendable, Equatable {
        /// `inactive`, `pending` or `active`.
        public var card_payments: String?
        public var transfers: String?
    }

    public var id: String
    public var object: String
    public var business_profile: BusinessProfile?
    public var business_type: String?
    public var capabilities: Capabilities?
    public var charges_enabled: Bool
    public var country: String
    public var created: Int
    public var default_currency: String
    public var details_submitted: Bool
    public var email: String?
    public var payouts_enabled: Bool
    public var type: String
}

public struct ConnectAccountResponse: Codable, Sendable, Equatable {
    public var account: ConnectAccount
}

public struct AccountLinkResponse: Codable, Sendable, Equatable {
    public var url: String
}

/// The seed's client API for Maly hosts. The JWT comes from the ``ClientSession`` (kept in the
/// ``SecureStore``); the Stripe account id is never stored on the device.
///
/// Errors are ``PurseError``s; the seed's cases are domain codes:
/// `already_has_account`, `no_account`, `platform_configuration` (show "contact support"),
/// and `unauthorized` means "log in again".
public struct StripeConnectService: Sendable {
    public let api: APIClient
    /// Sent as `Origin`: the app's domain, where Stripe sends the user back.
    public let origin: String

    public init(api: APIClient, origin: String) {
        self.api = api
        self.origin = origin
    }

    /// The seed's requests carry `Content-Type: application/json`, bodies or not.
    static let json: HTTPFields = [.contentType: "application/json"]

    public func createConnectAccount() async throws -> ConnectAccountResponse {
        try await mapped { try await api.send(.post, "/api/stripe/connect/create-account", headerFields: Self.json) }
    }

    /// The onboarding link, checked before anyone opens it: `https`, or — only for the sandbox the
    /// app's own server hosts — the server's own scheme and host.
    /// - Throws: ``PurseError/invalidResponse(_:)`` for any other URL (a phishing page must not
    ///   get the host's bank details).
    public func createAccountLink() async throws -> AccountLinkResponse {
        let link: AccountLinkResponse = try await mapped {
            try await api.send(.post, "/api/stripe/connect/create-account-link", headerFields: Self.json + [HTTPField(name: .origin, value: origin)])
        }
        guard Self.isOpenable(link.url, server: api.session.baseURL) else {
            throw PurseError.invalidResponse("Refusing to open the onboarding link \(link.url): it is not https")
        }
        return link
    }

    /// `https` with a host; or the app server's own origin (the built-in Stripe sandbox).
    static func isOpenable(_ text: String, server: URL) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
              url.user == nil, url.password == nil else { return false }
        if scheme == "https" { return true }
        return scheme == server.scheme?.lowercased() && host.lowercased() == server.host?.lowercased() && url.port == server.port
            && url.path.hasPrefix("/sandbox/stripe/")
    }

    public func getAccountStatus() async throws -> ConnectAccountStatus {
        try await mapped { try await api.send(.get, "/api/stripe/connect/account-status") }
    }

    public func verifyAccount() async throws -> ConnectAccountStatus {
        try await mapped { try await api.send(.post, "/api/stripe/connect/verify-account", headerFields: Self.json) }
    }

    func mapped<T: Sendable>(_ call: () async throws -> T) async throws -> T {
        do {
            return try await call()
        } catch let error as PurseError {
            throw Self.map(error)
        }
    }

    static func map(_ error: PurseError) -> PurseError {
        if error.kind == .unauthorized {
            return .unauthorized("Your session has expired. Please log in again.", body: error.body)
        }
        guard error.status == 400 else { return error }
        switch error.message {
        case "User already has a Stripe Connect account": return .domain("already_has_account", message: error.message, body: error.body)
        case "User does not have a Stripe Connect account": return .domain("no_account", message: error.message, body: error.body)
        case let message where message.hasPrefix("Platform configuration incomplete"):
            return .domain("platform_configuration", message: message, body: error.body)
        default: return error
        }
    }
}

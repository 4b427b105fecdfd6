import Foundation
import PurseKit

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

/// The account object `create-account` returns (the seed's fields).
public struct ConnectAccount: Codable, Sendable, Equatable {
    public var id: String
    public var object: String
    public var type: String
    public var country: String
    public var email: String?
    public var charges_enabled: Bool
    public var payouts_enabled: Bool
    public var details_submitted: Bool
    public var default_currency: String
    public var created: Int
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

    public func createConnectAccount() async throws -> ConnectAccountResponse {
        try await mapped { try await api.send("POST", "/api/stripe/connect/create-account") }
    }

    public func createAccountLink() async throws -> AccountLinkResponse {
        try await mapped { try await api.send("POST", "/api/stripe/connect/create-account-link", headers: ["Origin": origin]) }
    }

    public func getAccountStatus() async throws -> ConnectAccountStatus {
        try await mapped { try await api.send("GET", "/api/stripe/connect/account-status") }
    }

    public func verifyAccount() async throws -> ConnectAccountStatus {
        try await mapped { try await api.send("POST", "/api/stripe/connect/verify-account") }
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

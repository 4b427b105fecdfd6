import PurseDatabase
import PurseFormats
import Foundation
import PurseServer

/// Maly's settings.
///
/// - `STRIPE_SECRET_KEY`: set → the real Stripe API (`STRIPE_API_BASE`, default `https://api.stripe.com`);
///   unset → the built-in sandbox under `/sandbox/stripe`, with a generated key.
/// - `STRIPE_WEBHOOK_SECRET`: the endpoint secret webhooks are verified (and, in the sandbox, signed) with;
///   generated into the data directory when unset (development only).
/// - `STRIPE_SANDBOX_PLATFORM_PROFILE=incomplete`: the sandbox answers account creation as Stripe does
///   when the platform profile is not set up.
/// - `STRIPE_SANDBOX_SECRET_KEY`: the key the sandbox accepts (default: generated into the data directory),
///   so scripts such as stripe-python can call the sandbox.
/// - `CONNECT_ALLOWED_ORIGINS`: origins allowed in `Origin` for onboarding links (required in production).
public struct ConnectConfiguration: Sendable {
    public var stripeBaseURL: String
    public var stripeSecretKey: String
    public var webhookSecret: String
    public var usesSandbox: Bool
    public var sandboxPlatformProfileComplete: Bool
    /// Where the sandbox delivers `account.updated` events.
    public var webhookURL: String
    public var allowedOrigins: Set<String>?
    public var webhookTolerance: TimeInterval = WebhookSignature.defaultTolerance

    public static func from(_ configuration: PurseConfiguration) throws -> ConnectConfiguration {
        let env = configuration.environment
        let secrets = ServerSecrets(dataDirectory: configuration.dataDirectory)
        func value(_ name: String) -> String? { env[name].flatMap { $0.isEmpty ? nil : $0 } }
        let publicURL = configuration.effectivePublicURL
        let webhookSecret: String
        if let configured = value("STRIPE_WEBHOOK_SECRET") {
            webhookSecret = configured
        } else if configuration.isProduction {
            throw ConfigurationError("STRIPE_WEBHOOK_SECRET is required when PURSE_ENV=production")
        } else {
            webhookSecret = "whsec_" + Hex.encode((try secrets.secret(named: "stripe-webhook.key")).prefix(24))
        }
        let allowed = value("CONNECT_ALLOWED_ORIGINS").map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
        if configuration.isProduction, allowed == nil {
            throw ConfigurationError("CONNECT_ALLOWED_ORIGINS is required when PURSE_ENV=production")
        }
        if let key = value("STRIPE_SECRET_KEY") {
            return ConnectConfiguration(
                stripeBaseURL: value("STRIPE_API_BASE") ?? "https://api.stripe.com", stripeSecretKey: key, webhookSecret: webhookSecret,
                usesSandbox: false, sandboxPlatformProfileComplete: true, webhookURL: "\(publicURL)/api/webhooks/stripe/connect",
                allowedOrigins: allowed
            )
        }
        if configuration.isProduction { throw ConfigurationError("STRIPE_SECRET_KEY is required when PURSE_ENV=production") }
        let sandboxKey = try value("STRIPE_SANDBOX_SECRET_KEY")
            ?? "sk_test_sandbox_" + Hex.encode((try secrets.secret(named: "stripe-sandbox.key")).prefix(16))
        return ConnectConfiguration(
            stripeBaseURL: "\(publicURL)/sandbox/stripe", stripeSecretKey: sandboxKey, webhookSecret: webhookSecret, usesSandbox: true,
            sandboxPlatformProfileComplete: value("STRIPE_SANDBOX_PLATFORM_PROFILE") != "incomplete",
            webhookURL: "\(publicURL)/api/webhooks/stripe/connect", allowedOrigins: allowed
        )
    }
}

import Foundation
import PurseDatabase
import PurseServer

/// Nexus settings, from the environment.
///
/// - `NEXUS_RP_ID` — the WebAuthn relying party id (default `localhost`).
/// - `NEXUS_RP_NAME` — shown by authenticators (default `Nexus Data`).
/// - `NEXUS_ALLOWED_ORIGINS` — comma-separated origins (default the server's own
///   `http://localhost:PORT` and `http://127.0.0.1:PORT`, plus `PURSE_PUBLIC_URL`).
/// - `NEXUS_USER_VERIFICATION` — `required` (default: a step-up is a biometric) or `preferred`.
public struct NexusConfiguration: Sendable {
    public var relyingParty: RelyingParty
    public var userVerification: String
    public var challengeLifetime: TimeInterval = 60
    public var verificationTokenLifetime: TimeInterval = 300
    public var pinAttempts = 5
    public var pinLockout: TimeInterval = 15 * 60
    /// Cashback earned on every top-up, in percent of the amount (whole naira, rounded down).
    public var cashbackPercent = 1
    public var sandboxFunding: Bool

    public init(relyingParty: RelyingParty, userVerification: String = "required", sandboxFunding: Bool = true) {
        self.relyingParty = relyingParty
        self.userVerification = userVerification
        self.sandboxFunding = sandboxFunding
    }

    public static func from(_ configuration: PurseConfiguration) throws -> NexusConfiguration {
        let env = configuration.environment
        let rpID = env["NEXUS_RP_ID"].flatMap { $0.isEmpty ? nil : $0 } ?? "localhost"
        var origins: Set<String>
        if let list = env["NEXUS_ALLOWED_ORIGINS"], !list.isEmpty {
            origins = Set(list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        } else {
            origins = ["http://localhost:\(configuration.port)", "http://127.0.0.1:\(configuration.port)"]
            if let publicURL = configuration.publicURL { origins.insert(publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL) }
        }
        for origin in origins {
            guard let url = URL(string: origin), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil, url.path.isEmpty else {
                throw ConfigurationError("NEXUS_ALLOWED_ORIGINS: \(origin) is not an origin (scheme://host[:port])")
            }
        }
        let verification = env["NEXUS_USER_VERIFICATION"].flatMap { $0.isEmpty ? nil : $0 } ?? "required"
        guard ["required", "preferred"].contains(verification) else {
            throw ConfigurationError("NEXUS_USER_VERIFICATION must be required or preferred")
        }
        return NexusConfiguration(
            relyingParty: RelyingParty(id: rpID, name: env["NEXUS_RP_NAME"] ?? "Nexus Data", allowedOrigins: origins),
            userVerification: verification,
            sandboxFunding: !configuration.isProduction
        )
    }
}

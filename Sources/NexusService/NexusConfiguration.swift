import Foundation
import PurseDatabase
import PurseFormats
import PurseServer

/// Nexus settings, from the environment.
///
/// - `NEXUS_RP_ID` — the WebAuthn relying party id (default `localhost`).
/// - `NEXUS_RP_NAME` — shown by authenticators (default `Nexus Data`).
/// - `NEXUS_ALLOWED_ORIGINS` — comma-separated origins (default the server's own
///   `http://localhost:PORT` and `http://127.0.0.1:PORT`, plus `PURSE_PUBLIC_URL`).
/// - `NEXUS_USER_VERIFICATION` — `required` (default: a step-up is a biometric) or `preferred`.
/// - `VTPASS_URL` — the airtime supplier (`https://vtpass.com`, `https://sandbox.vtpass.com`), with
///   `VTPASS_API_KEY`, `VTPASS_SECRET_KEY` and `VTPASS_PUBLIC_KEY`. Unset (development only): the
///   built-in VTpass sandbox under `/sandbox/vtpass`, its keys generated into the data directory;
///   `VTPASS_SANDBOX_PENDING_SECONDS` (default 20) is how long its processing purchases stay pending.
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
    /// The supplier's API base URL (VTpass's, or the built-in sandbox's).
    public var supplierURL: String
    public var supplierAPIKey: String
    public var supplierSecretKey: String
    public var supplierPublicKey: String
    /// Whether `purse serve` hosts the VTpass sandbox the supplier URL points at.
    public var usesSupplierSandbox: Bool
    public var sandboxPendingSeconds: TimeInterval = 20
    /// How long a top-up request waits for the supplier's first answer before answering `pending`.
    public var supplierTimeout: Duration = .seconds(5)
    /// Requeries of a pending delivery: the first after `base`, doubling up to `maximum`; after
    /// `deliveryChecks` the delivery is left pending for an operator (logged as an error).
    public var deliveryBackoff = JobBackoff(base: 10, maximum: 1800)
    public var deliveryChecks = 30

    public init(
        relyingParty: RelyingParty, userVerification: String = "required", sandboxFunding: Bool = true,
        supplierURL: String = "http://127.0.0.1:8080/sandbox/vtpass", supplierAPIKey: String = "", supplierSecretKey: String = "",
        supplierPublicKey: String = "", usesSupplierSandbox: Bool = true
    ) {
        self.relyingParty = relyingParty
        self.userVerification = userVerification
        self.sandboxFunding = sandboxFunding
        self.supplierURL = supplierURL
        self.supplierAPIKey = supplierAPIKey
        self.supplierSecretKey = supplierSecretKey
        self.supplierPublicKey = supplierPublicKey
        self.usesSupplierSandbox = usesSupplierSandbox
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
        func value(_ name: String) -> String? { env[name].flatMap { $0.isEmpty ? nil : $0 } }
        var nexus = NexusConfiguration(
            relyingParty: RelyingParty(id: rpID, name: env["NEXUS_RP_NAME"] ?? "Nexus Data", allowedOrigins: origins),
            userVerification: verification,
            sandboxFunding: !configuration.isProduction
        )
        if let url = value("VTPASS_URL") {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
                throw ConfigurationError("VTPASS_URL must be an http(s) URL such as https://vtpass.com")
            }
            guard let apiKey = value("VTPASS_API_KEY"), let secretKey = value("VTPASS_SECRET_KEY"), let publicKey = value("VTPASS_PUBLIC_KEY") else {
                throw ConfigurationError("VTPASS_URL needs VTPASS_API_KEY, VTPASS_SECRET_KEY and VTPASS_PUBLIC_KEY")
            }
            (nexus.supplierURL, nexus.supplierAPIKey, nexus.supplierSecretKey, nexus.supplierPublicKey) = (url, apiKey, secretKey, publicKey)
            nexus.usesSupplierSandbox = false
        } else {
            if configuration.isProduction { throw ConfigurationError("VTPASS_URL is required when PURSE_ENV=production") }
            let seed = Hex.encode(try ServerSecrets(dataDirectory: configuration.dataDirectory).secret(named: "vtpass-sandbox.key"))
            nexus.supplierURL = "\(configuration.effectivePublicURL)/sandbox/vtpass"
            nexus.supplierAPIKey = value("VTPASS_API_KEY") ?? String(seed.prefix(32))
            nexus.supplierSecretKey = value("VTPASS_SECRET_KEY") ?? "SK_" + String(seed.dropFirst(32).prefix(16))
            nexus.supplierPublicKey = value("VTPASS_PUBLIC_KEY") ?? "PK_" + String(seed.dropFirst(48).prefix(16))
            nexus.usesSupplierSandbox = true
            if let text = value("VTPASS_SANDBOX_PENDING_SECONDS") {
                guard let seconds = TimeInterval(text), seconds >= 0, seconds <= 86_400 else {
                    throw ConfigurationError("VTPASS_SANDBOX_PENDING_SECONDS must be between 0 and 86400")
                }
                nexus.sandboxPendingSeconds = seconds
            }
        }
        return nexus
    }
}

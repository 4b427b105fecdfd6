import Foundation
import PurseServer

/// Where pushes go and how they are signed.
///
/// - `APNS_URL`: the APNs endpoint (default: `api.sandbox.push.apple.com` or `api.push.apple.com`
///   by `APNS_ENVIRONMENT` when a key is configured; otherwise the sandbox inside `purse serve`).
/// - `APNS_KEY_FILE`, `APNS_KEY_ID`, `APNS_TEAM_ID`: the `.p8` signing key, its id, the team id
///   (required in production; in development a sandbox key derived from the server's secrets).
/// - `APNS_ENVIRONMENT`: `sandbox` (development builds of the app) or `production`.
/// - `APNS_CA_FILE`: an extra PEM trust root, for an APNs stand-in with its own certificate.
public struct APNsConfiguration: Sendable {
    public enum Target: Sendable, Equatable {
        /// The sandbox in this process (no network).
        case inProcess
        case url(URL)
    }

    public var target: Target
    public var credentials: APNsCredentials
    public var caFile: String?

    public init(target: Target, credentials: APNsCredentials, caFile: String? = nil) {
        self.target = target
        self.credentials = credentials
        self.caFile = caFile
    }
}

extension APNsConfiguration {
    /// Reads `APNS_URL`, `APNS_KEY_FILE`, `APNS_KEY_ID`, `APNS_TEAM_ID`, `APNS_ENVIRONMENT` and
    /// `APNS_CA_FILE`. Without a key, pushes go to the service's own sandbox, signed with
    /// `sandboxCredentials` (development); `service` names who needs the key in production.
    public static func from(_ configuration: PurseConfiguration, sandboxCredentials: APNsCredentials?, service: String) throws -> APNsConfiguration {
        let env = configuration.environment
        func value(_ name: String) -> String? { env[name].flatMap { $0.isEmpty ? nil : $0 } }
        var credentials = sandboxCredentials
        if let file = value("APNS_KEY_FILE") {
            guard let keyID = value("APNS_KEY_ID"), keyID.utf8.count == 10, let teamID = value("APNS_TEAM_ID"), teamID.utf8.count == 10 else {
                throw ConfigurationError("APNS_KEY_FILE needs APNS_KEY_ID and APNS_TEAM_ID (ten characters each)")
            }
            guard let pem = try? String(contentsOfFile: file, encoding: .utf8) else { throw ConfigurationError("APNS_KEY_FILE: cannot read \(file)") }
            do {
                credentials = try APNsCredentials(keyID: keyID, teamID: teamID, p8: pem)
            } catch {
                throw ConfigurationError("APNS_KEY_FILE must be a P-256 key in PEM (the .p8 file from Apple)")
            }
        }
        guard let credentials else { throw ConfigurationError("\(service) in production needs APNS_KEY_FILE, APNS_KEY_ID and APNS_TEAM_ID") }

        let target: Target
        if let text = value("APNS_URL") {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw ConfigurationError("APNS_URL must be an http(s) URL")
            }
            target = .url(url)
        } else if value("APNS_KEY_FILE") != nil {
            switch value("APNS_ENVIRONMENT") ?? "sandbox" {
            case "sandbox", "development": target = .url(APNsClient.development)
            case "production": target = .url(APNsClient.production)
            default: throw ConfigurationError("APNS_ENVIRONMENT must be sandbox or production")
            }
        } else {
            target = .inProcess
        }
        if let file = value("APNS_CA_FILE"), !FileManager.default.isReadableFile(atPath: file) {
            throw ConfigurationError("APNS_CA_FILE: cannot read \(file)")
        }
        return APNsConfiguration(target: target, credentials: credentials, caFile: value("APNS_CA_FILE"))
    }
}

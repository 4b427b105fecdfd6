import Foundation
import PurseFormats
import PurseServer

/// How the MyCHIPs provider runs. Environment: `CHIPS_HOST` and `CHIPS_PORT` (where clients
/// reach the provider, written into tickets; default the server's own), `CHIPS_AGENT` (the
/// agent id in users' CHIP addresses; default one made for this data directory),
/// `CHIPS_TICKET_MINUTES` (how long a connection ticket stays valid, default 30),
/// `CHIPS_DATE_WINDOW_SECONDS` (how far a signature login's date may be from the provider's
/// clock, default 60 as Wyseman's), `CHIPS_MAX_MESSAGE_BYTES` (largest request frame, default
/// 64 KiB).
public struct ChipsConfiguration: Sendable {
    public var publicHost: String
    public var publicPort: Int
    public var agent: String
    public var ticketLifetime: TimeInterval = 30 * 60
    public var dateWindow: TimeInterval = 60
    public var maxMessageBytes = 64 << 10
    /// How long a websocket request may wait for the database before it is answered with an error.
    public var requestTimeout: Duration = .seconds(10)

    public init(publicHost: String, publicPort: Int, agent: String) {
        self.publicHost = publicHost
        self.publicPort = publicPort
        self.agent = agent
    }

    public static func from(_ configuration: PurseConfiguration) throws -> ChipsConfiguration {
        let env = configuration.environment
        func value(_ name: String) -> String? { env[name].flatMap { $0.isEmpty ? nil : $0 } }
        let agent: String
        if let configured = value("CHIPS_AGENT") {
            guard configured.range(of: #"^[A-Za-z0-9_-]{1,64}$"#, options: .regularExpression) != nil else {
                throw ConfigurationError("CHIPS_AGENT must be 1–64 characters of A–Z, a–z, 0–9, - and _")
            }
            agent = configured
        } else {
            agent = Base64URL.encode(try ServerSecrets(dataDirectory: configuration.dataDirectory).secret(named: "chips-agent.key").prefix(16))
        }
        var result = ChipsConfiguration(publicHost: value("CHIPS_HOST") ?? Self.reachableHost(configuration.host),
                                        publicPort: configuration.port, agent: agent)
        if let text = value("CHIPS_PORT") {
            guard let port = Int(text), (1...65535).contains(port) else { throw ConfigurationError("CHIPS_PORT must be a TCP port") }
            result.publicPort = port
        }
        if let text = value("CHIPS_TICKET_MINUTES") {
            guard let minutes = Int(text), (1...10080).contains(minutes) else { throw ConfigurationError("CHIPS_TICKET_MINUTES must be 1–10080") }
            result.ticketLifetime = TimeInterval(minutes * 60)
        }
        if let text = value("CHIPS_DATE_WINDOW_SECONDS") {
            guard let seconds = Int(text), (1...3600).contains(seconds) else { throw ConfigurationError("CHIPS_DATE_WINDOW_SECONDS must be 1–3600") }
            result.dateWindow = TimeInterval(seconds)
        }
        if let text = value("CHIPS_MAX_MESSAGE_BYTES") {
            guard let bytes = Int(text), (1024...(1 << 20)).contains(bytes) else { throw ConfigurationError("CHIPS_MAX_MESSAGE_BYTES must be 1024–1048576") }
            result.maxMessageBytes = bytes
        }
        return result
    }

    /// A listening address a client can dial: the wildcard becomes loopback.
    static func reachableHost(_ host: String) -> String {
        host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host
    }
}

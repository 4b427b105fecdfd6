import ChipsProtocol
import Foundation
import PurseAPNs
import PurseFormats
import PurseServer

/// How the MyCHIPs provider runs. Environment: `CHIPS_WS_PORT` (the websocket's own port, where
/// real MyCHIPs clients connect, looking for `/clientinfo` one port below it — the server's
/// port; default the server's port + 1, `0` for none), `CHIPS_HOST` and `CHIPS_PORT` (where
/// clients reach the websocket, written into tickets; default this host and the websocket's
/// port), `CHIPS_ORIGIN` (where clients reach the HTTP side, for the links of action reports;
/// default `http://` the tickets' host and port), `CHIPS_AGENT` (the
/// agent id in users' CHIP addresses; default one made for this data directory),
/// `CHIPS_TICKET_MINUTES` (how long a connection ticket stays valid, default 30),
/// `CHIPS_DATE_WINDOW_SECONDS` (how far a signature login's date may be from the provider's
/// clock, default 60 as Wyseman's), `CHIPS_MAX_MESSAGE_BYTES` (largest request frame, default
/// 768 KiB), `CHIPS_APNS_TOPIC` (the wallet app's bundle id, the topic of its pushes; default
/// `org.mychips.chark`), `CHIPS_SIGNATURE_VERIFIER` (`purse-p521`, the default, or
/// `swift-crypto`: which P-521 implementation checks signatures on tallies and chits), and the
/// `APNS_*` settings every service that pushes shares. In
/// development the provider has its own APNs sandbox at `/sandbox/chips/apns`.
public struct ChipsConfiguration: Sendable {
    public var publicHost: String
    public var publicPort: Int
    /// The websocket's own port (serving the same routes as the server's); nil: the server's port only.
    public var webSocketPort: Int?
    /// Where clients reach the provider's HTTP side (`/clientinfo`, action reports), as
    /// `scheme://host[:port]`; nil: plain HTTP at the tickets' host and port (the websocket's
    /// port serves the server's routes too).
    public var origin: String?
    public var agent: String
    public var ticketLifetime: TimeInterval = 30 * 60
    public var dateWindow: TimeInterval = 60
    /// The largest request: a profile photo (``FilesView/maxBytes``) as a JSON Buffer fits.
    public var maxMessageBytes = 768 << 10
    /// How long a websocket request may wait for the database before it is answered with an error.
    public var requestTimeout: Duration = .seconds(10)
    /// Where pushes go (APNs, or this provider's sandbox) and how they are signed; nil: no pushes.
    public var apns: APNsConfiguration?
    /// The key the provider's APNs sandbox takes provider tokens from (development).
    public var apnsSandbox: APNsCredentials?
    public var pushTopic = "org.mychips.chark"
    /// A user whose app was connected this recently gets notices on the websocket, not as pushes.
    public var presenceWindow: TimeInterval = 120
    /// What checks the P-521 signatures on tallies and chits: PurseP521 (P-521's Mersenne-prime
    /// field in Swift, a few times faster than swift-crypto's generic code), or swift-crypto.
    public var signatureVerifier: ChipsSignatureVerifier = .purseP521

    public static let sandboxKeyID = "CHIPSKEY01"
    public static let sandboxTeamID = "PURSETEAM0"

    /// ``origin``, or plain HTTP at the tickets' host and port.
    public var httpOrigin: String {
        if let origin { return origin }
        let port = publicPort
        let host = publicHost.contains(":") ? "[\(publicHost)]" : publicHost
        return "http://\(host):\(port)"
    }

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
        var webSocketPort: Int? = configuration.port < 65535 ? configuration.port + 1 : nil
        if let text = value("CHIPS_WS_PORT") {
            guard let port = Int(text), (0...65535).contains(port) else { throw ConfigurationError("CHIPS_WS_PORT must be a TCP port, or 0 for none") }
            webSocketPort = port == 0 || port == configuration.port ? nil : port
        }
        var result = ChipsConfiguration(publicHost: value("CHIPS_HOST") ?? Self.reachableHost(configuration.host),
                                        publicPort: webSocketPort ?? configuration.port, agent: agent)
        result.webSocketPort = webSocketPort
        if let text = value("CHIPS_PORT") {
            guard let port = Int(text), (1...65535).contains(port) else { throw ConfigurationError("CHIPS_PORT must be a TCP port") }
            result.publicPort = port
        }
        if let text = value("CHIPS_ORIGIN") {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil, url.path.isEmpty || url.path == "/",
                  url.query == nil else {
                throw ConfigurationError("CHIPS_ORIGIN must be an http or https origin, like https://chips.example.com")
            }
            result.origin = text.hasSuffix("/") ? String(text.dropLast()) : text
        }
        if let text = value("CHIPS_TICKET_MINUTES") {
            guard let minutes = Int(text), (1...10080).contains(minutes) else { throw ConfigurationError("CHIPS_TICKET_MINUTES must be 1–10080") }
            result.ticketLifetime = TimeInterval(minutes * 60)
        }
        if let text = value("CHIPS_DATE_WINDOW_SECONDS") {
            guard let seconds = Int(text), (1...3600).contains(seconds) else { throw ConfigurationError("CHIPS_DATE_WINDOW_SECONDS must be 1–3600") }
            result.dateWindow = TimeInterval(seconds)
        }
        if !configuration.isProduction {
            result.apnsSandbox = APNsCredentials(keyID: Self.sandboxKeyID, teamID: Self.sandboxTeamID,
                                                 privateKey: try ServerSecrets(dataDirectory: configuration.dataDirectory).p256Key(named: "chips-apns-sandbox.key"))
        }
        if !configuration.isProduction || value("APNS_KEY_FILE") != nil {
            result.apns = try APNsConfiguration.from(configuration, sandboxCredentials: result.apnsSandbox, service: "MyCHIPs")
        }
        if let topic = value("CHIPS_APNS_TOPIC") {
            guard topic.range(of: #"^[A-Za-z0-9.-]{1,155}$"#, options: .regularExpression) != nil else {
                throw ConfigurationError("CHIPS_APNS_TOPIC must be an app bundle id")
            }
            result.pushTopic = topic
        }
        switch value("CHIPS_SIGNATURE_VERIFIER") {
        case nil, "purse-p521": result.signatureVerifier = .purseP521
        case "swift-crypto": result.signatureVerifier = .swiftCrypto
        default: throw ConfigurationError("CHIPS_SIGNATURE_VERIFIER must be purse-p521 or swift-crypto")
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

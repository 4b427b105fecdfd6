import HTTPTypes
import Foundation
import Logging
import PurseDatabase
import PurseSQLite

/// Everything `purse serve` can be told, from options or the environment. The settings, their
/// defaults and what they do are listed once, in the table `purse serve --help` prints
/// (docs/configuration.md is generated from it).
public struct PurseConfiguration: Sendable {
    public enum Mode: String, Sendable { case development, production }

    public var host: String = "127.0.0.1"
    public var port: Int = 8080
    public var dataDirectory: String = "data"
    public var logLevel: Logger.Level = .info
    public var databaseURL: String?
    public var mode: Mode = .development
    public var jwtSecret: String?
    /// The key of ``SecretSealer`` (`PURSE_SEAL_KEY`); nil: ``sealKeyFile``, else `DATA_DIR/secrets/seal.key`.
    public var sealKey: String?
    /// A file holding the key of ``SecretSealer`` (`PURSE_SEAL_KEY_FILE`), as a deployment's secret
    /// store mounts it (systemd's `LoadCredential=`, a Kubernetes secret volume), outside the data directory.
    public var sealKeyFile: String?
    public var sessionLifetime: TimeInterval = 30 * 24 * 3600
    public var bcryptCost: UInt8 = 10
    public var publicURL: String?
    /// Which of the SQLite engine's hooks are on (``SQLiteTuning``).
    public var sqliteTuning: SQLiteTuning = .all
    /// Whether the server runs due jobs (webhook deliveries, …) in the background. Off, they run
    /// when ``PurseServerApp/jobWorker``'s ``JobWorker/runDue(batches:)`` is called: tests that
    /// move an injected clock run them at the moments they choose.
    public var runsJobsInBackground = true
    /// How long a claimed job is a worker's (``JobQueue/lease``). The worker renews it while the job
    /// runs, so this bounds only how long a job of a crashed process waits before another takes it.
    public var jobLease: TimeInterval = 30
    /// Peers whose `X-Forwarded-For` is believed: the proxy in front of the replicas. A request
    /// from any other peer is that peer's, whatever it claims to forward.
    public var trustedProxies: Set<String> = []
    /// Timeouts, head sizes and connection caps of the HTTP server.
    public var httpLimits = HTTPServerLimits()
    /// The process environment, for modules' own settings (`NEXUS_RP_ID`, `STRIPE_SECRET_KEY` …).
    public var environment: [String: String] = [:]

    public init() {}

    /// Reads the `PURSE_*` variables and `DATABASE_URL`.
    /// - Throws: ``ConfigurationError`` naming a variable whose value is unusable.
    public static func fromEnvironment(_ env: [String: String] = ProcessInfo.processInfo.environment) throws -> PurseConfiguration {
        var config = PurseConfiguration()
        config.environment = env
        if let host = env["PURSE_HOST"], !host.isEmpty { config.host = host }
        if let port = env["PURSE_PORT"], !port.isEmpty {
            guard let value = Int(port), (0...65535).contains(value) else { throw ConfigurationError("PURSE_PORT must be a port number, got \(port)") }
            config.port = value
        }
        if let dir = env["PURSE_DATA_DIR"], !dir.isEmpty { config.dataDirectory = dir }
        if let level = env["PURSE_LOG_LEVEL"], !level.isEmpty {
            guard let value = Logger.Level(rawValue: level.lowercased()) else { throw ConfigurationError("PURSE_LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical") }
            config.logLevel = value
        }
        if let url = env["DATABASE_URL"], !url.isEmpty { config.databaseURL = url }
        if let mode = env["PURSE_ENV"], !mode.isEmpty {
            guard let value = Mode(rawValue: mode.lowercased()) else { throw ConfigurationError("PURSE_ENV must be development or production") }
            config.mode = value
        }
        if let secret = env["PURSE_JWT_SECRET"], !secret.isEmpty { config.jwtSecret = secret }
        if let key = env["PURSE_SEAL_KEY"], !key.isEmpty { config.sealKey = key }
        if let file = env["PURSE_SEAL_KEY_FILE"], !file.isEmpty { config.sealKeyFile = file }
        if let ttl = env["PURSE_SESSION_TTL"], !ttl.isEmpty {
            guard let value = TimeInterval(ttl), value > 0 else { throw ConfigurationError("PURSE_SESSION_TTL must be a positive number of seconds") }
            config.sessionLifetime = value
        }
        if let cost = env["PURSE_BCRYPT_COST"], !cost.isEmpty {
            guard let value = UInt8(cost), (4...31).contains(value) else { throw ConfigurationError("PURSE_BCRYPT_COST must be between 4 and 31") }
            config.bcryptCost = value
        }
        if let url = env["PURSE_PUBLIC_URL"], !url.isEmpty { config.publicURL = url }
        if let tuning = env["PURSE_SQLITE_TUNING"], !tuning.isEmpty {
            do {
                config.sqliteTuning = try SQLiteTuning(parsing: tuning)
            } catch {
                throw ConfigurationError("PURSE_SQLITE_TUNING: \(error)")
            }
        }
        if let lease = env["PURSE_JOB_LEASE_SECONDS"], !lease.isEmpty {
            guard let value = TimeInterval(lease), (1...3600).contains(value) else { throw ConfigurationError("PURSE_JOB_LEASE_SECONDS must be 1 to 3600") }
            config.jobLease = value
        }
        func seconds(_ name: String, _ range: ClosedRange<Int>) throws -> Duration? {
            guard let text = env[name], !text.isEmpty else { return nil }
            guard let value = Int(text), range.contains(value) else { throw ConfigurationError("\(name) must be \(range.lowerBound) to \(range.upperBound) seconds") }
            return .seconds(value)
        }
        func count(_ name: String, _ range: ClosedRange<Int>) throws -> Int? {
            guard let text = env[name], !text.isEmpty else { return nil }
            guard let value = Int(text), range.contains(value) else { throw ConfigurationError("\(name) must be \(range.lowerBound) to \(range.upperBound)") }
            return value
        }
        if let value = try seconds("PURSE_HTTP_HEADER_TIMEOUT", 1...600) { config.httpLimits.headerTimeout = value }
        if let value = try seconds("PURSE_HTTP_IDLE_TIMEOUT", 1...3600) { config.httpLimits.idleTimeout = value }
        if let value = try seconds("PURSE_HTTP_BODY_TIMEOUT", 1...3600) { config.httpLimits.bodyTimeout = value }
        if let value = try count("PURSE_HTTP_MAX_REQUEST_LINE", 256...(1 << 20)) { config.httpLimits.maxRequestLine = value }
        if let value = try count("PURSE_HTTP_MAX_HEADER_BYTES", 1024...(1 << 20)) { config.httpLimits.maxHeaderBytes = value }
        if let value = try count("PURSE_HTTP_MAX_CONNECTIONS", 1...1_000_000) { config.httpLimits.maxConnections = value }
        if let value = try count("PURSE_HTTP_MAX_CONNECTIONS_PER_PEER", 1...1_000_000) { config.httpLimits.maxConnectionsPerPeer = value }
        if let proxies = env["PURSE_TRUSTED_PROXIES"], !proxies.isEmpty {
            config.trustedProxies = Set(proxies.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty })
        }
        return config
    }

    /// The database URL in force: `DATABASE_URL`, else the SQLite file in the data directory.
    public var effectiveDatabaseURL: String {
        databaseURL ?? URL(fileURLWithPath: dataDirectory).appendingPathComponent("purse.sqlite").path
    }

    /// The URL users reach this server at.
    public var effectivePublicURL: String {
        if let publicURL { return publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL }
        let shownHost = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : host
        return "http://\(shownHost):\(port)"
    }

    public var isProduction: Bool { mode == .production }
}

public struct ConfigurationError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

import HummingbirdTesting
import HTTPTypes
import Foundation
import Logging
import PurseDatabase
import PurseServer
import PurseTestSupport
import Synchronization
import Testing

/// Captures log lines: every line of the process (``shared``, once ``bootstrap`` ran), or the lines
/// of one ``logger``.
final class CapturedLogs: Sendable {
    static let shared = CapturedLogs()
    let lines = Mutex<[String]>([])
    static let bootstrap: Void = {
        LoggingSystem.bootstrap { label in CaptureHandler(label: label, sink: shared) }
    }()

    /// A logger whose lines this capture alone receives.
    var logger: Logger { Logger(label: "test") { label in CaptureHandler(label: label, sink: self) } }

    struct CaptureHandler: LogHandler {
        var label: String
        let sink: CapturedLogs
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            sink.lines.withLock { $0.append("\(event.level) \(event.message) \(all)") }
        }
    }
}

@Suite("Logs")
struct LoggingTests {
    @Test func logsNeverContainPasswordsOrTokens() async throws {
        _ = CapturedLogs.bootstrap
        let server = try await TestServer.make { $0.logLevel = .trace }
        let password = "Sup3r-Secret-Passw0rd"
        let token = try await server.withRouter { client in
            let registered = try await client.json(.post, "/auth/register", #"{"email": "log@example.com", "password": "\#(password)"}"#)
            let token = try #require(registered.object["token"] as? String)
            _ = try await client.json(.get, "/auth/me?token=\(token)", token: token)
            _ = try await client.json(.post, "/auth/login", #"{"email": "log@example.com", "password": "\#(password)x"}"#)
            return token
        }
        let lines = CapturedLogs.shared.lines.withLock { $0 }
        #expect(lines.contains { $0.contains("/auth/register") }, "request lines are logged")
        #expect(!lines.contains { $0.contains(password) })
        #expect(!lines.contains { $0.contains(token) })
    }
}

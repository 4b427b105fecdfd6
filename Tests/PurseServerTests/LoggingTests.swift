import HummingbirdTesting
import HTTPTypes
import Foundation
import Logging
import PurseDatabase
import PurseServer
import PurseTestSupport
import Synchronization
import Testing

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

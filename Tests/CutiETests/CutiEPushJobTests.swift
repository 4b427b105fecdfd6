import CutiE
@testable import CutiEService
import Crypto
import Foundation
import HTTPTypes
import PurseAPNs
import PurseDatabase
import PurseFormats
import PurseHTTP
import PurseServer
import PurseTestSupport
import Testing

/// Cuti-E's push job over a scripted APNs: what Apple answers decides what becomes of the
/// registration.
@Suite("Cuti-E: pushes through APNs")
struct CutiEPushJobTests {
    static let token = String(repeating: "ab", count: 32)

    @Test("the push job: 410 deactivates the registration, 503 retries with backoff, then it is sent")
    func pushJob() async throws {
        let scripted = ScriptedAPNs([
            TransportResponse(status: 503, body: Data(#"{"reason":"ServiceUnavailable"}"#.utf8)),
            TransportResponse(status: 200, headerFields: [.apnsID: "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"]),
            TransportResponse(status: 410, body: Data(#"{"reason":"Unregistered","timestamp":1}"#.utf8)),
        ])
        var purse = PurseConfiguration()
        purse.dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-apns-\(UUID().uuidString)").path
        var configuration = try CutiEService.CutiEConfiguration.from(purse)
        configuration.apns.target = .url(URL(string: "https://apns.example")!)
        let cutie = configuration
        let server = try await TestServer.make(modules: [CutiEModule(configuration: cutie, apnsTransport: scripted)]) { $0.runsJobsInBackground = false }
        try await server.withRouter { client in
            let h = CutiEHarness(server: server, client: client, configuration: cutie)
            let phone = h.device()
            let id = try await phone.cutie.createConversation(category: .bug, message: "Hi")
            try await phone.cutie.registerForPushNotifications(deviceToken: Data(Hex.decode(Self.token)!), bundleId: nil, environment: "sandbox")
            let admin = try await h.adminSession()
            _ = try await h.adminReply(id, "First", session: admin)
            await h.runJobs()
            var pushes = try await server.environment.database.read { db in try await AdminStore().pushes(conversation: ConversationID(id), limit: 10, in: db) }
            #expect(pushes.map(\.status) == [.queued] && pushes[0].reason == "ServiceUnavailable")
            server.clock.advance(by: 5)
            await h.runJobs()
            pushes = try await server.environment.database.read { db in try await AdminStore().pushes(conversation: ConversationID(id), limit: 10, in: db) }
            #expect(pushes.map(\.status) == [.sent] && pushes[0].attempts == 2)
            _ = try await h.adminReply(id, "Second", session: admin)
            await h.runJobs()
            pushes = try await server.environment.database.read { db in try await AdminStore().pushes(conversation: ConversationID(id), limit: 10, in: db) }
            #expect(pushes.first?.status == .unregistered)
            // No more pushes to a token Apple said is gone.
            let (_, third) = try await h.adminReply(id, "Third", session: admin)
            #expect(third["pushes_queued"]?.int64Value == 0)
        }
    }
}

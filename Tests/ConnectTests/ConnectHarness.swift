import ConnectService
import Foundation
import PurseHTTP
import HTTPTypes
import HummingbirdTesting
import NIOCore
import PurseDatabase
import PurseKit
import PurseHTTPNIO
import PurseServer
import PurseTestSupport
import StripeConnect

/// A live server on a known loopback port (the Stripe sandbox calls back into it), with the
/// real client core talking to it over HTTP.
struct ConnectHarness: Sendable {
    let server: TestServer
    let client: LiveHTTPClient
    let base: URL
    let connect: ConnectConfiguration

    static func withServer(
        environment: [String: String] = [:], adjust: @Sendable (inout ConnectConfiguration) -> Void = { _ in },
        _ body: @Sendable (ConnectHarness) async throws -> Void
    ) async throws {
        let port = try LoopbackPort.free()
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-connect-\(UUID().uuidString)").path
        var configuration = PurseConfiguration()
        configuration.port = port
        configuration.dataDirectory = dataDirectory
        configuration.environment = environment
        var adjusted = try ConnectConfiguration.from(configuration)
        adjust(&adjusted)
        let connect = adjusted
        let module = ConnectModule(configuration: connect)
        let server = try await TestServer.make(modules: [module]) {
            $0.runsJobsInBackground = false
            $0.port = port
            $0.dataDirectory = dataDirectory
            $0.environment = environment
        }
        let base = URL(string: "http://127.0.0.1:\(port)")!
        try await server.withRunningServer { client in
            try await body(ConnectHarness(server: server, client: client, base: base, connect: connect))
        }
    }

    /// A signed-in host and its client core.
    func host() async throws -> (token: String, service: StripeConnectService, api: APIClient) {
        let (token, _) = try await client.register()
        let api = APIClient(session: ClientSession(baseURL: base), transport: AsyncHTTPClientTransport(), retry: .none)
        try await api.session.setToken(token)
        return (token, StripeConnectService(api: api, origin: base.absoluteString), api)
    }

    /// Fills in the sandbox's hosted onboarding form as a person would; returns where it redirects.
    func completeOnboarding(at url: URL, action: String = "submit", omit: String? = nil) async throws -> (status: Int, location: String?) {
        var fields: [(String, String)] = [("business_type", "individual"), ("business_name", "Jenny's Events"), ("business_url", "https://example.com"),
                                          ("email", "host@example.com"), ("tos", "accepted"), ("action", action)]
        let defaults: [(String, String)] = [("first_name", "Jenny"), ("last_name", "Rosen"), ("phone", "+12025550143"), ("dob", "1990-01-01"),
                                            ("address_line1", "address_full_match"), ("city", "San Francisco"), ("postal_code", "94103"),
                                            ("ssn_last_4", "0000"), ("routing_number", "110000000"), ("account_number", "000123456789")]
        fields += defaults.filter { $0.0 != omit }
        let body = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? $0.1)" }.joined(separator: "&")
        let response = try await client.execute(uri: url.path, method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                                                body: ByteBuffer(string: body))
        return (Int(response.status.code), response.headers[.location])
    }

    /// Delivers the webhooks due (the sandbox queues them as jobs), then reads the status.
    func deliverWebhooksAndReadStatus(_ service: StripeConnectService) async throws -> ConnectAccountStatus {
        await server.app.jobWorker.runDue()
        return try await service.getAccountStatus()
    }

}


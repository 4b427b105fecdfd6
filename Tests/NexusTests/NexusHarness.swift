import Foundation
import PurseHTTP
import HTTPTypes
import HummingbirdTesting
import NexusPay
import NexusService
import PurseDatabase
import PurseKit
import PurseServer
import PurseTestSupport
import SQLKit

/// A Nexus server in-process with the real client core talking to it.
struct NexusHarness {
    static let origin = "http://localhost:8080"
    let server: TestServer
    let client: any TestClientProtocol
    /// The module's configuration (its supplier keys are the sandbox's).
    let nexus: NexusConfiguration

    static func withServer(
        engine: DatabaseEngine = .sqlite, production: Bool = false, adjust: (inout NexusConfiguration) -> Void = { _ in },
        _ body: @Sendable (NexusHarness) async throws -> Void
    ) async throws {
        var configuration = PurseConfiguration()
        configuration.port = 8080
        configuration.dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-nexus-\(UUID().uuidString)").path
        if production { configuration.mode = .production }
        configuration.environment = ["NEXUS_ALLOWED_ORIGINS": origin]
        if production {
            configuration.environment.merge(["VTPASS_URL": "http://localhost:8080/vtpass", "VTPASS_API_KEY": "api", "VTPASS_SECRET_KEY": "SK_s", "VTPASS_PUBLIC_KEY": "PK_p"]) { $1 }
        }
        var adjusted = try NexusConfiguration.from(configuration)
        adjust(&adjusted)
        let nexus = adjusted
        // The supplier client reaches the VTpass sandbox in the process as `purse serve` does;
        // in production mode the configured (unreachable) supplier goes through the router.
        let supplier = DeferredRouterTransport()
        let server = try await TestServer.make(engine: engine, modules: [NexusModule(configuration: nexus, supplierTransport: production ? supplier : nil)]) {
            if production { $0.mode = .production }
            $0.runsJobsInBackground = false
        }
        defer { try? FileManager.default.removeItem(atPath: configuration.dataDirectory) }
        try await server.withRouter { client in
            supplier.bind(client)
            try await body(NexusHarness(server: server, client: client, nexus: nexus))
        }
    }

    /// Runs the jobs due now (deliveries the top-up request left pending).
    func runDueJobs() async {
        await server.app.jobWorker.runDue()
    }

    /// A signed-in user with its own device (secure store, authenticator) and client core.
    struct User {
        let id: UserID
        let token: String
        let transport: RouterTransport
        let api: APIClient
        let nexus: NexusClient
        let store: InMemorySecureStore
        let authenticator: DeviceAuthenticator
    }

    func makeUser(origin: String = NexusHarness.origin) async throws -> User {
        let (token, id) = try await client.register()
        let transport = RouterTransport(client: client)
        let session = ClientSession(baseURL: URL(string: "http://localhost:8080")!, store: InMemorySecureStore())
        try await session.setToken(token)
        let api = APIClient(session: session, transport: transport, retry: .none)
        let store = InMemorySecureStore()
        return User(
            id: UserID(id), token: token, transport: transport, api: api, nexus: NexusClient(api: api), store: store,
            authenticator: DeviceAuthenticator(store: store, origin: origin)
        )
    }

    /// Registers a user, enrols its device and funds its wallet.
    func enrolledUser(funding: Int = 5_000) async throws -> User {
        let user = try await makeUser()
        _ = try await Enrollment(client: user.nexus, gate: SoftwareBiometricGate.scripted([.success]), authenticator: user.authenticator).enroll(name: "Test phone")
        if funding > 0 { _ = try await user.nexus.fund(amount: funding) }
        return user
    }

    /// options → sign → (raw) verify answer.
    func verify(_ user: User, userVerified: Bool = true, mutate: (inout Assertion) -> Void = { _ in }) async throws -> TestResponse {
        let options = try await user.nexus.authenticationOptions()
        var assertion = try await user.authenticator.makeAssertion(for: options, userVerified: userVerified)
        mutate(&assertion)
        return try await post("/biometric/auth/verify", assertion, token: user.token)
    }

    func post(_ path: String, _ body: some Encodable, token: String, headers: HTTPFields = [:]) async throws -> TestResponse {
        let data = try JSONEncoder().encode(body)
        return try await client.json(.post, path, String(decoding: data, as: UTF8.self), token: token, headers: headers)
    }

    func balance(_ user: User) async throws -> Int {
        try await user.nexus.balance().balance
    }

    func ledgerTransactionCount(kind: String) async throws -> Int {
        try await server.environment.database.read { db in
            try await db.raw("SELECT COUNT(*) AS n FROM ledger_transactions WHERE kind = \(bind: kind)").first()?.decode(column: "n", as: Int.self) ?? 0
        }
    }

    func audit() async throws -> [String] {
        try await server.environment.database.read { db in try await server.environment.ledger.audit(in: db) }
    }

    static let order = TopupOrder(amount: 500, productCode: "AIRTIME_MTN", recipientPhone: "08012345678", supplierSlug: "mtn")
}

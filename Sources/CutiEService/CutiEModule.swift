import AsyncHTTPClient
import Foundation
import PurseAPNs
import Hummingbird
import Logging
import NIOCore
import NIOSSL
import PurseDatabase
import PurseHTTP
import PurseHTTPNIO
import PurseServer
import ServiceLifecycle
import SQLKit
import Synchronization

/// Cuti-E: the in-app feedback SDK's backend. The SDK's API under `/v1` (devices, conversations,
/// push registration, device linking), the admin dashboard at `/cutie/admin` with its JSON API
/// under `/v1/admin`, pushes through APNs, and in development an APNs sandbox at
/// `/sandbox/apns` and the app `app_sandbox`.
public struct CutiEModule: PurseModule {
    /// Where the APNs sandbox is mounted, and the path the in-process push client uses.
    static let apnsSandboxPath = "sandbox/apns"
    public let id = "cutie"
    public let title = "Cuti-E"
    public let summary = "In-app feedback: conversations between app users and support staff, replies pushed over APNs, linked devices sharing one inbox, and an admin dashboard."
    let configuration: CutiEConfiguration
    /// Where pushes go when `APNS_URL` is not the in-process sandbox; tests pass their own.
    let apnsTransport: (any HTTPTransport)?
    let mounted = MountedPush()

    public init(configuration: CutiEConfiguration, apnsTransport: (any HTTPTransport)? = nil) {
        self.configuration = configuration
        self.apnsTransport = apnsTransport
    }

    public var links: [ModuleLink] {
        var links = [ModuleLink("Admin dashboard", "/cutie/admin")]
        if configuration.sandbox != nil {
            links.append(ModuleLink("APNs sandbox: pushes received (JSON)", "/sandbox/apns/deliveries"))
            links.append(ModuleLink("App Attest development root (PEM)", "/sandbox/appattest/root"))
        }
        return links
    }

    public var migrations: [Migration] { CutiEMigrations.all }

    /// What Cuti-E's APNs sandbox received.
    static let apnsSandboxTables = APNsSandbox.Tables(prefix: "cutie_apns_sandbox")

    public func mount(on router: Router<PurseRequestContext>, environment: ServerEnvironment) async throws -> [any Service] {
        var sandboxEndpoint: APNsSandbox?
        if let sandbox = configuration.sandbox {
            let endpoint = APNsSandbox(environment: environment, credentials: sandbox.apnsCredentials, tables: Self.apnsSandboxTables) { topic, db in
                try await db.raw("SELECT 1 AS known FROM cutie_apps WHERE bundle_id = \(bind: topic)").first() != nil
            }
            endpoint.mount(on: router, at: Self.apnsSandboxPath)
            sandboxEndpoint = endpoint
            try await environment.database.transaction { db in
                if let app = try await CutiEApp.load(sandbox.appID, in: db) {
                    if app.teamID == nil {
                        _ = try await CutiEApp.updateAttest(sandbox.appID, teamID: .some(sandbox.teamID), requireAppAttest: nil, attestEnvironment: "development", in: db)
                    }
                } else {
                    _ = try await CutiEApp.create(id: sandbox.appID, name: "Sandbox app", bundleID: sandbox.bundleID, apnsEnvironment: "sandbox",
                                                  teamID: sandbox.teamID, now: environment.now(), in: db)
                }
            }
            if let ca = configuration.appAttestDevelopmentCA { AppAttestSandbox(ca: ca, environment: environment).mount(on: router) }
            if let signer = configuration.storeKitSigner { StoreKitSandbox(signer: signer, environment: environment).mount(on: router) }
            environment.logger.notice("Cuti-E sandbox app", metadata: ["app_id": "\(sandbox.appID)", "bundle_id": "\(sandbox.bundleID)"])
        }
        let client: APNsClient
        switch configuration.apns.target {
        case .inProcess:
            guard let sandboxEndpoint else { throw ConfigurationError("Cuti-E needs APNS_URL or APNS_KEY_FILE when the APNs sandbox is off") }
            client = APNsClient(baseURL: APNsSandbox.inProcessBaseURL(at: Self.apnsSandboxPath), transport: sandboxEndpoint.inProcessTransport(at: Self.apnsSandboxPath),
                                credentials: configuration.apns.credentials, now: environment.now)
        case .url(let url):
            client = APNsClient(baseURL: url, transport: try apnsTransport ?? APNsTransports.http2(caFile: configuration.apns.caFile),
                                credentials: configuration.apns.credentials, now: environment.now)
        }
        mounted.client.withLock { $0 = client }

        let auth = DeviceAuthenticator(environment: environment, configuration: configuration)
        SDKRoutes(environment: environment, configuration: configuration, auth: auth,
                  limits: DeviceLimits(configuration: configuration, database: environment.database)).mount(on: router)
        let accounts = AdminAccounts(environment: environment, sessionHours: configuration.adminSessionHours,
                                     signIns: SignInLimiter(name: "cutie.admin.login", database: environment.database, sealer: environment.sealer,
                                                            accountPerSecond: 0.2),
                                     decoyHash: try await environment.passwords.hash(RandomID.hex(bytes: 24)))
        let desk = AdminDesk(environment: environment, configuration: configuration)
        AdminAPI(accounts: accounts, desk: desk).mount(on: router)
        AdminDashboard(accounts: accounts, desk: desk).mount(on: router)
        return []
    }

    public func jobHandlers(environment: ServerEnvironment) -> [JobHandler] {
        let mounted = mounted
        return [
            JobHandler(kind: PushDelivery.jobKind, backoff: JobBackoff(base: 2, maximum: 600)) { job in
                guard let client = mounted.client.withLock({ $0 }) else { throw ConfigurationError("Cuti-E is not mounted") }
                try await PushDelivery(environment: environment, client: client).run(job)
            },
        ]
    }

    public var openAPI: OpenAPIFragment { CutiEOpenAPI.fragment(sandbox: configuration.sandbox != nil) }

    public func reshape(_ refusal: APIError, path: String) -> APIError {
        APNsSandbox.reshape(refusal, path: path, mountPath: Self.apnsSandboxPath)
    }

    // MARK: Operator tasks (the CLI)

    /// Creates an admin account (`purse cutie admin create`).
    public static func createAdmin(email: String, name: String, role: String, password: String, environment: ServerEnvironment) async throws -> (id: String, email: String) {
        let accounts = AdminAccounts(environment: environment, sessionHours: 1, signIns: SignInLimiter(name: "cutie.admin.login", database: environment.database, sealer: environment.sealer), decoyHash: "")
        let admin = try await accounts.create(email: email, name: name, role: role, password: password)
        return (admin.id, admin.email)
    }

    /// What the CLI and the dashboard say when an app accepts signed requests only.
    public static var signedRequestsWarning: String { CutiEApp.signedRequestsWarning }

    /// Creates an app (`purse cutie app create`): returns its id.
    public static func createApp(id: String?, name: String, bundleID: String, apnsEnvironment: String, teamID: String? = nil, requireAppAttest: Bool = false,
                                 requireSignedRequests: Bool = false, environment: ServerEnvironment) async throws -> String {
        try await environment.database.transaction { db in
            try await CutiEApp.create(id: id, name: name, bundleID: bundleID, apnsEnvironment: apnsEnvironment, teamID: teamID, requireAppAttest: requireAppAttest,
                                      requireSignedRequests: requireSignedRequests, now: environment.now(), in: db).id
        }
    }
}

/// The push client, made by `mount` and used by the push job.
final class MountedPush: Sendable {
    let client = Mutex<APNsClient?>(nil)
}

import Foundation
import HTTPTypes
import Hummingbird
import PurseDatabase
import PurseHTTP
import PurseHTTPNIO
import PurseServer
import ServiceLifecycle

/// Nexus Data: WebAuthn step-up for airtime and data top-ups, with PIN fallback.
public struct NexusModule: PurseModule {
    public let id = "nexus"
    public let title = "Nexus Data"
    public let summary = "Airtime and data top-ups authorised by a biometric (WebAuthn) step-up, with a PIN fallback."
    let configuration: NexusConfiguration
    let supplierTransport: (any HTTPTransport)?

    /// - Parameter supplierTransport: How the supplier client reaches VTpass; when nil, the
    ///   built-in sandbox in this process (``InProcessTransport``) or AsyncHTTPClient to a real one.
    public init(configuration: NexusConfiguration, supplierTransport: (any HTTPTransport)? = nil) {
        self.configuration = configuration
        self.supplierTransport = supplierTransport
    }

    func supplier(environment: ServerEnvironment) -> VTpassClient {
        let transport: any HTTPTransport
        if let supplierTransport {
            transport = supplierTransport
        } else if configuration.usesSupplierSandbox {
            let sandbox = sandbox(environment: environment)
            transport = InProcessTransport(logger: environment.logger) { sandbox.mount(on: $0) }
        } else {
            transport = AsyncHTTPClientTransport()
        }
        return VTpassClient(
            baseURL: URL(string: configuration.supplierURL)!,
            credentials: .init(apiKey: configuration.supplierAPIKey, secretKey: configuration.supplierSecretKey, publicKey: configuration.supplierPublicKey),
            transport: transport, timeout: configuration.supplierTimeout
        )
    }

    func sandbox(environment: ServerEnvironment) -> VTpassSandbox {
        VTpassSandbox(
            keys: .init(apiKey: configuration.supplierAPIKey, secretKey: configuration.supplierSecretKey, publicKey: configuration.supplierPublicKey),
            pendingSeconds: configuration.sandboxPendingSeconds, environment: environment
        )
    }

    public var links: [ModuleLink] {
        [
            ModuleLink("Web checkout (buy airtime with a passkey)", "/nexus/checkout"),
            ModuleLink("Enrol a passkey", "/nexus/enroll"),
            ModuleLink("Product catalogue (JSON)", "/products"),
        ] + (configuration.usesSupplierSandbox ? [ModuleLink("VTpass sandbox (test numbers)", "/sandbox/vtpass")] : [])
    }

    public var migrations: [Migration] { NexusMigrations.all }

    public func mount(on router: Router<PurseRequestContext>, environment: ServerEnvironment) async throws -> [any Service] {
        let controller = NexusController(configuration: configuration, environment: environment, supplier: supplier(environment: environment))
        controller.mountBiometric(on: router)
        controller.mountWallet(on: router)
        if configuration.usesSupplierSandbox {
            sandbox(environment: environment).mount(on: router)
        }
        NexusPages.mount(on: router)
        let pruner = ChallengePruner(store: controller.store, environment: environment)
        return [PeriodicService("pruning expired challenges", every: .seconds(60), logger: environment.logger) { try await pruner.prune() }]
    }

    public func jobHandlers(environment: ServerEnvironment) -> [JobHandler] {
        [NexusController(configuration: configuration, environment: environment, supplier: supplier(environment: environment)).delivery.jobHandler]
    }

    public func reshape(_ refusal: APIError, path: String) -> APIError {
        // VTpass answers every refusal inside HTTP 200 with its code, and so does its sandbox.
        if path.hasPrefix("/sandbox/vtpass/"), refusal.status == .badRequest {
            return APIError(.ok, body: ["code": "011", "response_description": "INVALID ARGUMENTS"])
        }
        return NexusErrorShape.owns(path) ? NexusErrorShape.reshape(refusal, path: path) : refusal
    }

    public var openAPI: OpenAPIFragment { NexusOpenAPI.fragment(sandboxFunding: configuration.sandboxFunding, supplierSandbox: configuration.usesSupplierSandbox) }
}

/// Deletes WebAuthn challenges a day past expiry (run once a minute by the module's service).
struct ChallengePruner: Sendable {
    let store: NexusStore
    let environment: ServerEnvironment

    @discardableResult
    func prune() async throws -> Int {
        try await environment.database.transaction { db in try await store.pruneChallenges(now: environment.now(), in: db) }
    }
}

import Foundation
import HTTPTypes
import Hummingbird
import PurseDatabase
import PurseServer
import ServiceLifecycle

/// Nexus Data: WebAuthn step-up for airtime and data top-ups, with PIN fallback.
public struct NexusModule: PurseModule {
    public let id = "nexus"
    public let title = "Nexus Data"
    public let summary = "Airtime and data top-ups authorised by a biometric (WebAuthn) step-up, with a PIN fallback."
    let configuration: NexusConfiguration

    public init(configuration: NexusConfiguration) {
        self.configuration = configuration
    }

    public var links: [ModuleLink] {
        [
            ModuleLink("Web checkout (buy airtime with a passkey)", "/nexus/checkout"),
            ModuleLink("Enrol a passkey", "/nexus/enroll"),
            ModuleLink("Product catalogue (JSON)", "/products"),
        ]
    }

    public var migrations: [Migration] { NexusMigrations.all }

    public func mount(on router: Router<PurseRequestContext>, environment: ServerEnvironment) async throws -> [any Service] {
        let controller = NexusController(configuration: configuration, environment: environment)
        controller.mountBiometric(on: router)
        controller.mountWallet(on: router)
        NexusPages.mount(on: router)
        let pruner = ChallengePruner(store: controller.store, environment: environment)
        return [PeriodicService("pruning expired challenges", every: .seconds(60), logger: environment.logger) { try await pruner.prune() }]
    }

    public var openAPI: OpenAPIFragment { NexusOpenAPI.fragment(sandboxFunding: configuration.sandboxFunding) }
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

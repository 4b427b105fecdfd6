import Foundation
import HTTPTypes
import Hummingbird
import Logging
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
        return [ChallengePruner(store: controller.store, environment: environment)]
    }

    public var openAPI: OpenAPIFragment { NexusOpenAPI.fragment(sandboxFunding: configuration.sandboxFunding) }
}

/// Deletes long-expired WebAuthn challenges once a minute while the server runs.
struct ChallengePruner: Service {
    let store: NexusStore
    let environment: ServerEnvironment
    var interval: Duration = .seconds(60)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    try await prune()
                } catch {
                    environment.logger.warning("pruning expired challenges failed", metadata: ["error": "\(error)"])
                }
                try? await Task.sleep(for: interval)
            }
        }
    }

    @discardableResult
    func prune() async throws -> Int {
        try await environment.database.transaction { db in try await store.pruneChallenges(now: environment.now(), in: db) }
    }
}

import Foundation
import Hummingbird
import PurseDatabase
import PurseServer
import ServiceLifecycle

/// Maly: Stripe Connect Express onboarding for event hosts.
public struct ConnectModule: PurseModule {
    public let id = "connect"
    public let title = "Maly"
    public let summary = "Stripe Connect Express onboarding for event hosts, with account.updated webhooks."
    let configuration: ConnectConfiguration

    public init(configuration: ConnectConfiguration) { self.configuration = configuration }

    public var links: [ModuleLink] {
        var links = [ModuleLink("Account status (JSON, needs a bearer token)", "/api/stripe/connect/account-status")]
        if configuration.usesSandbox { links.append(ModuleLink("Stripe sandbox API", "/sandbox/stripe/v1/accounts")) }
        return links
    }

    public var migrations: [Migration] { ConnectMigrations.all }

    public func mount(on router: Router<PurseRequestContext>, environment: ServerEnvironment) async throws -> [any Service] {
        let stripe = stripeClient(environment: environment)
        ConnectController(configuration: configuration, environment: environment, stripe: stripe).mount(on: router)
        EventsController(configuration: configuration, environment: environment, stripe: stripe).mount(on: router)
        if configuration.usesSandbox {
            StripeSandbox(configuration: configuration, environment: environment).mount(on: router)
        }
        return []
    }

    /// Stripe, or the built-in sandbox in this process: the same requests through its routes.
    func stripeClient(environment: ServerEnvironment) -> StripeClient {
        guard configuration.usesSandbox else {
            return StripeClient(baseURL: configuration.stripeBaseURL, secretKey: configuration.stripeSecretKey)
        }
        let sandbox = StripeSandbox(configuration: configuration, environment: environment)
        return StripeClient(baseURL: configuration.stripeBaseURL, secretKey: configuration.stripeSecretKey,
                            transport: InProcessTransport(logger: environment.logger) { sandbox.mount(on: $0) })
    }

    public func jobHandlers(environment: ServerEnvironment) -> [JobHandler] {
        guard configuration.usesSandbox else { return [] }
        let sandbox = StripeSandbox(configuration: configuration, environment: environment)
        return [JobHandler(kind: StripeSandbox.webhookJob, ordered: true) { job in try await sandbox.deliver(job) }]
    }

    public var openAPI: OpenAPIFragment { ConnectOpenAPI.fragment(sandbox: configuration.usesSandbox) }
}

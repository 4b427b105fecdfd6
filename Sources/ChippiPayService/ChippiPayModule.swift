import Foundation
import Hummingbird
import Logging
import PurseDatabase
import PurseFormats
import PurseServer
import ServiceLifecycle
import Starknet

/// ChippiPay: the Starknet vault and gasless service purchases. In development `purse serve`
/// runs a sandbox Starknet node at `POST /starknet/rpc` with the STRK token, the vault and
/// funded accounts.
public struct ChippiPayModule: PurseModule {
    public let id = "chippi"
    public let title = "ChippiPay"
    public let summary = "A Starknet vault (deposit and withdraw STRK); in development, a sandbox Starknet node with funded accounts."
    let configuration: ChippiPayConfiguration

    public init(configuration: ChippiPayConfiguration) { self.configuration = configuration }

    public var links: [ModuleLink] {
        configuration.sandbox == nil ? [] : [ModuleLink("Sandbox Starknet node: accounts, token and vault (JSON)", "/sandbox/starknet/accounts")]
    }

    public var migrations: [Migration] { ChippiPayMigrations.all }

    public func mount(on router: Router<PurseRequestContext>, environment: ServerEnvironment) async throws -> [any Service] {
        guard let sandbox = configuration.sandbox else { return [] }
        let node = SandboxNode(environment: environment, configuration: sandbox)
        try await node.genesis()
        StarknetRPCRoutes(node: node).mount(on: router)
        SandboxFaucetRoutes(node: node).mount(on: router)
        environment.logger.notice("sandbox Starknet node at /starknet/rpc", metadata: [
            "chain_id": "\(sandbox.chainId.shortString ?? sandbox.chainId.description)",
            "strk": "\(SandboxNode.strkAddress)", "vault": "\(SandboxNode.vaultAddress)",
        ])
        for account in node.predeployedAccounts {
            // Test keys derived from a public seed: printed so that developers can use them.
            environment.logger.notice("sandbox Starknet account", metadata: [
                "address": "\(account.address)", "private_key": "\(account.privateKey)",
            ])
        }
        if let seconds = sandbox.blockSeconds {
            return [PeriodicService("closing sandbox Starknet blocks", every: .seconds(seconds), logger: environment.logger) { try await node.closeOpenBlock() }]
        }
        return []
    }

    public var openAPI: OpenAPIFragment { ChippiPayOpenAPI.fragment(sandbox: configuration.sandbox != nil) }
}

import Foundation
import Hummingbird
import Logging
import PurseDatabase
import PurseFormats
import PurseServer
import ServiceLifecycle
import SQLKit
import PurseHTTP
import PurseHTTPNIO
import Starknet
import StarknetDevnet
import Synchronization

/// ChippiPay: the Starknet vault and gasless service purchases. The provider API lives under
/// `/v1`; in development `purse serve` also runs a sandbox Starknet node at `POST /starknet/rpc`
/// with the STRK token, the vault and funded accounts, and a sandbox merchant.
public struct ChippiPayModule: PurseModule {
    public let id = "chippi"
    public let title = "ChippiPay"
    public let summary = "A Starknet vault (deposit and withdraw STRK) and service purchases paid from it, verified on chain; in development, a sandbox Starknet node with funded accounts."
    let configuration: ChippiPayConfiguration
    /// What `mount` builds and the job handlers use.
    let mounted = MountedProvider()

    /// Fetches merchants' published keys (JWKS).
    let issuerTransport: any HTTPTransport

    public init(configuration: ChippiPayConfiguration, issuerTransport: (any HTTPTransport)? = nil) {
        self.configuration = configuration
        self.issuerTransport = issuerTransport ?? AsyncHTTPClientTransport(maxResponseBytes: 256 << 10)
    }

    public var links: [ModuleLink] {
        configuration.sandbox == nil ? [] : [ModuleLink("Sandbox Starknet node: accounts, token and vault (JSON)", "/sandbox/starknet/accounts")]
    }

    public var migrations: [Migration] { ChippiPayMigrations.all }

    public func mount(on router: Router<PurseRequestContext>, environment: ServerEnvironment) async throws -> [any Service] {
        var services: [any Service] = []
        var node: SandboxNode?
        var rpcRoutes: StarknetRPCRoutes?
        if let sandbox = configuration.sandbox {
            let sandboxNode = SandboxNode(environment: environment, configuration: sandbox)
            try await sandboxNode.genesis()
            try await sandboxNode.ensureUniversalDeployer()
            let routes = StarknetRPCRoutes(node: sandboxNode)
            routes.mount(on: router)
            environment.logger.notice("sandbox Starknet node at /starknet/rpc", metadata: [
                "chain_id": "\(sandbox.chainId.shortString ?? sandbox.chainId.description)",
                "strk": "\(SandboxNode.strkAddress)", "vault": "\(SandboxNode.vaultAddress)",
            ])
            for account in sandboxNode.predeployedAccounts {
                // Their test keys (derived from a public seed) are served by GET /sandbox/starknet/accounts
                // (`purse starknet accounts`); no key goes to the log.
                environment.logger.notice("sandbox Starknet account", metadata: ["address": "\(account.address)"])
            }
            if let seconds = sandbox.blockSeconds {
                services.append(PeriodicService("closing sandbox Starknet blocks", every: .seconds(seconds), logger: environment.logger) { try await sandboxNode.closeOpenBlock() })
            }
            node = sandboxNode
            rpcRoutes = routes
        }
        let payments = try await providerPayments(node: node, routes: rpcRoutes, logger: environment.logger)
        mounted.payments.withLock { $0 = payments }
        if let node { SandboxFaucetRoutes(node: node, listed: [("chippi_payment_address", payments.paymentAddress)]).mount(on: router) }
        if configuration.provider.paymentScanSeconds > 0 {
            let unclaimed = unclaimedPayments(environment: environment, payments: payments)
            services.append(PeriodicService("returning unclaimed payments", every: .seconds(configuration.provider.paymentScanSeconds),
                                            logger: environment.logger) { try await unclaimed.pass() })
        }
        if let keys = configuration.provider.sandboxKeys {
            try await environment.database.transaction { db in
                try await MerchantKeys.create(merchant: "mer_sandbox", name: "Sandbox merchant", webhookURL: configuration.provider.sandboxWebhookURL,
                                              keys: keys, now: environment.now(), sealer: environment.sealer, in: db)
                if let url = configuration.provider.sandboxWebhookURL {
                    try await db.raw("UPDATE chippi_merchants SET webhook_url = \(bind: url) WHERE id = 'mer_sandbox'").run()
                }
            }
            // The sandbox merchant's keys and webhook secret go to a file for the app, the CLI and
            // the merchant's webhook receiver to be configured with:
            // a secret key is never logged, not even a sandbox one.
            let secrets = try await Self.merchantWebhookSecrets(merchant: "mer_sandbox", environment: environment)
            let file = try Self.writeSandboxKeysFile(keys: keys, secrets: secrets, environment: environment)
            environment.logger.notice("ChippiPay sandbox merchant", metadata: ["x-api-key": "\(keys.public)", "keys_file": "\(file)"])
        }
        ProviderRoutes(environment: environment, configuration: configuration.provider, payments: payments, limiter: SharedRateLimiter(name: "chippi.api", perSecond: configuration.provider.rateLimit,
                                                    burst: Int(configuration.provider.rateLimit * 2), batch: 8, database: environment.database),
                       keyCache: MerchantKeyCache(lifetime: .milliseconds(Int64(configuration.provider.keyCacheSeconds * 1000))),
                       issuers: IssuerKeys(transport: issuerTransport)).mount(on: router)
        environment.logger.notice("ChippiPay provider at /v1", metadata: ["payment_address": "\(payments.paymentAddress)"])
        return services
    }

    static let sandboxKeysFile = "chippi-sandbox-merchant.json"

    /// Writes the sandbox merchant's keys file: its key pair and webhook secret, and while a
    /// roll's window lasts the previous secret and when it ends.
    @discardableResult
    static func writeSandboxKeysFile(keys: (public: String, secret: String), secrets: WebhookSecrets, environment: ServerEnvironment) throws -> String {
        var text = #"{"x-api-key":"\#(keys.public)","secret_key":"\#(keys.secret)","webhook_secret":"\#(secrets.current)""#
        if let previous = secrets.previous {
            text += #","previous_webhook_secret":"\#(previous.secret)","previous_webhook_secret_until":"\#(previous.until.formatted(.iso8601))""#
        }
        return try ServerSecrets(dataDirectory: environment.configuration.dataDirectory).store(text + "}\n", named: sandboxKeysFile)
    }

    /// After a roll of the sandbox merchant's webhook secret (`purse chippi keys webhook-secret
    /// --rotate`), its keys file shows both secrets until the window ends. Other merchants have no file.
    public static func updateSandboxKeysFile(merchant: String, secrets: WebhookSecrets, environment: ServerEnvironment) throws {
        guard merchant == "mer_sandbox" else { return }
        let path = URL(fileURLWithPath: environment.configuration.dataDirectory).appendingPathComponent("secrets").appendingPathComponent(sandboxKeysFile).path
        guard let data = FileManager.default.contents(atPath: path),
              let stored = try? JSONDecoder().decode([String: String].self, from: data),
              let publicKey = stored["x-api-key"], let secretKey = stored["secret_key"] else { return }
        try writeSandboxKeysFile(keys: (publicKey, secretKey), secrets: secrets, environment: environment)
    }

    /// The provider's chain access and payment account: `STARKNET_RPC_URL` and the configured
    /// account, or the sandbox node in this process and an account derived from its seed.
    func providerPayments(node: SandboxNode?, routes: StarknetRPCRoutes?, logger: Logger) async throws -> VaultPayments {
        let provider: StarknetProvider
        if let url = configuration.provider.rpcURL {
            provider = StarknetProvider(url: url, transport: AsyncHTTPClientTransport())
        } else if let routes {
            provider = StarknetProvider(url: URL(string: "http://in-process.invalid/starknet/rpc")!, transport: InProcessTransport(logger: logger) { routes.mount(on: $0) })
        } else {
            throw ConfigurationError("ChippiPay needs STARKNET_RPC_URL when the sandbox node is off")
        }
        let key: StarkKey
        let address: Felt
        if let secret = configuration.provider.paymentPrivateKey, let configured = configuration.provider.paymentAddress {
            key = try StarkKey(privateKey: secret)
            address = configured
        } else if let node {
            key = node.derivedKey("chippi payments")
            address = try await node.ensureAccount(key, funding: UInt256("1000000000000000000000")!)
        } else {
            throw ConfigurationError("ChippiPay needs CHIPPI_PAYMENT_ADDRESS and CHIPPI_PAYMENT_PRIVATE_KEY")
        }
        let account = StarknetAccount(address: address, key: key, provider: provider, feeMargin: 1.5)
        var payments = VaultPayments(provider: provider, account: account, vaultAddress: configuration.provider.vaultAddress, tokenAddress: configuration.provider.tokenAddress)
        payments.refundsIntoVault = configuration.provider.refundsIntoVault
        return payments
    }

    public func jobHandlers(environment: ServerEnvironment) -> [JobHandler] {
        let mounted = mounted
        let transport = AsyncHTTPClientTransport(maxResponseBytes: 64 << 10)
        return [
            JobHandler(kind: ProviderRoutes.fulfilmentJob, backoff: ProviderRoutes.fulfilmentBackoff) { job in
                guard let payments = mounted.payments.withLock({ $0 }) else { throw ConfigurationError("ChippiPay is not mounted") }
                try await Fulfilment(environment: environment, payments: payments).fulfil(job)
            },
            JobHandler(kind: UnclaimedPayments.returnJob, backoff: ProviderRoutes.fulfilmentBackoff) { job in
                guard let payments = mounted.payments.withLock({ $0 }) else { throw ConfigurationError("ChippiPay is not mounted") }
                try await unclaimedPayments(environment: environment, payments: payments).returnPayment(job)
            },
            JobHandler(kind: ProviderRoutes.webhookJob, ordered: true) { job in
                try await Webhooks.deliver(job, environment: environment, transport: transport)
            },
        ]
    }

    func unclaimedPayments(environment: ServerEnvironment, payments: VaultPayments) -> UnclaimedPayments {
        UnclaimedPayments(environment: environment, payments: payments, window: TimeInterval(configuration.provider.unclaimedReturnSeconds),
                          funding: configuration.provider.fundingAccounts)
    }

    public var openAPI: OpenAPIFragment { ChippiPayOpenAPI.fragment(sandbox: configuration.sandbox != nil) }
}

/// The provider's chain access, made by `mount` and read by the job handlers.
final class MountedProvider: Sendable {
    let payments = Mutex<VaultPayments?>(nil)
}

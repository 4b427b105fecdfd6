import PurseServer
import Starknet

/// The sandbox Starknet node's settings.
///
/// - `STARKNET_SANDBOX_CHAIN_ID`: the chain id as a short string (default `SN_SEPOLIA`).
/// - `STARKNET_SANDBOX_BLOCK_SECONDS`: close a block every N seconds; unset, every transaction
///   gets its own block at once (as starknet-devnet does by default).
/// - `STARKNET_SANDBOX_ACCOUNTS`: how many predeployed accounts (default 5, at most 100).
/// - `STARKNET_SANDBOX_SEED`: the seed their keys derive from (default `purse`).
/// - `STARKNET_SANDBOX_ACCOUNT_STRK`: STRK each receives at genesis (default 1000).
public struct StarknetSandboxConfiguration: Sendable {
    public var chainId: Felt = Felt(shortString: "SN_SEPOLIA")!
    public var blockSeconds: Int?
    public var accountCount = 5
    public var seed = "purse"
    public var accountFunding = UInt256("1000000000000000000000")!

    public init() {}
}

/// ChippiPay's settings: whether `purse serve` runs the sandbox node (never in production).
public struct ChippiPayConfiguration: Sendable {
    public var sandbox: StarknetSandboxConfiguration?

    public init(sandbox: StarknetSandboxConfiguration?) { self.sandbox = sandbox }

    public static func from(_ configuration: PurseConfiguration) throws -> ChippiPayConfiguration {
        guard !configuration.isProduction else { return ChippiPayConfiguration(sandbox: nil) }
        let env = configuration.environment
        func value(_ name: String) -> String? { env[name].flatMap { $0.isEmpty ? nil : $0 } }
        var sandbox = StarknetSandboxConfiguration()
        if let chain = value("STARKNET_SANDBOX_CHAIN_ID") {
            guard let felt = Felt(shortString: chain) else { throw ConfigurationError("STARKNET_SANDBOX_CHAIN_ID must be a short string of at most 31 ASCII characters") }
            sandbox.chainId = felt
        }
        if let seconds = value("STARKNET_SANDBOX_BLOCK_SECONDS") {
            guard let parsed = Int(seconds), (1...3600).contains(parsed) else { throw ConfigurationError("STARKNET_SANDBOX_BLOCK_SECONDS must be 1 to 3600") }
            sandbox.blockSeconds = parsed
        }
        if let count = value("STARKNET_SANDBOX_ACCOUNTS") {
            guard let parsed = Int(count), (1...100).contains(parsed) else { throw ConfigurationError("STARKNET_SANDBOX_ACCOUNTS must be 1 to 100") }
            sandbox.accountCount = parsed
        }
        if let seed = value("STARKNET_SANDBOX_SEED") { sandbox.seed = seed }
        if let funding = value("STARKNET_SANDBOX_ACCOUNT_STRK") {
            guard let amount = try? STRKAmount.parse(funding) else { throw ConfigurationError("STARKNET_SANDBOX_ACCOUNT_STRK must be a STRK amount such as 1000 or 2.5") }
            sandbox.accountFunding = amount
        }
        return ChippiPayConfiguration(sandbox: sandbox)
    }
}

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

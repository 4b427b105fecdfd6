import Foundation
import Starknet

/// Where the app's Starknet side points: the node, the STRK token and the vault.
///
/// The default is the sandbox node inside `purse serve`; production sets `STARKNET_RPC_URL` to any
/// Starknet node speaking JSON-RPC 0.10 and `STARKNET_VAULT_ADDRESS` to the deployed vault.
public struct StarknetConfiguration: Sendable, Hashable {
    public var rpcURL: URL
    public var tokenAddress: Felt
    public var vaultAddress: Felt
    /// How far the resource bounds exceed the fee estimate (1.5 = 50 % more).
    public var feeMargin: Double

    /// The vault the sandbox node deploys at genesis (class `PurseVault`, salt 8539, constructor
    /// calldata `[STRK]`, deployer 0).
    public static let sandboxVaultAddress = Felt("0x02992ef4a8340d2540fb8ef68ac345818a9f23e8803dfaec3a93b5bffda4eaef")!

    public init(rpcURL: URL, tokenAddress: Felt = ERC20.strkAddress, vaultAddress: Felt = StarknetConfiguration.sandboxVaultAddress,
                feeMargin: Double = 1.5) {
        self.rpcURL = rpcURL
        self.tokenAddress = tokenAddress
        self.vaultAddress = vaultAddress
        self.feeMargin = feeMargin
    }

    /// The sandbox node of the Purse server at `server`.
    public static func sandbox(server: URL) -> StarknetConfiguration {
        StarknetConfiguration(rpcURL: server.appendingPathComponent("starknet/rpc"))
    }

    public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
        case invalid(name: String, value: String)

        public var description: String {
            switch self {
            case .invalid(let name, let value): "\(name) is not valid: \(value)"
            }
        }
    }

    /// Reads `STARKNET_RPC_URL`, `STARKNET_TOKEN_ADDRESS`, `STARKNET_VAULT_ADDRESS` and
    /// `STARKNET_FEE_MARGIN`; whatever is unset comes from the sandbox of `server`.
    public static func from(environment: [String: String], server: URL) throws(ConfigurationError) -> StarknetConfiguration {
        var configuration = sandbox(server: server)
        if let text = environment["STARKNET_RPC_URL"] {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw .invalid(name: "STARKNET_RPC_URL", value: text)
            }
            configuration.rpcURL = url
        }
        if let text = environment["STARKNET_TOKEN_ADDRESS"] {
            guard let felt = Felt(text) else { throw .invalid(name: "STARKNET_TOKEN_ADDRESS", value: text) }
            configuration.tokenAddress = felt
        }
        if let text = environment["STARKNET_VAULT_ADDRESS"] {
            guard let felt = Felt(text) else { throw .invalid(name: "STARKNET_VAULT_ADDRESS", value: text) }
            configuration.vaultAddress = felt
        }
        if let text = environment["STARKNET_FEE_MARGIN"] {
            guard let margin = Double(text), margin >= 1, margin <= 10 else { throw .invalid(name: "STARKNET_FEE_MARGIN", value: text) }
            configuration.feeMargin = margin
        }
        return configuration
    }
}

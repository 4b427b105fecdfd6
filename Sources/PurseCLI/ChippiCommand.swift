import ArgumentParser
import ChippiPay
import Foundation
import PurseKit
import PurseKitAHC
import Starknet

/// `purse chippi …`: the ChippiPay app's journeys.
struct ChippiCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chippi",
        abstract: "ChippiPay: the Starknet vault (STARKNET_RPC_URL, default: the sandbox node of --server).",
        subcommands: [Vault.self]
    )

    /// The Starknet side's configuration: the environment over the sandbox of `--server`.
    static func configuration(_ options: ClientOptions) throws -> StarknetConfiguration {
        let server = try options.serverURL
        do {
            return try StarknetConfiguration.from(environment: ProcessInfo.processInfo.environment, server: server)
        } catch {
            throw CLIError(error.description)
        }
    }

    @MainActor
    static func manager(_ options: ClientOptions) throws -> StarknetManager {
        StarknetManager(configuration: try configuration(options), transport: AsyncHTTPClientTransport(), store: options.store)
    }

    /// Runs wallet work, turning its errors into one readable line.
    static func wallet<T: Sendable>(_ work: @Sendable () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as StarknetWalletError {
            throw CLIError(error.description)
        } catch let error as StarknetRPCError {
            throw CLIError("The Starknet node answered: \(error.description)")
        } catch let error as PurseError {
            throw CLIError(error.kind == .offline ? "Cannot reach the Starknet node (\(error.message)). Is `purse serve` running, or STARKNET_RPC_URL right?" : error.message)
        }
    }

    struct Vault: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Connect a Starknet wallet, deposit STRK to the vault, withdraw it, and read the balances.",
            subcommands: [Connect.self, Balance.self, Deposit.self, Withdraw.self, Disconnect.self]
        )
    }

    struct Summary: Codable, Sendable {
        var address: String
        var wallet: String?
        var vault: String?
        var transactionHash: String?

        enum CodingKeys: String, CodingKey { case address, wallet, vault, transactionHash = "transaction_hash" }

        @MainActor
        init(_ manager: StarknetManager, transactionHash: Felt? = nil) {
            address = manager.walletAddress?.description ?? ""
            wallet = manager.walletBalanceText
            vault = manager.vaultBalanceText
            self.transactionHash = transactionHash?.description
        }

        var text: String {
            var lines = ["Wallet \(address)", "  wallet \(wallet ?? "?") STRK", "  vault  \(vault ?? "?") STRK"]
            if let transactionHash { lines.insert("Transaction \(transactionHash) accepted on L2", at: 0) }
            return lines.joined(separator: "\n")
        }
    }

    /// A manager with the saved wallet, or the advice to connect one.
    @MainActor
    static func connected(_ options: ClientOptions) async throws -> StarknetManager {
        let manager = try manager(options)
        guard try await wallet({ try await manager.restore() }) else {
            throw CLIError("No wallet is connected. Run `purse chippi vault connect --address 0x…`.")
        }
        return manager
    }

    struct Connect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Connect the account at --address; its private key is read from a prompt (or stdin) and kept in the secure store.")
        @OptionGroup var options: ClientOptions
        @Option(help: "The account's address.") var address: String

        @MainActor
        func run() async throws {
            let manager = try ChippiCommand.manager(options)
            guard let key = readSecret("Private key: "), !key.isEmpty else { throw CLIError("No private key given") }
            try await ChippiCommand.wallet {
                try await withSpinner("Checking the account") { try await manager.connectWallet(address: address, privateKey: key) }
            }
            let summary = Summary(manager)
            try options.output.emit(summary) { "Connected.\n" + summary.text }
        }
    }

    struct Balance: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "STRK in the connected wallet and in the vault.")
        @OptionGroup var options: ClientOptions

        @MainActor
        func run() async throws {
            let manager = try await ChippiCommand.connected(options)
            let summary = Summary(manager)
            try options.output.emit(summary) { summary.text }
        }
    }

    struct Deposit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Deposit STRK from the wallet to the vault (approve + deposit in one transaction).")
        @OptionGroup var options: ClientOptions
        @Argument(help: "STRK, e.g. 10 or 2.5.") var amount: String

        @MainActor
        func run() async throws {
            let manager = try await ChippiCommand.connected(options)
            let hash = try await ChippiCommand.wallet {
                try await withSpinner("Depositing \(amount) STRK and waiting for acceptance") { try await manager.depositToVault(amount: amount) }
            }
            let summary = Summary(manager, transactionHash: hash)
            try options.output.emit(summary) { summary.text }
        }
    }

    struct Withdraw: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Withdraw STRK from the vault to the wallet (or to --to).")
        @OptionGroup var options: ClientOptions
        @Argument(help: "STRK, e.g. 2.5.") var amount: String
        @Option(help: "The recipient address (default: the wallet).") var to: String?

        @MainActor
        func run() async throws {
            let manager = try await ChippiCommand.connected(options)
            let hash = try await ChippiCommand.wallet {
                try await withSpinner("Withdrawing \(amount) STRK and waiting for acceptance") { try await manager.withdrawFromVault(amount: amount, toAddress: to) }
            }
            let summary = Summary(manager, transactionHash: hash)
            try options.output.emit(summary) { summary.text }
        }
    }

    struct Disconnect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget the connected wallet and remove its key from the secure store.")
        @OptionGroup var options: ClientOptions

        @MainActor
        func run() async throws {
            try await ChippiCommand.manager(options).disconnect()
            print("Disconnected.")
        }
    }
}

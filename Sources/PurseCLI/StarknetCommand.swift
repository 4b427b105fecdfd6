import ArgumentParser
import ChippiPay
import Foundation
import HTTPTypes
import PurseKit
import PurseFormats
import PurseHTTPNIO
import Starknet

/// `purse starknet …`: the sandbox chain (accounts, balances, faucet) and developer tools in the
/// manner of starkli, each printing 0x-hex.
struct StarknetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "starknet",
        abstract: "Starknet: the sandbox chain's accounts, balances and faucet, and protocol tools (hashes, keys, signatures, transactions).",
        subcommands: [Accounts.self, Balance.self, Mint.self, SelectorCommand.self, PedersenCommand.self, PoseidonCommand.self,
                      PublicKey.self, Sign.self, Verify.self, TransactionHash.self, Calldata.self, Address.self]
    )

    /// A felt argument, refused with the argument's name when it is not one.
    static func felt(_ text: String, _ name: String) throws -> Felt {
        guard let felt = Felt(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw CLIError("\(name) is not a felt (0x-hex or decimal, below 2^251 + 17·2^192 + 1): \(text)")
        }
        return felt
    }

    /// A private key from the terminal (no echo) or a line of stdin; never from an argument, so
    /// it stays out of shell history and process listings.
    static func readPrivateKey() throws -> StarkKey {
        guard let text = readSecret("Private key: "), !text.isEmpty else { throw CLIError("No private key on stdin") }
        guard let felt = Felt(text.trimmingCharacters(in: .whitespacesAndNewlines)), let key = try? StarkKey(privateKey: felt) else {
            throw CLIError("The private key is not a Stark private key (between 1 and the curve order)")
        }
        return key
    }

    struct Accounts: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the sandbox node's predeployed accounts (test keys), the STRK token and the vault.")
        @OptionGroup var options: ClientOptions

        struct Listing: Codable, Sendable {
            struct Account: Codable, Sendable {
                var address: String
                var privateKey: String
                var publicKey: String

                enum CodingKeys: String, CodingKey { case address, privateKey = "private_key", publicKey = "public_key" }
            }

            var chainId: String
            var rpcPath: String
            var strkAddress: String
            var vaultAddress: String
            var accountClassHash: String
            var chippiPaymentAddress: String?
            var accounts: [Account]

            enum CodingKeys: String, CodingKey {
                case chainId = "chain_id", rpcPath = "rpc_path", strkAddress = "strk_address", vaultAddress = "vault_address"
                case accountClassHash = "account_class_hash", chippiPaymentAddress = "chippi_payment_address", accounts
            }
        }

        static func listing(_ options: ClientOptions) async throws -> Listing {
            let api = try options.apiClient()
            return try await client { try await api.send(.get, "/sandbox/starknet/accounts", authenticated: false) }
        }

        func run() async throws {
            let listing = try await Self.listing(options)
            try options.output.emit(listing) {
                var lines = ["Chain \(listing.chainId) at \(listing.rpcPath)", "STRK  \(listing.strkAddress)", "Vault \(listing.vaultAddress)"]
                if let payments = listing.chippiPaymentAddress { lines.append("ChippiPay payments \(payments)") }
                lines.append("")
                for (index, account) in listing.accounts.enumerated() {
                    lines += ["Account #\(index)", "  address     \(account.address)", "  private key \(account.privateKey)", "  public key  \(account.publicKey)"]
                }
                lines.append("\nThese keys are public test keys of the sandbox chain; never use them elsewhere.")
                return lines.joined(separator: "\n")
            }
        }
    }

    struct Balance: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "STRK held by an address and in the vault for it (default: the wallet connected with `purse chippi vault connect`).")
        @OptionGroup var options: ClientOptions
        @Argument(help: "The account address.") var address: String?

        struct Balances: Codable, Sendable {
            var address: String
            var wallet: String
            var vault: String
        }

        func run() async throws {
            let configuration = try ChippiCommand.configuration(options)
            let owner: Felt
            if let address {
                owner = try StarknetCommand.felt(address, "ADDRESS")
            } else {
                let manager = await StarknetManager(configuration: configuration, transport: AsyncHTTPClientTransport(), store: options.store)
                guard try await ChippiCommand.wallet({ try await manager.restore() }), let connected = await manager.walletAddress else {
                    throw CLIError("Give an ADDRESS, or connect a wallet with `purse chippi vault connect`")
                }
                owner = connected
            }
            let provider = StarknetProvider(url: configuration.rpcURL, transport: AsyncHTTPClientTransport())
            let token = ERC20(address: configuration.tokenAddress, provider: provider)
            let vault = VaultContract(address: configuration.vaultAddress, token: token)
            let (wallet, inVault) = try await ChippiCommand.wallet { (try await token.balance(of: owner), try await vault.balance(of: owner)) }
            let balances = Balances(address: owner.description, wallet: STRKAmount.format(wallet), vault: STRKAmount.format(inVault))
            try options.output.emit(balances) { "\(balances.address)\n  wallet \(balances.wallet) STRK\n  vault  \(balances.vault) STRK" }
        }
    }

    struct Mint: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mint sandbox STRK to an address (the sandbox faucet).")
        @OptionGroup var options: ClientOptions
        @Argument(help: "The recipient address.") var address: String
        @Argument(help: "STRK, e.g. 100 or 2.5 (at most 1,000,000 per mint).") var amount: String

        struct Minted: Codable, Sendable {
            var address: String
            var minted: String
            var balance: String
        }

        func run() async throws {
            let recipient = try StarknetCommand.felt(address, "ADDRESS")
            do { _ = try STRKAmount.parse(amount) } catch { throw CLIError("AMOUNT: \(error.description)") }
            let api = try options.apiClient()
            let body: [String: String] = ["address": recipient.description, "amount": amount]
            let minted: Minted = try await client {
                try await api.send(.post, "/sandbox/starknet/mint", body: body, idempotencyKey: UUID().uuidString, authenticated: false)
            }
            try options.output.emit(minted) { "Minted \(minted.minted) STRK to \(minted.address); balance \(minted.balance) STRK" }
        }
    }

    struct SelectorCommand: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "selector", abstract: "The entry point selector of a function name (starknet_keccak).")
        @Argument(help: "The function name, e.g. transfer.") var name: String
        func run() throws { print(Selector.from(name: name)) }
    }

    struct PedersenCommand: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "pedersen", abstract: "The Pedersen hash of two felts.")
        @Argument var a: String
        @Argument var b: String
        func run() throws { print(Pedersen.hash(try StarknetCommand.felt(a, "A"), try StarknetCommand.felt(b, "B"))) }
    }

    struct PoseidonCommand: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "poseidon", abstract: "The Poseidon hash of felts (poseidon_hash_many).")
        @Argument(help: "Felts to hash.") var values: [String] = []
        func run() throws {
            let felts = try values.enumerated().map { try StarknetCommand.felt($1, "X\($0 + 1)") }
            print(Poseidon.hash(many: felts))
        }
    }

    struct PublicKey: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "public-key", abstract: "The Stark public key of a private key read from stdin.")
        func run() throws { print(try StarknetCommand.readPrivateKey().publicKey) }
    }

    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Sign a hash with a private key read from stdin (RFC 6979 k); prints r and s.")
        @Argument(help: "The message hash (below 2^251).") var hash: String
        func run() throws {
            let message = try StarknetCommand.felt(hash, "HASH")
            let key = try StarknetCommand.readPrivateKey()
            do {
                let signature = try key.sign(message)
                print(signature.r)
                print(signature.s)
            } catch {
                throw CLIError("HASH: \(error)")
            }
        }
    }

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Check a Stark signature; exits 1 when it is not valid.")
        @Argument var hash: String
        @Argument var r: String
        @Argument var s: String
        @Argument(help: "The signer's public key.") var publicKey: String
        func run() throws {
            let signature = StarkSignature(r: try StarknetCommand.felt(r, "R"), s: try StarknetCommand.felt(s, "S"))
            let valid = StarkVerifier.verify(try StarknetCommand.felt(hash, "HASH"), signature: signature, publicKey: try StarknetCommand.felt(publicKey, "PUBLIC_KEY"))
            print(valid ? "valid" : "invalid")
            if !valid { throw ExitCode(1) }
        }
    }

    struct TransactionHash: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tx-hash",
            abstract: "The hash of an INVOKE or DEPLOY_ACCOUNT v3 given as the RPC's JSON plus chain_id (a short string such as SN_SEPOLIA, or hex).")
        @Argument(help: "The JSON file ('-' for stdin).") var file: String
        func run() throws {
            guard var object = try JSONDecoder().decode(JSONValue.self, from: try readInput(file)).objectValue else {
                throw CLIError("FILE must hold a JSON object")
            }
            guard let chainText = object.removeValue(forKey: "chain_id")?.stringValue else { throw CLIError("FILE needs chain_id") }
            guard let chainId = chainText.hasPrefix("0x") ? Felt(chainText) : Felt(shortString: chainText) else {
                throw CLIError("chain_id is neither hex nor a short string: \(chainText)")
            }
            let transaction: BroadcastedTransaction
            do {
                transaction = try JSONDecoder().decode(BroadcastedTransaction.self, from: try JSONEncoder().encode(JSONValue.object(object)))
            } catch {
                throw CLIError("FILE is not an INVOKE or DEPLOY_ACCOUNT v3: \(error)")
            }
            print(transaction.hash(chainId: chainId))
        }
    }

    struct Calldata: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "The __execute__ calldata of a multicall: a JSON array of {to, entrypoint or selector, calldata}.")
        @Argument(help: "The JSON file ('-' for stdin).") var file: String = "-"

        struct CallJSON: Decodable {
            var to: String
            var entrypoint: String?
            var selector: String?
            var calldata: [String]?
        }

        func run() throws {
            let calls: [CallJSON]
            do { calls = try JSONDecoder().decode([CallJSON].self, from: try readInput(file)) } catch {
                throw CLIError("The multicall must be a JSON array of {\"to\", \"entrypoint\" or \"selector\", \"calldata\"}: \(error)")
            }
            let parsed = try calls.enumerated().map { index, call -> Call in
                let to = try StarknetCommand.felt(call.to, "calls[\(index)].to")
                let selector: Felt
                switch (call.entrypoint, call.selector) {
                case (let name?, nil): selector = Selector.from(name: name)
                case (nil, let hex?): selector = try StarknetCommand.felt(hex, "calls[\(index)].selector")
                default: throw CLIError("calls[\(index)] needs exactly one of entrypoint and selector")
                }
                let data = try (call.calldata ?? []).enumerated().map { try StarknetCommand.felt($1, "calls[\(index)].calldata[\($0)]") }
                return Call(to: to, selector: selector, calldata: data)
            }
            for felt in Call.executeCalldata(parsed) { print(felt) }
        }
    }

    struct Address: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The address of a contract deployed from a class (compute_address).")
        @Argument(help: "The class hash.") var classHash: String
        @Argument(help: "The salt.") var salt: String
        @Argument(help: "The constructor calldata.") var calldata: [String] = []
        @Option(help: "The deployer address (0 for DEPLOY_ACCOUNT and UDC without unique).") var deployer: String = "0x0"
        func run() throws {
            let address = ContractAddress.compute(
                classHash: try StarknetCommand.felt(classHash, "CLASS_HASH"), salt: try StarknetCommand.felt(salt, "SALT"),
                constructorCalldata: try calldata.enumerated().map { try StarknetCommand.felt($1, "CALLDATA[\($0)]") },
                deployer: try StarknetCommand.felt(deployer, "--deployer"))
            print(address)
        }
    }
}

/// The bytes of FILE, or of stdin for "-".
func readInput(_ file: String) throws -> Data {
    if file == "-" { return FileHandle.standardInput.readDataToEndOfFile() }
    guard let data = FileManager.default.contents(atPath: file) else { throw CLIError("Cannot read \(file)") }
    return data
}

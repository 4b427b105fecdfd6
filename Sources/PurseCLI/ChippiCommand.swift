import ArgumentParser
import ChippiPay
import ChippiPayService
import Foundation
import HTTPTypes
import PurseKit
import PurseHTTP
import Logging
import PurseDatabase
import PurseHTTPNIO
import PurseServer
import Starknet

/// `purse chippi …`: the ChippiPay app's journeys.
struct ChippiCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chippi",
        abstract: "ChippiPay: the Starknet vault (STARKNET_RPC_URL, default: the sandbox node of --server) and service purchases paid from it.",
        subcommands: [Vault.self, Configure.self, Services.self, Quote.self, Wallet.self, Buy.self, Status.self, History.self, Keys.self, Merchant.self]
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
            abstract: "Connect the account at --address; its private key is read from a prompt (or stdin) and kept in the secure store.",
            discussion: "In development, --sandbox-account N connects the sandbox node's predeployed account N (see `purse starknet accounts`).")
        @OptionGroup var options: ClientOptions
        @Option(help: "The account's address.") var address: String?
        @Option(help: "A predeployed account of the sandbox node, by its index (development only).") var sandboxAccount: Int?

        func validate() throws {
            if (address == nil) == (sandboxAccount == nil) { throw ValidationError("Give --address or --sandbox-account.") }
        }

        @MainActor
        func run() async throws {
            let manager = try ChippiCommand.manager(options)
            let address: String, key: String
            if let index = sandboxAccount {
                let listing = try await StarknetCommand.Accounts.listing(options)
                guard listing.accounts.indices.contains(index) else {
                    throw CLIError("The sandbox node has \(listing.accounts.count) accounts (0–\(listing.accounts.count - 1)).")
                }
                (address, key) = (listing.accounts[index].address, listing.accounts[index].privateKey)
            } else {
                guard let typed = readSecret("Private key: "), !typed.isEmpty else { throw CLIError("No private key given") }
                (address, key) = (self.address ?? "", typed)
            }
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

// MARK: Purchases

extension ChippiCommand {
    /// The provider's API at `--server`: in user mode (the default) the publishable key
    /// `purse chippi configure` saved and the signed-in user's session (`purse account login`);
    /// with the merchant's key pair only when it was configured with `--merchant-secret`.
    static func api(_ options: ClientOptions) async throws -> ChippiPayAPI {
        let hasSecret = try await options.store.string(for: ChippiPayAPI.secretKeyItem) != nil
        let session = try options.apiClient().session
        let credentials: ChippiCredentials = hasSecret ? .merchantKeys : .user { try await session.token() }
        return ChippiPayAPI(environment: .custom(try options.serverURL), credentials: credentials, store: options.store, transport: AsyncHTTPClientTransport())
    }

    @MainActor
    static func purchases(_ options: ClientOptions) async throws -> ChippiPayManager {
        ChippiPayManager(api: try await api(options), store: options.store)
    }

    /// Runs provider calls, turning their errors into the seed's words.
    static func provider<T: Sendable>(_ work: @Sendable () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as ChippiPayError {
            let advice = error.kind == .credentials
                ? " Sign in with `purse account login`, and run `purse chippi configure` with the merchant's publishable key (the sandbox merchant's is in DATA_DIR/secrets/chippi-sandbox-merchant.json)."
                : ""
            throw CLIError(error.message + (error.details.isEmpty || error.details == error.message ? "" : " (\(error.details))") + advice)
        }
    }

    static func describe(_ transaction: SKUTransaction) -> String {
        var line = "\(transaction.transactionId)  \(transaction.skuId) → \(transaction.reference)  \(transaction.amount) \(transaction.currency) = \(transaction.strkAmount) STRK  [\(transaction.status.rawValue)]"
        if let reason = transaction.failureReason { line += "\n  \(reason)" }
        if let refund = transaction.refundTransactionHash { line += "\n  refund \(refund)" }
        return line
    }

    struct Configure: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Save the merchant's publishable key in the secure store: purchases then go as the signed-in user.",
            discussion: """
                --keys-file reads it from a merchant key file, {"x-api-key": "pk_…", "secret_key": "sk_…"}, as the \
                sandbox writes to DATA_DIR/secrets/chippi-sandbox-merchant.json. Calls carry the signed-in user's \
                session (`purse account login`) and reach only that user's wallet and purchases.
                --merchant-secret also saves the secret key (from the file, or a prompt or stdin): the seed's form, \
                where this client acts as the merchant for every user. Never for a device in a user's hands.
                """)
        @OptionGroup var options: ClientOptions
        @Option(help: "The publishable key, pk_….") var apiKey: String?
        @Option(help: "A merchant key file.") var keysFile: String?
        @Flag(help: "Also keep the merchant's secret key (unsafe outside the merchant's own machines).") var merchantSecret = false

        func validate() throws {
            if (apiKey == nil) == (keysFile == nil) { throw ValidationError("Give --api-key or --keys-file.") }
        }

        struct KeysFile: Decodable {
            var apiKey: String
            var secretKey: String?
            enum CodingKeys: String, CodingKey { case apiKey = "x-api-key", secretKey = "secret_key" }
        }

        func run() async throws {
            var apiKey = self.apiKey ?? "", secret: String?
            if let keysFile {
                guard let data = FileManager.default.contents(atPath: keysFile),
                      let keys = try? JSONDecoder().decode(KeysFile.self, from: data) else {
                    throw CLIError("\(keysFile) is not a merchant key file (x-api-key and secret_key)")
                }
                (apiKey, secret) = (keys.apiKey, keys.secretKey)
            }
            if merchantSecret, secret == nil {
                guard let typed = readSecret("Secret key (sk_…): "), !typed.isEmpty else { throw CLIError("No secret key given") }
                secret = typed
            }
            let store = options.store
            let publishable = apiKey
            let api = ChippiPayAPI(environment: .custom(try options.serverURL), credentials: .merchantKeys, store: store, transport: AsyncHTTPClientTransport())
            if merchantSecret, let secret {
                try await ChippiCommand.provider { try await api.configure(apiKey: publishable, secretKey: secret) }
                _ = try await ChippiCommand.provider { try await api.fetchSKUs() }
                print("Keys saved and accepted by \(options.server). This client now acts as the merchant for every user.")
            } else {
                try await ChippiCommand.provider { try await api.configure(apiKey: publishable) }
                print("Publishable key saved. Purchases go as the signed-in user (`purse account login`).")
            }
        }
    }

    struct Services: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The services on sale: phone top-ups, bills and gift cards.")
        @OptionGroup var options: ClientOptions
        @Option(help: "phone_topup, bill or gift_card.") var category: String?

        func run() async throws {
            let api = try await ChippiCommand.api(options)
            let skus = try await ChippiCommand.provider { try await api.fetchSKUs(category: category) }
            try options.output.emit(skus) {
                skus.map { sku in
                    let price = sku.amount.map { "\($0) MXN" } ?? "\(sku.minAmount ?? "?")–\(sku.maxAmount ?? "?") MXN"
                    return "\(sku.id.padding(toLength: 16, withPad: " ", startingAt: 0)) \(sku.name.padding(toLength: 28, withPad: " ", startingAt: 0)) \(price.padding(toLength: 16, withPad: " ", startingAt: 0)) \(sku.reference.label)"
                }.joined(separator: "\n")
            }
        }
    }

    struct Quote: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The STRK a service costs at the current rate.")
        @OptionGroup var options: ClientOptions
        @Argument(help: "The service, e.g. telcel_50.") var sku: String
        @Option(help: "MXN, for bills.") var amount: String?

        func run() async throws {
            let api = try await ChippiCommand.api(options)
            let quote = try await ChippiCommand.provider { try await api.quote(skuId: sku, amount: amount) }
            try options.output.emit(quote) {
                "\(quote.skuId): \(quote.amount) \(quote.currency) = \(quote.strkAmount) STRK at \(quote.rateMXNPerSTRK) MXN/STRK · gas fee: FREE\n  paid to \(quote.paymentAddress)"
            }
        }
    }

    struct Wallet: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The gasless ChippiPay wallet.", subcommands: [Create.self])

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create the gasless wallet for the signed-in user (`purse account login`); its key is sealed with a password read from a prompt or stdin.")
            @OptionGroup var options: ClientOptions
            @Option(help: "The app's id for the user: the subject of the session (default: the signed-in user's id).") var externalUserId: String?

            @MainActor
            func run() async throws {
                guard let token = try await options.apiClient().session.token() else {
                    throw CLIError("Sign in first with `purse account login`: the wallet belongs to the signed-in user.")
                }
                guard let password = readSecret("Wallet password (at least 8 characters): "), !password.isEmpty else { throw CLIError("No password given") }
                let manager = try await ChippiCommand.purchases(options)
                let api = try options.apiClient()
                let me: AccountCommand.WhoAmI.Me = try await client { try await api.send(.get, "/auth/me") }
                let user = externalUserId ?? me.user.id
                let id = try await ChippiCommand.provider {
                    try await withSpinner("Creating the wallet") { try await manager.createGaslessWallet(userPassword: password, authToken: token, externalUserId: user) }
                }
                try options.output.emit(["wallet_id": id]) { "Gasless wallet \(id) created; its key is sealed with your password." }
            }
        }
    }

    struct Buy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Buy a service paid from the vault: quote, balance check, withdrawal to the provider, purchase, delivery.")
        @OptionGroup var options: ClientOptions
        @Argument(help: "The service, e.g. telcel_50.") var sku: String
        @Option(help: "Where it is delivered: a phone number, CFE service number or e-mail.") var reference: String
        @Option(help: "MXN, for bills.") var amount: String?

        @MainActor
        func run() async throws {
            let starknet = try await ChippiCommand.connected(options)
            let manager = try await ChippiCommand.purchases(options)
            guard try await manager.restoreWallet() else { throw CLIError("Create the gasless wallet first: `purse chippi wallet create`.") }
            let outcome = try await Self.purchase(sku, reference: reference, amount: amount, manager: manager, starknet: starknet) { line in
                print(line)
                fflush(nil)
            }
            switch outcome {
            case .completed(let receipt):
                if options.json { try options.output.emit(receipt) { "" } } else {
                    print("7. ✓ Purchase Successful!\n  Transaction ID: \(receipt.transactionId)\n  Service delivered to: \(receipt.reference)")
                }
            case .pending(let id): print("7. Delivery not confirmed yet; check with `purse chippi status \(id)`.")
            default: throw CLIError(Self.describe(outcome))
            }
        }

        /// The seed's seven steps: browse, select, confirm (and check the balance), withdraw,
        /// purchase, monitor, confirmation. A purchase an earlier run paid for and did not finish
        /// is finished by `buyService` itself: the same order carries on with its payment (never a
        /// second one), and another order waits for it.
        @MainActor
        static func purchase(_ sku: String, reference: String, amount: String?, manager: ChippiPayManager, starknet: StarknetManager,
                             say: @escaping @MainActor (String) -> Void) async throws -> PurchaseStep {
            try await manager.fetchAvailableServices()
            say("1. Browse: \(manager.availableServices.count) services")
            guard let service = manager.availableServices.first(where: { $0.id == sku }) else { throw CLIError("No service \(sku); see `purse chippi services`.") }
            say("2. Selected: \(service.name) for \(reference)")
            manager.onStepChange = { step in
                if let line = Self.progress(step) { say(line) }
            }
            return await manager.buyService(service, reference: reference, amount: amount, starknet: starknet)
        }

        static func progress(_ step: PurchaseStep) -> String? {
            switch step {
            case .idle: nil
            case .quoting: "3. Confirm: the STRK this costs…"
            case .checkingBalance: "3A. Checking the vault balance…"
            case .withdrawing: "4. Withdrawing from the vault to the provider (waiting for acceptance)…"
            case .creatingTransaction(let hash): "5. Purchase via ChippiPay: vault transaction \(hash) accepted; creating the purchase…"
            case .polling(let id): "6. Monitoring purchase \(id) until delivery…"
            case .completed, .failed, .pending: nil
            }
        }

        static func describe(_ step: PurchaseStep) -> String {
            switch step {
            case .completed(let receipt): "completed \(receipt.transactionId)"
            case .failed(let message, let id): message + (id.map { " (purchase \($0))" } ?? "")
            case .pending(let id): "pending \(id)"
            default: "\(step)"
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A purchase's status; --wait follows it until delivered or failed.")
        @OptionGroup var options: ClientOptions
        @Argument(help: "The transaction id (chipi_tx_…).") var id: String
        @Flag(help: "Poll until it is no longer pending.") var wait = false

        @MainActor
        func run() async throws {
            let api = try await ChippiCommand.api(options)
            var transaction = try await ChippiCommand.provider { try await api.getSKUTransaction(PurchaseID(id)) }
            if wait, transaction.status == .pending {
                let manager = try await ChippiCommand.purchases(options)
                switch try await manager.pollTransactionStatus(transactionId: PurchaseID(id)) {
                case .completed(let done), .failed(let done): transaction = done
                case .pending: break
                }
            }
            try options.output.emit(transaction) { ChippiCommand.describe(transaction) }
        }
    }

    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The gasless wallet's purchases, newest first.")
        @OptionGroup var options: ClientOptions

        @MainActor
        func run() async throws {
            let manager = try await ChippiCommand.purchases(options)
            guard try await manager.restoreWallet() else { throw CLIError("Create the gasless wallet first: `purse chippi wallet create`.") }
            try await ChippiCommand.provider { try await manager.fetchHistory() }
            let history = manager.history
            try options.output.emit(history) { history.isEmpty ? "No purchases yet." : history.map(ChippiCommand.describe).joined(separator: "\n") }
        }
    }

    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Merchant API keys and webhook secrets (on the server's database).",
                                                        subcommands: [Create.self, Revoke.self, WebhookSecret.self])

        struct WebhookSecret: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "webhook-secret",
                abstract: "Print a merchant's webhook secret (what Chipi-Signature is verified with), or with --rotate replace it.",
                discussion: "Reads the database as `purse serve` does (DATABASE_URL, PURSE_DATA_DIR).")
            @Option(help: "The merchant's id.") var merchant: String = "mer_default"
            @Flag(help: "Replace the secret: deliveries are signed with the new one, and with the old one too until --overlap-hours pass.") var rotate = false
            @Option(help: "With --rotate: hours the old secret stays valid beside the new one (0 for a leaked secret: it ends at once).")
            var overlapHours: Double = 24

            func validate() throws {
                guard overlapHours.isFinite, (0...720).contains(overlapHours) else { throw ValidationError("--overlap-hours must be 0 to 720") }
            }

            func run() async throws {
                do {
                    let secrets = try await OperatorEnvironment.with { environment in
                        let secrets = rotate
                            ? try await ChippiPayModule.rotateMerchantWebhookSecret(merchant: merchant, overlap: overlapHours * 3600, environment: environment)
                            : try await ChippiPayModule.merchantWebhookSecrets(merchant: merchant, environment: environment)
                        try ChippiPayModule.updateSandboxKeysFile(merchant: merchant, secrets: secrets, environment: environment)
                        return secrets
                    }
                    print("webhook secret: \(secrets.current)")
                    if let previous = secrets.previous {
                        print("previous webhook secret (deliveries are signed with both until \(previous.until.formatted(.iso8601))): \(previous.secret)")
                    }
                } catch {
                    throw CLIError("Could not \(rotate ? "rotate" : "read") the webhook secret: \(error)")
                }
            }
        }

        struct Revoke: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Revoke a key pair by its publishable key; requests with it are refused (401) from then on.",
                                                            discussion: "Reads the database as `purse serve` does (DATABASE_URL, PURSE_DATA_DIR).")
            @Argument(help: "The publishable key, pk_….") var apiKey: String

            func run() async throws {
                let revoked: Bool
                do {
                    revoked = try await OperatorEnvironment.with { try await ChippiPayModule.revokeMerchantKey(apiKey, environment: $0) }
                } catch {
                    throw CLIError("Could not revoke the key: \(error)")
                }
                guard revoked else { throw CLIError("No active key \(apiKey)") }
                print("Revoked \(apiKey).")
            }
        }

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create a merchant key pair and print it (the secret once: only its hash is kept).",
                discussion: "Reads the database as `purse serve` does (DATABASE_URL, PURSE_DATA_DIR).")
            @Option(help: "The merchant's id (created when new).") var merchant: String = "mer_default"
            @Option(help: "The merchant's name.") var name: String = "Merchant"
            @Option(help: "Where its webhooks go.") var webhookURL: String?
            @Flag(help: "The merchant's users sign in elsewhere: read the HS256 secret of their JWTs (Supabase's JWT secret, say) from stdin.")
            var authHS256SecretStdin = false
            @Option(help: "The merchant's users sign in elsewhere: where their issuer publishes its keys (JWKS).")
            var authJWKSURL: String?

            func run() async throws {
                let secret = authHS256SecretStdin ? readLine(strippingNewline: true) : nil
                do {
                    let (keys, webhookSecret) = try await OperatorEnvironment.with { environment in
                        (try await ChippiPayModule.createMerchantKeys(merchant: merchant, name: name, webhookURL: webhookURL, authHS256Secret: secret,
                                                                      authJWKSURL: authJWKSURL, live: environment.configuration.isProduction, environment: environment),
                         try await ChippiPayModule.merchantWebhookSecret(merchant: merchant, environment: environment))
                    }
                    print("x-api-key: \(keys.public)\nsecret key: \(keys.secret)\nwebhook secret: \(webhookSecret)")
                } catch {
                    throw CLIError("Could not create the keys: \(error)")
                }
            }
        }
    }

    struct Merchant: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a merchant account's state; suspend or reactivate it, or set the API areas its keys may use.",
            discussion: """
                Areas: catalogue (skus, quote), purchases (sku-transactions, webhook-deliveries), wallets (chipi-wallets),
                paymaster. A suspended account's requests, and one outside its areas, are 401 with the reason (within the
                key cache's few seconds). Reads the database as `purse serve` does (DATABASE_URL, PURSE_DATA_DIR).
                """)
        @Option(help: "The merchant's id.") var merchant: String = "mer_default"
        @Flag(help: "Refuse the account's requests.") var suspend = false
        @Flag(help: "Accept them again.") var activate = false
        @Option(help: "The areas its keys may use, comma-separated.") var permissions: String?

        func validate() throws {
            if suspend && activate { throw ValidationError("--suspend or --activate, not both") }
        }

        func run() async throws {
            let areas = permissions.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
            do {
                let state = try await OperatorEnvironment.with { environment in
                    try await ChippiPayModule.setMerchantStatus(merchant: merchant, active: suspend ? false : activate ? true : nil, permissions: areas,
                                                                environment: environment)
                }
                print("\(merchant): \(state.active ? "active" : "suspended"); may use \(state.permissions.isEmpty ? "nothing" : state.permissions.joined(separator: ", "))")
            } catch {
                throw CLIError("Could not change the merchant: \(error)")
            }
        }
    }
}

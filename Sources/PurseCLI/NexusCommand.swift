import ArgumentParser
import Foundation
import NexusPay
import PurseKit
import PurseHTTP
import NexusService
import PurseServer
import PurseDatabase
import Logging

/// `purse nexus …`: the Nexus Data app's journeys from a terminal.
struct NexusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nexus",
        abstract: "Nexus Data: biometric soft lock, passkey step-up and airtime top-ups.",
        discussion: "Sign in first with `purse account login`. The biometric prompt here is a software gate: answer y/n, or pass --yes.",
        subcommands: [Enroll.self, Unlock.self, Products.self, BuyAirtime.self, Status.self, Balance.self, History.self, Fund.self, SetPin.self]
    )

    struct DeviceOptions: ParsableArguments {
        @Flag(help: "Approve the biometric prompt without asking (for scripts).")
        var yes = false
    }

    /// What a command needs: the client core over the CLI's store and transport.
    struct Device {
        let client: NexusClient
        let authenticator: DeviceAuthenticator
        let gate: SoftwareBiometricGate
        let store: EncryptedFileSecureStore

        init(options: ClientOptions, device: DeviceOptions?, biometricAvailable: Bool = true) throws {
            let api = try options.apiClient()
            let url = try options.serverURL
            var origin = "\(url.scheme ?? "http")://\(url.host ?? "127.0.0.1")"
            if let port = url.port { origin += ":\(port)" }
            store = options.store
            client = NexusClient(api: api)
            // One device identity per server.
            let scoped = ScopedSecureStore(base: store, prefix: "\(origin)/")
            authenticator = DeviceAuthenticator(store: scoped, origin: origin)
            let autoApprove = device?.yes ?? false
            gate = SoftwareBiometricGate(available: biometricAvailable) { reason in
                if autoApprove { return .success }
                FileHandle.standardError.write(Data("🔐 \(reason)\n   Approve with biometrics? [y/N] ".utf8))
                switch readLine()?.lowercased() {
                case "y", "yes": return .success
                case "f", "fail": return .failed
                default: return .cancelled
                }
            }
        }
    }

    struct Enroll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Enrol this device's passkey for purchases.")
        @OptionGroup var options: ClientOptions
        @OptionGroup var device: DeviceOptions
        @Option(help: "A label for this device.") var name: String = "purse CLI"

        func run() async throws {
            let device = try Device(options: options, device: device)
            let credential = try await client {
                try await withSpinner("Enrolling") {
                    try await Enrollment(client: device.client, gate: device.gate, authenticator: device.authenticator).enroll(name: name)
                }
            }
            try options.output.emit(credential) { "Passkey enrolled (\(credential.id.prefix(12))…, \(credential.attestationFormat) attestation)." }
        }
    }

    struct Unlock: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unlock the app (soft lock): biometric, or the local PIN. Makes no network calls.")
        @OptionGroup var options: ClientOptions
        @OptionGroup var device: DeviceOptions
        @Flag(help: "Behave as a device without biometrics.") var noBiometrics = false

        func run() async throws {
            let device = try Device(options: options, device: device, biometricAvailable: !noBiometrics)
            let lock = SoftLock(gate: device.gate, store: ScopedSecureStore(base: device.store, prefix: "softlock/"))
            var outcome = await lock.unlock()
            while true {
                switch outcome {
                case .unlocked:
                    try options.output.emit(["unlocked": true]) { "Unlocked." }
                    return
                case .needsPinSetup:
                    guard let pin = readSecret("Choose a local PIN (4-8 digits): "), !pin.isEmpty else { throw CLIError("No PIN given.") }
                    try await client { try await lock.setPin(pin) }
                    outcome = try await lock.unlock(pin: pin)
                case .needsPin(let reason):
                    FileHandle.standardError.write(Data("\(reason).\n".utf8))
                    guard let pin = readSecret("PIN: ") else { throw CLIError("No PIN given.") }
                    outcome = try await lock.unlock(pin: pin)
                case .wrongPin(let left):
                    FileHandle.standardError.write(Data("Wrong PIN, \(left) attempt(s) left.\n".utf8))
                    guard let pin = readSecret("PIN: ") else { throw CLIError("No PIN given.") }
                    outcome = try await lock.unlock(pin: pin)
                case .lockedOut:
                    throw CLIError("Too many wrong PINs. Sign in again with `purse account login`.")
                }
            }
        }
    }

    struct Products: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List airtime and data products, or sync them with the supplier.",
            subcommands: [ProductsList.self, ProductsSync.self], defaultSubcommand: ProductsList.self
        )
    }

    struct ProductsList: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List airtime and data products.")
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let api = NexusClient(api: try options.apiClient())
            let products = try await client { try await api.products() }
            try options.output.emit(products) {
                products.map { p in
                    let price = p.minAmount == p.maxAmount ? "₦\(p.minAmount)" : "₦\(p.minAmount)–₦\(p.maxAmount)"
                    return "\(p.code.padding(toLength: 18, withPad: " ", startingAt: 0)) \(p.name.padding(toLength: 26, withPad: " ", startingAt: 0)) \(price)"
                }.joined(separator: "\n")
            }
        }
    }

    struct BuyAirtime: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "buy-airtime", abstract: "Buy airtime or data, authorised by the biometric step-up (or --pin).")
        @OptionGroup var options: ClientOptions
        @OptionGroup var device: DeviceOptions
        @Option(help: "Product code, e.g. AIRTIME_MTN (see `purse nexus products`).") var product: String
        @Option(help: "Recipient: 0 + 10 digits, or +234 + 10 digits.") var phone: String
        @Option(help: "Amount in naira.") var amount: Int
        @Flag(help: "Authorise with the transaction PIN instead of biometrics (env PURSE_PIN, else asked).") var pin = false
        @Flag(help: "Spend cashback first.") var useCashback = false
        @Flag(help: "Do not wait for the network to confirm a pending top-up (follow it with `purse nexus status`).") var noWait = false

        @MainActor
        func run() async throws {
            let device = try Device(options: options, device: device, biometricAvailable: !pin)
            let products = try await client { try await device.client.products() }
            guard let chosen = products.first(where: { $0.code == product.uppercased() }) else {
                throw CLIError("Unknown product \(product). See `purse nexus products`.")
            }
            let order = TopupOrder(amount: amount, productCode: chosen.code, recipientPhone: phone, supplierSlug: chosen.supplierSlug, useCashback: useCashback)
            let poller = noWait ? Poller(maxAttempts: 1) : Poller(interval: .seconds(2), multiplier: 1.5, maxInterval: .seconds(10), maxAttempts: 8)
            let model = CheckoutViewModel(client: device.client, gate: device.gate, authenticator: device.authenticator, deliveryPoller: poller)
            if pin { await model.buyWithPin(order) } else { await model.buy(order) }
            var pinFromEnv = ProcessInfo.processInfo.environment["PURSE_PIN"]
            while true {
                switch model.step {
                case .completed(let receipt):
                    try options.output.emit(receipt) {
                        "✓ Topup successful: ₦\(receipt.amount) \(chosen.name) to \(phone)\n  transaction \(receipt.transactionId) · balance ₦\(receipt.balance)"
                    }
                    return
                case .deliveryPending(let receipt):
                    try options.output.emit(receipt) {
                        "… Topup paid, delivery not yet confirmed: ₦\(receipt.amount) \(chosen.name) to \(phone)\n  transaction \(receipt.transactionId) · balance ₦\(receipt.balance)\n  follow it with `purse nexus status \(receipt.transactionId)`"
                    }
                    return
                case .deliveryFailed(let receipt, _):
                    FileHandle.standardError.write(Data("✗ \(model.message ?? "Topup failed")\n  transaction \(receipt.transactionId)\n".utf8))
                    throw ExitCode(2)
                case .enteringPin(let message):
                    if let message { FileHandle.standardError.write(Data("\(message)\n".utf8)) }
                    let entered: String?
                    if let fromEnv = pinFromEnv { entered = fromEnv; pinFromEnv = nil } else { entered = readSecret("Transaction PIN: ") }
                    guard let entered, !entered.isEmpty else { throw CLIError("Cancelled.") }
                    await model.submitPin(entered)
                case .biometricFailed:
                    if let error = model.deviceError { FileHandle.standardError.write(Data("\(error.message)\n".utf8)) }
                    guard ask("Biometric failed. \(TransactionAuthorizer.usePinPrompt)") else { throw CLIError("Cancelled.") }
                    await model.usePin()
                case .verificationFailed(let reason):
                    FileHandle.standardError.write(Data("Verification failed. Try again or use PIN (\(reason))\n".utf8))
                    if ask(TransactionAuthorizer.usePinPrompt) { await model.usePin() } else if ask("Try biometrics again?") { await model.retryBiometric() } else { throw CLIError("Cancelled.") }
                case .failed(let error, _):
                    FileHandle.standardError.write(Data("\(explain(error).description)\n".utf8))
                    guard ask("Retry?") else { throw explain(error) }
                    await model.retry()
                case .refused(let error):
                    throw CLIError(error.message)
                case .cancelled:
                    throw CLIError("Cancelled.")
                default:
                    throw CLIError("Checkout stopped unexpectedly at \(model.step).")
                }
            }
        }

        func ask(_ question: String) -> Bool {
            FileHandle.standardError.write(Data("\(question) [Y/n] ".utf8))
            guard let answer = readLine()?.lowercased() else { return false }
            return answer.isEmpty || answer == "y" || answer == "yes"
        }
    }

    struct Balance: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the wallet balance.")
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let api = NexusClient(api: try options.apiClient())
            let balance = try await client { try await api.balance() }
            try options.output.emit(balance) { "Balance ₦\(balance.balance) · cashback ₦\(balance.cashback)" }
        }
    }

    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show wallet transactions, newest first.")
        @OptionGroup var options: ClientOptions
        @Option(help: "How many (1-100).") var limit: Int = 20
        @Option(help: "Continue after this cursor (printed at the end of a page).") var cursor: String?

        func run() async throws {
            let api = NexusClient(api: try options.apiClient())
            let page = try await client { try await api.transactions(limit: limit, cursor: cursor) }
            try options.output.emit(page) {
                var lines = page.data.map { t in
                    let what = switch t.kind {
                    case .topup: "\(t.productCode ?? "") → \(t.recipientPhone ?? "") (\(t.method?.rawValue ?? ""))"
                    case .funding: "wallet funding"
                    }
                    let status = switch t.status {
                    case .pending: "  [pending]"
                    case .failed: "  [failed, refunded: \(t.failureReason ?? "not delivered")]"
                    case .completed: ""
                    }
                    return "\(t.timestamp)  \(t.kind == .topup ? "-" : "+")₦\(t.amount)  \(what)  \(t.transactionId)\(status)"
                }
                if lines.isEmpty { lines = ["No transactions yet."] }
                if let next = page.nextCursor { lines.append("More: purse nexus history --cursor \(next)") }
                return lines.joined(separator: "\n")
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show one transaction; with --wait, follow a pending top-up until it settles.")
        @OptionGroup var options: ClientOptions
        @Argument(help: "The transaction id (tx_…); without it, the latest top-up.") var transaction: String?
        @Flag(help: "Wait while the top-up is pending (up to about a minute).") var wait = false

        func run() async throws {
            let api = NexusClient(api: try options.apiClient())
            let transaction: TransactionID
            if let given = self.transaction { transaction = TransactionID(given) } else { transaction = try await latestTopUp(api) }
            let found = try await client {
                wait ? try await api.awaitDelivery(of: transaction, poller: Poller(interval: .seconds(2), maxAttempts: 30)) : try await api.transaction(id: transaction)
            }
            try options.output.emit(found) {
                switch found.status {
                case .pending: "… \(found.transactionId): pending — the network has not confirmed delivery yet"
                case .failed: "✗ \(found.transactionId): failed — \(found.failureReason ?? "not delivered"); ₦\(found.amount) was returned to the wallet"
                case .completed: "✓ \(found.transactionId): completed"
                }
            }
            if found.status == .failed { throw ExitCode(2) }
        }

        func latestTopUp(_ api: NexusClient) async throws -> TransactionID {
            let page = try await client { try await api.transactions(limit: 100, cursor: nil) }
            guard let latest = page.data.first(where: { $0.kind == .topup }) else { throw CLIError("No top-ups yet.") }
            return latest.transactionId
        }
    }

    struct ProductsSync: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract: "Align the data bundles with the supplier's plans (prices, plans gone, new plans).",
            discussion: """
                Reads the database and supplier settings as `purse serve` does (DATABASE_URL, PURSE_DATA_DIR,
                VTPASS_URL and its keys). Without VTPASS_URL it asks the built-in VTpass sandbox, in this
                process as `purse serve` does.
                """
        )
        @Flag(help: "Add the supplier's plans the catalogue lacks.") var addNew = false

        func run() async throws {
            do {
                let changes = try await OperatorEnvironment.with { environment in
                    let module = NexusModule(configuration: try NexusConfiguration.from(environment.configuration))
                    return try await NexusProductSync(module: module, environment: environment).run(addNew: addNew)
                }
                print(changes.isEmpty ? "The catalogue matches the supplier." : changes.joined(separator: "\n"))
            } catch {
                throw CLIError("Could not sync the products: \(error)")
            }
        }
    }

    struct Fund: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Sandbox only: add money to the wallet.")
        @OptionGroup var options: ClientOptions
        @Option(help: "Amount in naira.") var amount: Int = 5_000

        func run() async throws {
            let api = NexusClient(api: try options.apiClient())
            let balance = try await client { try await api.fund(amount: amount) }
            try options.output.emit(["balance": balance]) { "Funded ₦\(amount). Balance ₦\(balance)." }
        }
    }

    struct SetPin: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "set-pin", abstract: "Set or change the 4-digit transaction PIN.")
        @OptionGroup var options: ClientOptions

        func run() async throws {
            let api = NexusClient(api: try options.apiClient())
            let env = ProcessInfo.processInfo.environment
            guard let pin = env["PURSE_NEW_PIN"] ?? readSecret("New PIN (4 digits): "), !pin.isEmpty else { throw CLIError("No PIN given.") }
            let current = env["PURSE_PIN"] ?? (readSecret("Current PIN (empty if none): ").flatMap { $0.isEmpty ? nil : $0 })
            try await client { try await api.setPin(pin, currentPin: current) }
            if !options.json { print("PIN set.") }
        }
    }
}

/// A secure store whose keys live under a prefix (one device identity per server).
struct ScopedSecureStore: SecureStore {
    let base: any SecureStore
    let prefix: String
    func data(for key: String) async throws -> Data? { try await base.data(for: prefix + key) }
    func set(_ data: Data, for key: String) async throws { try await base.set(data, for: prefix + key) }
    func remove(_ key: String) async throws { try await base.remove(prefix + key) }
}

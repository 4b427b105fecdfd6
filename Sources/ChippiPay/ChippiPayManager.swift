import Foundation
import PurseFormats
import Observation
import PurseKit
import PurseHTTP
import Starknet

/// Where a purchase is in the seed's seven steps.
public enum PurchaseStep: Sendable, Equatable {
    case idle
    /// Step 2: the STRK the service needs at the current rate.
    case quoting
    /// Step 3A: is there that much in the vault?
    case checkingBalance
    /// Step 4: the vault pays the provider.
    case withdrawing
    /// Step 5: the provider is told about the payment.
    case creatingTransaction(vaultTransactionHash: String)
    /// Step 6: waiting for delivery.
    case polling(transactionId: PurchaseID)
    /// Step 7: delivered.
    case completed(SKUTransaction)
    /// Refused or failed; `transactionId` when the provider knows the purchase (a failed purchase is refunded).
    case failed(message: String, transactionId: PurchaseID?)
    /// Delivery not confirmed within the polling window; it goes on and can be checked later.
    case pending(transactionId: PurchaseID)
}

/// The app's ChippiPay side (the seed's `ChippiPayManager`): the gasless wallet, the catalogue,
/// and purchases paid from the vault.
///
/// A purchase is recorded in the `SecureStore` before the vault pays, and its vault transaction
/// as soon as there is one, so a purchase interrupted by a crash or a lost answer resumes where it
/// stopped (`resumePendingPurchase`) instead of paying again: the provider's purchase is created
/// with an `Idempotency-Key` derived from the vault transaction, which it also refuses to accept
/// twice.
@MainActor
@Observable
public final class ChippiPayManager {
    public private(set) var availableServices: [ChippiSKU] = []
    public private(set) var currentWalletId: WalletID?
    /// The wallet as the provider keeps it (the seed's `currentWallet`), once created or restored.
    public private(set) var currentWallet: ChippiWallet?
    public private(set) var isConnected = false
    public private(set) var isLoading = false
    public private(set) var errorMessage: String?
    public private(set) var purchaseStep: PurchaseStep = .idle { didSet { onStepChange?(purchaseStep) } }
    public private(set) var history: [SKUTransaction] = []

    /// Hears every step as it begins (a command-line client prints them; views observe `purchaseStep`).
    @ObservationIgnored public var onStepChange: (@MainActor (PurchaseStep) -> Void)?
    /// The purchase's rules and where it stands; `purchaseStep` publishes its step.
    @ObservationIgnored var purchase = PurchaseStateMachine()
    /// The step last published in this purchase (a repeated one is not announced twice).
    @ObservationIgnored private var published: PurchaseStep?
    @ObservationIgnored public let api: ChippiPayAPI
    @ObservationIgnored let store: any SecureStore
    @ObservationIgnored let sleeper: Sleeper
    @ObservationIgnored let keyRounds: Int

    public static let walletItem = "chippipay.wallet_id"
    public static let pendingPurchaseItem = "chippipay.pending_purchase"
    /// The Starknet account last linked to the wallet as a payer (``linkPayingAccount(starknet:)``).
    public static let linkedPayerItem = "chippipay.linked_payer"

    public init(api: ChippiPayAPI, store: any SecureStore, sleeper: Sleeper = .live, keyRounds: Int = WalletKeyBackup.defaultRounds) {
        self.api = api
        self.store = store
        self.sleeper = sleeper
        self.keyRounds = keyRounds
    }

    // MARK: Wallet

    /// Creates the gasless wallet: the provider reserves an id, the device makes the Stark key and
    /// encrypts it with `userPassword`, the provider stores the public key and the sealed key.
    /// The wallet id is kept in the SecureStore. Returns it.
    /// `email`, asked on the wallet creation screen, is kept with the wallet at the provider.
    /// `authToken`: the user's token, which the seed's merchant-key form must send; in user mode
    /// the token every call carries names the user, and nil is enough.
    @discardableResult
    public func createGaslessWallet(userPassword: String, authToken: String? = nil, externalUserId: String, email: String? = nil) async throws -> WalletID {
        try await run {
            guard userPassword.count >= 8 else { throw WalletKeyBackup.Failure.weakPassword }
            var metadata = ["source": "ios_app"]
            if let email = email?.trimmingCharacters(in: .whitespaces), !email.isEmpty { metadata["email"] = email }
            let prepared = try await self.api.prepareWalletCreation(authToken: authToken, externalUserId: externalUserId, metadata: metadata)
            let key = StarkKey.random()
            let sealed = try WalletKeyBackup.seal(key, password: userPassword, walletId: prepared.walletId, rounds: self.keyRounds)
            try await self.api.saveWallet(walletId: prepared.walletId, publicKey: key.publicKey.description, encryptedPrivateKey: sealed, authToken: authToken)
            try await self.store.setString(prepared.walletId.rawValue, for: Self.walletItem)
            self.currentWalletId = prepared.walletId
            self.currentWallet = (try? await self.api.getWallet(prepared.walletId)).map(ChippiWallet.init)
                ?? ChippiWallet(walletId: prepared.walletId, externalUserId: externalUserId, publicKey: key.publicKey.description, address: nil,
                                status: .active, email: metadata["email"], createdAt: nil)
            self.isConnected = true
            return prepared.walletId
        }
    }

    /// The wallet saved by an earlier `createGaslessWallet`, at app start.
    @discardableResult
    public func restoreWallet() async throws -> Bool {
        guard let stored = try await store.string(for: Self.walletItem) else { return false }
        let id = WalletID(stored)
        currentWalletId = id
        isConnected = true
        // The provider's record, when it can be reached; the id alone is enough to go on.
        if let wallet = try? await api.getWallet(id) { currentWallet = ChippiWallet(wallet) }
        return true
    }

    /// The wallet's private key from the provider's backup, opened with the password (a new
    /// device, a reinstall); checked against the wallet's public key.
    public func recoverWalletKey(userPassword: String) async throws -> StarkKey {
        guard let id = currentWalletId else { throw Self.noWallet }
        return try await run {
            let wallet = try await self.api.getWallet(id)
            guard let sealed = wallet.encryptedPrivateKey else { throw WalletKeyBackup.Failure.malformed }
            let key = try WalletKeyBackup.open(sealed, password: userPassword, walletId: id)
            guard wallet.publicKey.flatMap({ Felt($0) }) == key.publicKey else { throw WalletKeyBackup.Failure.malformed }
            return key
        }
    }

    /// Links the connected Starknet wallet to the ChippiPay wallet, so that the provider takes its
    /// vault withdrawals as this wallet's payments (it refuses a payment from any account not
    /// linked: nobody else can claim a payment seen on chain). Once per account; ``buyService``
    /// does it before its first withdrawal.
    public func linkPayingAccount(starknet: StarknetManager) async throws {
        guard let id = currentWalletId else { throw Self.noWallet }
        try await run {
            let wallet = try await self.api.getWallet(id)
            guard let address = wallet.address.flatMap({ Felt($0) }) else {
                throw ChippiPayError(kind: .refused, message: "The ChippiPay wallet has no account yet")
            }
            let (payer, signature) = try await starknet.signPayerLink(wallet: address)
            try await self.api.linkPayer(walletId: id, address: payer, signature: signature)
            try await self.store.setString(id.rawValue + " " + payer.description, for: Self.linkedPayerItem)
        }
    }

    /// Whether the connected Starknet wallet is linked to this ChippiPay wallet already.
    func isPayerLinked(_ starknet: StarknetManager) async -> Bool {
        guard let id = currentWalletId, let payer = starknet.walletAddress else { return false }
        return (try? await store.string(for: Self.linkedPayerItem)) == id.rawValue + " " + payer.description
    }

    // MARK: Catalogue

    public func fetchAvailableServices(category: String? = nil) async throws {
        let skus = try await run { try await self.api.fetchSKUs(category: category) }
        availableServices = skus
    }

    public func fetchHistory() async throws {
        guard let wallet = currentWalletId else { throw Self.noWallet }
        history = try await run { try await self.api.listSKUTransactions(walletId: wallet, limit: 50).transactions }
    }

    // MARK: Purchases

    /// Step 5 on its own (the seed's `purchaseService`): tells the provider about a vault payment.
    /// The Idempotency-Key is derived from the payment, so calling again for the same payment
    /// returns the same purchase.
    public func purchaseService(skuId: String, amount: Double, reference: String, vaultTransactionHash: String) async throws -> SKUTransaction {
        guard let wallet = currentWalletId else { throw Self.noWallet }
        return try await run {
            try await self.api.createSKUTransaction(skuId: skuId, reference: reference, amount: amount, walletId: wallet,
                                                    vaultTransactionHash: vaultTransactionHash, metadata: ["source": "ios_app"],
                                                    idempotencyKey: "purchase-" + vaultTransactionHash)
        }
    }

    /// The outcome of polling a purchase.
    public enum PollOutcome: Sendable, Equatable {
        case completed(SKUTransaction)
        case failed(SKUTransaction)
        case pending(transactionId: PurchaseID)
    }

    /// Step 6: every 2 s, backing off to 10 s, at most 10 times; a purchase still pending then is
    /// `.pending` (it goes on; check it later), not a failure. Cancelling the task stops it.
    public func pollTransactionStatus(transactionId: PurchaseID) async throws -> PollOutcome {
        let poller = Poller(interval: .seconds(2), multiplier: 1.5, maxInterval: .seconds(10), maxAttempts: 10, sleeper: sleeper,
                            retryErrors: { ($0 as? ChippiPayError)?.isTransient ?? false })
        do {
            let api = api
            let transaction = try await poller.poll { () async throws -> PollStatus<SKUTransaction> in
                let transaction = try await api.getSKUTransaction(transactionId)
                return transaction.status == .pending ? .pending : .done(transaction)
            }
            return transaction.status == .completed ? .completed(transaction) : .failed(transaction)
        } catch let error as PurseError where error.kind == .timeout {
            return .pending(transactionId: transactionId)
        }
    }

    /// The whole purchase, steps 2 to 7: quote, check the vault balance, withdraw to the provider's
    /// payment address, create the purchase, poll it. Ends in `.completed`, `.failed` or `.pending`
    /// (also in `purchaseStep`). `amount` is MXN for bills; fixed-price services take their price.
    /// A purchase an earlier run left unfinished is finished first (``PurchaseStateMachine``).
    @discardableResult
    public func buyService(_ sku: ChippiSKU, reference: String, amount: String? = nil, starknet: StarknetManager) async -> PurchaseStep {
        errorMessage = nil
        let unfinished = try? await loadPending()
        let order = PurchaseStateMachine.Order(sku: sku, reference: reference, amount: amount)
        return await drive(.start(order, hasWallet: currentWalletId != nil, unfinished: unfinished), starknet: starknet)
    }

    /// Carries on with a purchase an earlier run left unfinished (after a crash or a lost
    /// answer); `.idle` when there is none. A purchase whose vault payment never happened is dropped.
    @discardableResult
    public func resumePendingPurchase(starknet: StarknetManager) async -> PurchaseStep {
        guard let pending = try? await loadPending() else { return .idle }
        return await drive(.resume(pending), starknet: starknet)
    }

    /// Why the last purchase stopped, as a value (`purchaseStep` carries its message).
    public var purchaseFailure: PurchaseFailure? { purchase.failure }

    func loadPending() async throws -> PendingPurchase? {
        guard let data = try await store.data(for: Self.pendingPurchaseItem) else { return nil }
        return try JSONDecoder().decode(PendingPurchase.self, from: data)
    }

    // MARK: Driving the purchase

    /// Feeds `event` to the purchase's state machine and runs what it asks for until it stops.
    private func drive(_ event: PurchaseStateMachine.Event, starknet: StarknetManager) async -> PurchaseStep {
        published = nil
        await feed(event, starknet: starknet)
        return purchaseStep
    }

    private func feed(_ event: PurchaseStateMachine.Event, starknet: StarknetManager) async {
        let effects = purchase.handle(event)
        if purchase.step != published {
            published = purchase.step
            if case .failed = purchase.step { errorMessage = purchase.failure?.message }
            purchaseStep = purchase.step
        }
        for effect in effects {
            if let next = await perform(effect, starknet: starknet) { await feed(next, starknet: starknet) }
        }
    }

    /// Runs one effect; what happened, for the machine.
    private func perform(_ effect: PurchaseStateMachine.Effect, starknet: StarknetManager) async -> PurchaseStateMachine.Event? {
        switch effect {
        case .quote(let skuId, let amount):
            do { return .quoted(try await api.quote(skuId: skuId, amount: amount)) } catch { return Self.failed(error) }
        case .checkBalance:
            do { try await starknet.checkBalance() } catch { return Self.failed(error) }
            return .balanceChecked(vault: starknet.vaultBalance, available: starknet.vaultBalanceText, payerLinked: await isPayerLinked(starknet))
        case .linkPayer:
            do { try await linkPayingAccount(starknet: starknet) } catch { return Self.failed(error) }
            return .payerLinked
        case .record(let pending):
            do { try await save(pending) } catch { return Self.failed(error) }
            return .recorded
        case .keep(let pending):
            try? await save(pending)
            return nil
        case .forget:
            try? await store.remove(Self.pendingPurchaseItem)
            return nil
        case .withdraw(let fri, let payTo):
            // Gasless: the provider's paymaster submits the withdrawal and pays its fee. The signed
            // execution is recorded before it is sent, its hash as soon as it is known: a crash or a
            // lost answer after either resumes this payment instead of making another.
            let account = starknet.walletAddress
            do {
                let hash = try await starknet.withdrawFromVault(amount: fri, toAddress: payTo, paymaster: api, signed: { execution, signature in
                    await self.feed(.signed(account: account, execution: execution, signature: signature), starknet: starknet)
                }, submitted: { hash in
                    await self.feed(.submitted(transactionHash: hash), starknet: starknet)
                })
                return .withdrawn(transactionHash: hash)
            } catch StarknetWalletError.reverted(let hash, let reason) {
                return .withdrawalReverted(transactionHash: hash.description, reason: reason)
            } catch {
                return Self.failed(error)
            }
        case .relay(let account, let execution, let signature):
            do {
                return .withdrawn(transactionHash: try await api.executeOutside(account: account, execution: execution, signature: signature))
            } catch let error as ChippiPayError where !error.isTransient {
                return Self.failed(error, permanent: true)
            } catch {
                return Self.failed(error)
            }
        case .awaitAcceptance(let hash):
            do {
                try await starknet.waitForAcceptance(hash)
                return .accepted
            } catch StarknetWalletError.reverted(let hash, let reason) {
                return .withdrawalReverted(transactionHash: hash.description, reason: reason)
            } catch {
                return Self.failed(error)
            }
        case .createPurchase(let pending, let hash):
            guard let amount = Double(pending.amount) else { return .failed(.malformedAnswer, permanent: false) }
            do {
                return .created(try await purchaseService(skuId: pending.skuId, amount: amount, reference: pending.reference, vaultTransactionHash: hash))
            } catch let error as ChippiPayError where error.refundingPurchase != nil {
                // Refused (too little for the price now) and being refunded: the provider's failed
                // purchase is followed like any other, so the user sees the refund, not a loss.
                if let id = error.refundingPurchase, let refunding = try? await api.getSKUTransaction(id) { return .created(refunding) }
                return Self.failed(error, permanent: false)
            } catch let error as ChippiPayError where !error.isTransient {
                return Self.failed(error, permanent: true)
            } catch {
                return Self.failed(error)
            }
        case .poll(let id):
            do { return .polled(try await pollTransactionStatus(transactionId: id)) } catch { return Self.failed(error) }
        case .checkRecord:
            return .recordChecked(try? await loadPending())
        }
    }

    static func failed(_ error: any Error, permanent: Bool = false) -> PurchaseStateMachine.Event {
        .failed(.call(message: message(for: error), transient: (error as? ChippiPayError)?.isTransient ?? false), permanent: permanent)
    }

    func save(_ pending: PendingPurchase) async throws {
        try await store.set(try JSONEncoder().encode(pending), for: Self.pendingPurchaseItem)
    }

    // MARK: Plumbing

    static let noWallet = ChippiPayError(kind: .refused, message: PurchaseFailure.noWallet.message)

    static func message(for error: any Error) -> String {
        switch error {
        case let error as ChippiPayError: error.message
        case let error as StarknetWalletError: error.description
        case let error as WalletKeyBackup.Failure: error.description
        default: StarknetManager.message(for: error)
        }
    }

    /// Runs a call with `isLoading` set; a failure sets `errorMessage` and is rethrown.
    private func run<T>(_ work: () async throws -> T) async throws -> T {
        isLoading = true
        errorMessage = nil
        defer { isLoading = false }
        do {
            return try await work()
        } catch {
            errorMessage = Self.message(for: error)
            throw error
        }
    }
}

/// The user's gasless wallet (the seed's `ChippiWallet`): its id, its Stark public key and
/// account address, its status at the provider, and the e-mail given when it was made.
public struct ChippiWallet: Sendable, Hashable, Identifiable {
    public var walletId: WalletID
    public var externalUserId: String
    public var publicKey: String?
    public var address: String?
    public var status: WalletStatus
    public var email: String?
    /// Unix milliseconds.
    public var createdAt: Int64?

    public var id: WalletID { walletId }

    public init(walletId: WalletID, externalUserId: String, publicKey: String?, address: String?, status: WalletStatus, email: String?, createdAt: Int64?) {
        self.walletId = walletId
        self.externalUserId = externalUserId
        self.publicKey = publicKey
        self.address = address
        self.status = status
        self.email = email
        self.createdAt = createdAt
    }

    public init(_ wallet: ChippiPayAPI.Wallet) {
        self.init(walletId: wallet.walletId, externalUserId: wallet.externalUserId, publicKey: wallet.publicKey, address: wallet.address,
                  status: wallet.status, email: wallet.metadata?["email"]?.stringValue, createdAt: wallet.createdAt)
    }
}

import Foundation
import Observation
import PurseKit
import PurseHTTP
import Starknet

/// Why a vault action did not happen (or did not succeed on chain), in words for the user.
public enum StarknetWalletError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidAddress(String)
    case invalidPrivateKey
    case invalidAmount(String)
    case noAccount(Felt)
    case notAnAccount(Felt)
    case keyMismatch
    case wrongNetwork(expected: String, found: String)
    case notConnected
    case insufficientWalletBalance(available: UInt256)
    case insufficientVaultBalance(available: UInt256)
    /// The transaction was included and paid its fee, but its calls failed.
    case reverted(transactionHash: Felt, reason: String)
    case refused(String)
    case unavailable(String)

    public var description: String {
        switch self {
        case .invalidAddress(let field): "\(field) is not a Starknet address (0x and up to 64 hex digits)"
        case .invalidPrivateKey: "The private key is not a Stark private key (0x and up to 64 hex digits, below the curve order)"
        case .invalidAmount(let reason): reason
        case .noAccount(let address): "No account is deployed at \(address)"
        case .notAnAccount(let address): "The contract at \(address) is not an account"
        case .keyMismatch: "The private key does not belong to this account"
        case .wrongNetwork(let expected, let found): "The saved wallet is for \(expected), but the node is \(found)"
        case .notConnected: "Connect a wallet first"
        case .insufficientWalletBalance(let available): "Not enough STRK in the wallet (\(STRKAmount.format(available)) STRK available)"
        case .insufficientVaultBalance(let available): "Not enough STRK in the vault (\(STRKAmount.format(available)) STRK available)"
        case .reverted(let hash, let reason): "Transaction \(hash) was reverted: \(reason)"
        case .refused(let reason): "The node refused the transaction: \(reason)"
        case .unavailable(let reason): "The Starknet node cannot be reached: \(reason)"
        }
    }
}

/// The app's Starknet wallet and its vault (the seed's `StarknetManager`): connect a wallet,
/// deposit STRK to the vault, withdraw it, and read both balances.
///
/// The private key lives in the `SecureStore` (the Keychain on iOS) and nowhere else; it is never
/// logged or shown. Every action refreshes the balances when it ends, whether or not it succeeded,
/// so what the user sees is what the chain holds.
@MainActor
@Observable
public final class StarknetManager {
    public private(set) var isConnected = false
    public private(set) var walletAddress: Felt?
    /// STRK in the wallet, in fri (10^-18 STRK).
    public private(set) var walletBalance: UInt256?
    /// STRK the wallet holds in the vault, in fri.
    public private(set) var vaultBalance: UInt256?
    public private(set) var isLoading = false
    public private(set) var errorMessage: String?
    public private(set) var lastTransactionHash: Felt?

    @ObservationIgnored public let configuration: StarknetConfiguration
    @ObservationIgnored let provider: StarknetProvider
    @ObservationIgnored let store: any SecureStore
    @ObservationIgnored let poller: Poller
    @ObservationIgnored var account: StarknetAccount?

    /// The SecureStore item holding the connected wallet (address, private key, chain id).
    public static let storeKey = "chippipay.starknet.wallet"

    public init(configuration: StarknetConfiguration, transport: any HTTPTransport, store: any SecureStore,
                poller: Poller = Poller(interval: .milliseconds(250), multiplier: 1.5, maxInterval: .seconds(5), maxAttempts: 40)) {
        self.configuration = configuration
        self.provider = StarknetProvider(url: configuration.rpcURL, transport: transport)
        self.store = store
        self.poller = poller
    }

    var token: ERC20 { ERC20(address: configuration.tokenAddress, provider: provider) }
    var vault: VaultContract { VaultContract(address: configuration.vaultAddress, token: token) }

    public var walletBalanceText: String? { walletBalance.map(STRKAmount.format) }
    public var vaultBalanceText: String? { vaultBalance.map(STRKAmount.format) }

    struct SavedWallet: Codable {
        var address: String
        var privateKey: String
        var chainId: String
    }

    /// The connected account's signature over ``PayerLink`` for the ChippiPay wallet account
    /// `wallet`: its consent that its vault withdrawals pay that wallet's purchases.
    /// - Returns: The connected account's address and the signature.
    public func signPayerLink(wallet: Felt) async throws -> (payer: Felt, signature: [Felt]) {
        guard let account else { throw StarknetWalletError.notConnected }
        let chainId = try await node { try await account.chainIdentifier() }
        return (account.address, try account.sign(hash: PayerLink.messageHash(chainId: chainId, wallet: wallet, payer: account.address)))
    }

    // MARK: Connecting

    /// Connects the wallet at `address` with its private key: the node must hold an account there
    /// whose public key is this key's. The key is then kept in the SecureStore.
    public func connectWallet(address: String, privateKey: String) async throws {
        try await run {
            guard let account = Felt(address.trimmingCharacters(in: .whitespaces)), !account.isZero else {
                throw StarknetWalletError.invalidAddress("The wallet address")
            }
            guard let secret = Felt(privateKey.trimmingCharacters(in: .whitespacesAndNewlines)), let key = try? StarkKey(privateKey: secret) else {
                throw StarknetWalletError.invalidPrivateKey
            }
            let chainId = try await self.node { try await self.provider.chainId() }
            try await self.checkAccount(account, matches: key)
            let saved = SavedWallet(address: account.description, privateKey: secret.description, chainId: chainId.description)
            try await self.store.set(try JSONEncoder().encode(saved), for: Self.storeKey)
            self.use(StarknetAccount(address: account, key: key, provider: self.provider, feeMargin: self.configuration.feeMargin))
            try await self.refreshBalances()
        }
    }

    /// Reconnects the wallet saved by an earlier `connectWallet` (at app start); false when there
    /// is none. A wallet saved for another chain is not used.
    @discardableResult
    public func restore() async throws -> Bool {
        guard let data = try await store.data(for: Self.storeKey) else { return false }
        var restored = false
        try await run {
            let saved = try JSONDecoder().decode(SavedWallet.self, from: data)
            guard let address = Felt(saved.address), let secret = Felt(saved.privateKey), let key = try? StarkKey(privateKey: secret) else {
                throw StarknetWalletError.invalidPrivateKey
            }
            let chainId = try await self.node { try await self.provider.chainId() }
            guard chainId.description == saved.chainId else {
                throw StarknetWalletError.wrongNetwork(expected: Self.chainName(saved.chainId), found: Self.chainName(chainId.description))
            }
            self.use(StarknetAccount(address: address, key: key, provider: self.provider, feeMargin: self.configuration.feeMargin))
            try await self.refreshBalances()
            restored = true
        }
        return restored
    }

    /// Forgets the wallet and removes its key from the SecureStore.
    public func disconnect() async throws {
        try await store.remove(Self.storeKey)
        account = nil
        isConnected = false
        walletAddress = nil
        walletBalance = nil
        vaultBalance = nil
        lastTransactionHash = nil
        errorMessage = nil
    }

    private func use(_ account: StarknetAccount) {
        self.account = account
        walletAddress = account.address
        isConnected = true
    }

    /// The account at `address` exists and answers `get_public_key` with `key`'s public key.
    private func checkAccount(_ address: Felt, matches key: StarkKey) async throws {
        do {
            _ = try await provider.classHash(at: address)
        } catch let error as StarknetRPCError where error.kind == .contractNotFound {
            throw StarknetWalletError.noAccount(address)
        }
        let answer: [Felt]
        do {
            answer = try await provider.call(Call(to: address, entrypoint: "get_public_key"))
        } catch let error as StarknetRPCError {
            switch error.kind {
            case .entrypointNotFound, .contractError: throw StarknetWalletError.notAnAccount(address)
            default: throw error
            }
        }
        guard answer.first == key.publicKey else { throw StarknetWalletError.keyMismatch }
    }

    // MARK: Balances

    /// Reads the wallet's and the vault's STRK balances.
    public func checkBalance() async throws {
        try await run { try await self.refreshBalances() }
    }

    private func refreshBalances() async throws {
        guard let address = account?.address else { throw StarknetWalletError.notConnected }
        let token = self.token, vault = self.vault
        let (walletNow, vaultNow) = try await node {
            async let wallet = token.balance(of: address)
            async let inVault = vault.balance(of: address)
            return try await (wallet, inVault)
        }
        walletBalance = walletNow
        vaultBalance = vaultNow
    }

    // MARK: Vault actions

    /// Moves `amount` fri of STRK from the wallet into the vault: `approve` and `deposit` in one
    /// transaction, then waits for it to be accepted. Returns the transaction hash.
    @discardableResult
    public func depositToVault(amount: UInt256) async throws -> Felt {
        var hash = Felt.zero
        try await run {
            let account = try self.connectedAccount()
            guard amount > .zero else { throw StarknetWalletError.invalidAmount("The amount must be more than 0") }
            let available = try await self.node { try await self.token.balance(of: account.address) }
            guard amount <= available else { throw StarknetWalletError.insufficientWalletBalance(available: available) }
            hash = try await self.send(self.vault.depositCalls(amount), from: account)
            try await self.refreshBalances()
        }
        return hash
    }

    /// Withdraws `amount` fri of STRK from the vault to `toAddress` (the wallet itself when nil);
    /// waits for acceptance and returns the transaction hash. `submitted` hears the hash as soon as
    /// the node has the transaction, before acceptance (a purchase records it then).
    @discardableResult
    public func withdrawFromVault(amount: UInt256, toAddress: Felt? = nil, submitted: (@MainActor (Felt) async -> Void)? = nil) async throws -> Felt {
        var hash = Felt.zero
        try await run {
            let account = try self.connectedAccount()
            guard amount > .zero else { throw StarknetWalletError.invalidAmount("The amount must be more than 0") }
            let recipient = toAddress ?? account.address
            guard !recipient.isZero else { throw StarknetWalletError.invalidAddress("The recipient") }
            let available = try await self.node { try await self.vault.balance(of: account.address) }
            guard amount <= available else { throw StarknetWalletError.insufficientVaultBalance(available: available) }
            hash = try await self.send([self.vault.withdraw(to: recipient, amount)], from: account, submitted: submitted)
            try await self.refreshBalances()
        }
        return hash
    }

    /// Withdraws through a paymaster, which submits the withdrawal and pays its gas: the account
    /// signs a SNIP-9 outside execution of exactly this withdrawal (anything else the paymaster
    /// returns is refused unsigned). Waits for acceptance; returns the relayed transaction's hash.
    @discardableResult
    ///   `signed` hears the signed execution before it goes to the paymaster: whoever keeps it can
    ///   ask the paymaster again after a lost answer and learn the transaction's hash.
    public func withdrawFromVault(amount: UInt256, toAddress: Felt, paymaster: any Paymaster,
                                  signed: (@MainActor (OutsideExecution, [Felt]) async -> Void)? = nil,
                                  submitted: (@MainActor (Felt) async -> Void)? = nil) async throws -> Felt {
        var hash = Felt.zero
        try await run {
            let account = try self.connectedAccount()
            guard amount > .zero else { throw StarknetWalletError.invalidAmount("The amount must be more than 0") }
            let available = try await self.node { try await self.vault.balance(of: account.address) }
            guard amount <= available else { throw StarknetWalletError.insufficientVaultBalance(available: available) }
            let calls = [self.vault.withdraw(to: toAddress, amount)]
            let execution = try await paymaster.buildOutsideExecution(account: account.address, calls: calls)
            let now = UInt64(max(0, Date().timeIntervalSince1970))
            guard execution.calls == calls, execution.executeBefore > now, execution.executeBefore <= now + 3600 else {
                throw StarknetWalletError.refused("the paymaster asked to sign something other than this withdrawal")
            }
            let chainId = try await self.node { try await self.provider.chainId() }
            let signature = try account.signMessage(execution.typedData(chainId: chainId))
            await signed?(execution, signature)
            hash = try await paymaster.executeOutside(account: account.address, execution: execution, signature: signature)
            self.lastTransactionHash = hash
            await submitted?(hash)
            let receipt = try await self.node { try await self.provider.waitForTransaction(hash, poller: self.poller) }
            guard receipt.succeeded else {
                throw StarknetWalletError.reverted(transactionHash: hash, reason: receipt.revertReason ?? "no reason given")
            }
            try await self.refreshBalances()
        }
        return hash
    }

    /// Waits until `hash` is accepted; throws when it was reverted.
    public func waitForAcceptance(_ hash: Felt) async throws {
        let receipt = try await node { try await self.provider.waitForTransaction(hash, poller: self.poller) }
        guard receipt.succeeded else { throw StarknetWalletError.reverted(transactionHash: hash, reason: receipt.revertReason ?? "no reason given") }
    }

    /// The seed's decimal-string forms: `depositToVault(amount: "10")`.
    @discardableResult
    public func depositToVault(amount: String) async throws -> Felt {
        try await depositToVault(amount: try parse(amount))
    }

    @discardableResult
    public func withdrawFromVault(amount: String, toAddress: String? = nil) async throws -> Felt {
        let value = try parse(amount)
        var recipient: Felt?
        if let toAddress, !toAddress.isEmpty {
            guard let felt = Felt(toAddress.trimmingCharacters(in: .whitespaces)) else {
                let error = StarknetWalletError.invalidAddress("The recipient")
                errorMessage = error.description
                throw error
            }
            recipient = felt
        }
        return try await withdrawFromVault(amount: value, toAddress: recipient)
    }

    private func parse(_ amount: String) throws -> UInt256 {
        do {
            return try STRKAmount.parse(amount.trimmingCharacters(in: .whitespaces))
        } catch {
            let failure = StarknetWalletError.invalidAmount(error.description)
            errorMessage = failure.description
            throw failure
        }
    }

    private func connectedAccount() throws -> StarknetAccount {
        guard let account else { throw StarknetWalletError.notConnected }
        return account
    }

    /// Sends `calls`, records the hash as soon as the node has it, and waits for the receipt; a
    /// reverted transaction is an error that still names its hash (its fee was paid).
    private func send(_ calls: [Call], from account: StarknetAccount, submitted: (@MainActor (Felt) async -> Void)? = nil) async throws -> Felt {
        let hash: Felt
        do {
            hash = try await account.execute(calls)
        } catch let error as StarknetRPCError {
            throw StarknetWalletError.refused(error.description)
        } catch let error as PurseError {
            throw StarknetWalletError.unavailable(error.message)
        }
        lastTransactionHash = hash
        await submitted?(hash)
        let receipt = try await node { try await self.provider.waitForTransaction(hash, poller: self.poller) }
        guard receipt.succeeded else {
            throw StarknetWalletError.reverted(transactionHash: hash, reason: receipt.revertReason ?? "no reason given")
        }
        return hash
    }

    // MARK: Plumbing

    /// Runs an action with `isLoading` set; on failure records the error for the view, refreshes
    /// the balances when a wallet is connected (a reverted transaction still paid its fee), and
    /// rethrows.
    private func run(_ action: () async throws -> Void) async throws {
        isLoading = true
        errorMessage = nil
        defer { isLoading = false }
        do {
            try await action()
        } catch {
            errorMessage = Self.message(for: error)
            if isConnected { try? await refreshBalances() }
            throw error
        }
    }

    /// Node reads: transport failures become `unavailable`.
    private func node<T>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as PurseError where [.offline, .timeout, .server, .invalidResponse].contains(error.kind) {
            throw StarknetWalletError.unavailable(error.message)
        }
    }

    static func message(for error: any Error) -> String {
        switch error {
        case let error as StarknetWalletError: error.description
        case let error as StarknetRPCError: error.description
        case let error as PurseError: error.message
        default: String(describing: error)
        }
    }

    static func chainName(_ hex: String) -> String {
        Felt(hex)?.shortString ?? hex
    }
}

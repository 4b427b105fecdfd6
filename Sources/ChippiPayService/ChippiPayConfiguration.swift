import Foundation
import PurseServer
import Starknet
import StarknetDevnet

/// The provider's settings.
///
/// - `STARKNET_RPC_URL`: the Starknet node purchases are verified on and refunds sent through
///   (unset: the sandbox node in this process).
/// - `STARKNET_VAULT_ADDRESS`, `STARKNET_TOKEN_ADDRESS`: the vault and STRK (default: the sandbox's).
/// - `CHIPPI_PAYMENT_ADDRESS`, `CHIPPI_PAYMENT_PRIVATE_KEY`: the provider's account, which vault
///   withdrawals pay and refunds come from (required in production; in the sandbox an account
///   derived from the seed, deployed and funded at start).
/// - `CHIPPI_ACCOUNT_CLASS_HASH`: the class gasless wallets are deployed from (default: the sandbox's account).
/// - `CHIPPI_MXN_PER_STRK`: the exchange rate (default 20).
/// - `CHIPPI_QUOTE_SECONDS`: how long a quote is valid (default 300).
/// - `CHIPPI_REFUNDS`: where a refund of a vault payment goes: `vault` (default: back into the
///   payer's vault balance, by the vault's `deposit_for`) or `account` (the payer's account).
/// - `CHIPPI_UNCLAIMED_RETURN_SECONDS`: how long a payment to the provider may stay unclaimed by a
///   purchase before it goes back to its payer (default 86400).
/// - `CHIPPI_PAYMENT_SCAN_SECONDS`: how often the chain is read for payments (default 30).
/// - `CHIPPI_FUNDING_ACCOUNTS`: comma-separated accounts whose STRK transfers to the provider's
///   account fund it (its gas) and are never returned.
/// - `CHIPPI_SANDBOX_FULFILMENT_SECONDS`: how long the sandbox supplier takes (default 2).
/// - `CHIPPI_KEY_CACHE_SECONDS`: how long a checked key pair is remembered (default 5; a revocation takes effect within it).
/// - `CHIPPI_RATE_LIMIT`: requests per second per API key (default 50, bursts of twice that).
/// - `CHIPPI_PAYMASTER_RELAYS_PER_ACCOUNT`: gasless withdrawals sponsored per account a day (default 50).
/// - `CHIPPI_PAYMASTER_RELAYS_PER_MERCHANT`: gasless withdrawals sponsored per merchant a day (default 10000).
/// - `CHIPPI_PAYMASTER_FEE_PER_ACCOUNT`: the most fee (STRK) sponsored per account a day (default 5).
/// - `CHIPPI_PAYMASTER_FEE_PER_MERCHANT`: the most fee (STRK) sponsored per merchant a day (default 1000).
/// - `CHIPPI_SANDBOX_WEBHOOK_URL`: where the sandbox merchant's webhooks go (default: none).
/// - `CHIPPI_SANDBOX_MERCHANT_KEYS`: the sandbox merchant's key pair as `pk_test_…:sk_test_…`
///   (default: derived from the server's secrets; either way written to
///   `DATA_DIR/secrets/chippi-sandbox-merchant.json` at start, never logged).
public struct ChippiProviderConfiguration: Sendable {
    public var rpcURL: URL?
    public var vaultAddress: Felt = SandboxNode.vaultAddress
    public var tokenAddress: Felt = SandboxNode.strkAddress
    /// The class gasless wallets' accounts are deployed from (`CHIPPI_ACCOUNT_CLASS_HASH`; default:
    /// the sandbox's account class). Its constructor takes the public key.
    public var accountClassHash: Felt = SandboxClass.account.classHash
    public var paymentAddress: Felt?
    public var paymentPrivateKey: Felt?
    public var rate = STRKRate(centavosPerSTRK: 2000)
    public var quoteSeconds = 300
    /// How long a payment may stay unclaimed before it goes back (`CHIPPI_UNCLAIMED_RETURN_SECONDS`).
    public var unclaimedReturnSeconds = 86_400
    /// How often the chain is read for payments (`CHIPPI_PAYMENT_SCAN_SECONDS`; 0: never, for tests that drive passes).
    public var paymentScanSeconds = 30
    /// Accounts whose transfers fund the provider's account (`CHIPPI_FUNDING_ACCOUNTS`).
    public var fundingAccounts: Set<Felt> = []
    /// Refunds of vault payments go back into the payer's vault balance (`CHIPPI_REFUNDS=vault`,
    /// the default: the vault's `deposit_for`), or to the payer's account (`account`).
    public var refundsIntoVault = true
    public var fulfilmentSeconds = 2.0
    public var rateLimit = 50.0
    /// How long a checked key pair is remembered (`CHIPPI_KEY_CACHE_SECONDS`, default 5): a
    /// revocation takes effect within it.
    public var keyCacheSeconds = 5.0
    /// The paymaster's budget per account and per merchant and UTC day: how many relays it
    /// sponsors, and how much fee at most (each relay counted at its transaction's max fee, in
    /// nano-STRK), whichever is spent first.
    public var relaysPerAccountDay = 50
    public var relaysPerMerchantDay = 10_000
    public var feePerAccountDayNano: Int64 = 5_000_000_000
    public var feePerMerchantDayNano: Int64 = 1_000_000_000_000
    /// The sandbox merchant's (public, secret) key pair; nil in production.
    public var sandboxKeys: (public: String, secret: String)?
    /// Where the sandbox merchant's webhooks go (`CHIPPI_SANDBOX_WEBHOOK_URL`).
    public var sandboxWebhookURL: String?

    public init() {}
}

/// ChippiPay's settings: the provider, and whether `purse serve` runs the sandbox node (never in production).
public struct ChippiPayConfiguration: Sendable {
    public var sandbox: StarknetSandboxConfiguration?
    public var provider: ChippiProviderConfiguration

    public init(sandbox: StarknetSandboxConfiguration?, provider: ChippiProviderConfiguration = ChippiProviderConfiguration()) {
        self.sandbox = sandbox
        self.provider = provider
    }

    public static func from(_ configuration: PurseConfiguration) throws -> ChippiPayConfiguration {
        let env = configuration.environment
        func value(_ name: String) -> String? { env[name].flatMap { $0.isEmpty ? nil : $0 } }
        var provider = ChippiProviderConfiguration()
        if let text = value("STARKNET_RPC_URL") {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw ConfigurationError("STARKNET_RPC_URL must be an http(s) URL")
            }
            provider.rpcURL = url
        }
        for (name, path) in [("STARKNET_VAULT_ADDRESS", \ChippiProviderConfiguration.vaultAddress), ("STARKNET_TOKEN_ADDRESS", \.tokenAddress)] {
            if let text = value(name) {
                guard let felt = Felt(text) else { throw ConfigurationError("\(name) must be a contract address") }
                provider[keyPath: path] = felt
            }
        }
        if let text = value("CHIPPI_ACCOUNT_CLASS_HASH") {
            guard let felt = Felt(text) else { throw ConfigurationError("CHIPPI_ACCOUNT_CLASS_HASH must be a class hash") }
            provider.accountClassHash = felt
        }
        if let text = value("CHIPPI_PAYMENT_ADDRESS") {
            guard let felt = Felt(text) else { throw ConfigurationError("CHIPPI_PAYMENT_ADDRESS must be a contract address") }
            provider.paymentAddress = felt
        }
        if let text = value("CHIPPI_PAYMENT_PRIVATE_KEY") {
            guard let felt = Felt(text), (try? StarkKey(privateKey: felt)) != nil else { throw ConfigurationError("CHIPPI_PAYMENT_PRIVATE_KEY must be a Stark private key") }
            provider.paymentPrivateKey = felt
        }
        if let text = value("CHIPPI_MXN_PER_STRK") {
            guard let rate = STRKRate(mxnPerSTRK: text) else { throw ConfigurationError("CHIPPI_MXN_PER_STRK must be a positive amount such as 20 or 19.75") }
            provider.rate = rate
        }
        if let text = value("CHIPPI_REFUNDS") {
            guard ["vault", "account"].contains(text) else { throw ConfigurationError("CHIPPI_REFUNDS must be vault or account") }
            provider.refundsIntoVault = text == "vault"
        }
        if let text = value("CHIPPI_QUOTE_SECONDS") {
            guard let seconds = Int(text), (10...86_400).contains(seconds) else { throw ConfigurationError("CHIPPI_QUOTE_SECONDS must be 10 to 86400") }
            provider.quoteSeconds = seconds
        }
        if let text = value("CHIPPI_UNCLAIMED_RETURN_SECONDS") {
            guard let seconds = Int(text), (60...31_536_000).contains(seconds) else { throw ConfigurationError("CHIPPI_UNCLAIMED_RETURN_SECONDS must be 60 to 31536000") }
            provider.unclaimedReturnSeconds = seconds
        }
        if let text = value("CHIPPI_PAYMENT_SCAN_SECONDS") {
            guard let seconds = Int(text), (1...3600).contains(seconds) else { throw ConfigurationError("CHIPPI_PAYMENT_SCAN_SECONDS must be 1 to 3600") }
            provider.paymentScanSeconds = seconds
        }
        if let text = value("CHIPPI_FUNDING_ACCOUNTS") {
            let accounts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard accounts.count <= 100, let felts = Optional(accounts.compactMap(Felt.init)), felts.count == accounts.count else {
                throw ConfigurationError("CHIPPI_FUNDING_ACCOUNTS must be at most 100 comma-separated contract addresses")
            }
            provider.fundingAccounts = Set(felts)
        }
        if let text = value("CHIPPI_SANDBOX_FULFILMENT_SECONDS") {
            guard let seconds = Double(text), (0...3600).contains(seconds) else { throw ConfigurationError("CHIPPI_SANDBOX_FULFILMENT_SECONDS must be 0 to 3600") }
            provider.fulfilmentSeconds = seconds
        }
        if let text = value("CHIPPI_KEY_CACHE_SECONDS") {
            guard let seconds = Double(text), (0...300).contains(seconds) else { throw ConfigurationError("CHIPPI_KEY_CACHE_SECONDS must be 0 to 300") }
            provider.keyCacheSeconds = seconds
        }
        if let text = value("CHIPPI_RATE_LIMIT") {
            guard let limit = Double(text), limit > 0, limit <= 100_000 else { throw ConfigurationError("CHIPPI_RATE_LIMIT must be 1 to 100000 requests a second") }
            provider.rateLimit = limit
        }
        if let text = value("CHIPPI_PAYMASTER_RELAYS_PER_ACCOUNT") {
            guard let count = Int(text), (1...1_000_000).contains(count) else { throw ConfigurationError("CHIPPI_PAYMASTER_RELAYS_PER_ACCOUNT must be 1 to 1000000") }
            provider.relaysPerAccountDay = count
        }
        for (name, keyPath) in [("CHIPPI_PAYMASTER_FEE_PER_ACCOUNT", \ChippiProviderConfiguration.feePerAccountDayNano),
                                ("CHIPPI_PAYMASTER_FEE_PER_MERCHANT", \ChippiProviderConfiguration.feePerMerchantDayNano)] {
            guard let text = value(name) else { continue }
            guard let fri = try? STRKAmount.parse(text), let nano = VaultPayments.nanoSTRK(fri), nano > 0, nano <= 1_000_000_000_000_000 else {
                throw ConfigurationError("\(name) must be an amount of STRK above 0 and at most 1,000,000,000")
            }
            provider[keyPath: keyPath] = nano
        }
        if let text = value("CHIPPI_PAYMASTER_RELAYS_PER_MERCHANT") {
            guard let count = Int(text), (1...100_000_000).contains(count) else { throw ConfigurationError("CHIPPI_PAYMASTER_RELAYS_PER_MERCHANT must be 1 to 100000000") }
            provider.relaysPerMerchantDay = count
        }
        guard !configuration.isProduction else {
            guard provider.rpcURL != nil, provider.paymentAddress != nil, provider.paymentPrivateKey != nil else {
                throw ConfigurationError("ChippiPay in production needs STARKNET_RPC_URL, CHIPPI_PAYMENT_ADDRESS and CHIPPI_PAYMENT_PRIVATE_KEY")
            }
            return ChippiPayConfiguration(sandbox: nil, provider: provider)
        }
        if let url = value("CHIPPI_SANDBOX_WEBHOOK_URL") {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
                throw ConfigurationError("CHIPPI_SANDBOX_WEBHOOK_URL must be an http(s) URL")
            }
            provider.sandboxWebhookURL = url
        }
        if let pair = value("CHIPPI_SANDBOX_MERCHANT_KEYS") {
            let parts = pair.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2, parts[0].hasPrefix("pk_test_"), parts[1].hasPrefix("sk_test_") else {
                throw ConfigurationError("CHIPPI_SANDBOX_MERCHANT_KEYS must be pk_test_…:sk_test_…")
            }
            provider.sandboxKeys = (parts[0], parts[1])
        } else {
            let secret = try ServerSecrets(dataDirectory: configuration.dataDirectory).secret(named: "chippi-sandbox-merchant.key")
            provider.sandboxKeys = MerchantKeys.sandboxPair(from: secret)
        }
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
        return ChippiPayConfiguration(sandbox: sandbox, provider: provider)
    }
}

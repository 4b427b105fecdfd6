import Foundation
import Observation
import Starknet

/// The seed's HomeView: the wallet and vault balances, whether the gasless wallet exists, the
/// latest purchases, and where to go next.
@MainActor
@Observable
public final class HomeViewModel {
    public enum NextStep: Sendable, Equatable {
        case connectWallet
        case depositToVault
        case createGaslessWallet
        case buyServices
    }

    @ObservationIgnored public let starknet: StarknetManager
    @ObservationIgnored public let chippi: ChippiPayManager

    public init(starknet: StarknetManager, chippi: ChippiPayManager) {
        self.starknet = starknet
        self.chippi = chippi
    }

    public var walletText: String { starknet.walletBalanceText.map { "\($0) STRK" } ?? "—" }
    public var vaultText: String { starknet.vaultBalanceText.map { "\($0) STRK" } ?? "—" }
    public var recentPurchases: [SKUTransaction] { Array(chippi.history.prefix(5)) }
    public var errorMessage: String? { starknet.errorMessage ?? chippi.errorMessage }

    /// The first-time setup's next step (connect, deposit, create the gasless wallet), then buying.
    public var nextStep: NextStep {
        if !starknet.isConnected { return .connectWallet }
        if (starknet.vaultBalance ?? .zero) == .zero { return .depositToVault }
        if !chippi.isConnected { return .createGaslessWallet }
        return .buyServices
    }

    /// What became of a purchase an earlier run left paid but unfinished, once ``load()``
    /// resumed it: shown to the user (completed, still pending, or paid and finishing); nil when
    /// there was none.
    public private(set) var resumedPurchase: PurchaseStep?

    /// The lines the home screen shows about ``resumedPurchase``.
    public var resumedPurchaseLines: [String]? {
        switch resumedPurchase {
        case .completed(let receipt)?: ["An earlier purchase finished", "Transaction ID: \(receipt.transactionId)", "Service delivered to: \(receipt.reference)"]
        case .pending(let id)?: ["An earlier purchase is being delivered", "Transaction ID: \(id)"]
        case .failed(let message, let id)?:
            [chippi.purchaseFailure?.isPaid == true ? "Paid; finishing" : "An earlier purchase failed", message] + (id.map { ["Transaction ID: \($0)"] } ?? [])
        default: nil
        }
    }

    /// Everything the screen shows, loaded at start: the saved wallets, balances and purchases.
    /// A purchase an earlier run left paid but unfinished is finished first (the same order,
    /// never a new payment), so the history then shows it; its outcome is ``resumedPurchase``.
    public func load() async {
        _ = try? await starknet.restore()
        _ = try? await chippi.restoreWallet()
        let resumed = await chippi.resumePendingPurchase(starknet: starknet)
        resumedPurchase = resumed == .idle ? nil : resumed
        if chippi.isConnected { try? await chippi.fetchHistory() }
    }
}

/// The seed's ChippiPayServicesView: the catalogue by category, searchable.
@MainActor
@Observable
public final class ServicesViewModel {
    public static let categories: [(id: String, title: String)] = [("phone_topup", "Phone top-ups"), ("bill", "Bills"), ("gift_card", "Gift cards")]

    public var category: String?
    public var searchText = ""
    @ObservationIgnored public let chippi: ChippiPayManager

    public init(chippi: ChippiPayManager) { self.chippi = chippi }

    public var isLoading: Bool { chippi.isLoading }
    public var errorMessage: String? { chippi.errorMessage }

    /// The services shown: the category's, matching the search in name, provider or id.
    public var services: [ChippiSKU] {
        let query = searchText.trimmingCharacters(in: .whitespaces).lowercased()
        return chippi.availableServices.filter { sku in
            (category == nil || sku.category == category)
                && (query.isEmpty || sku.name.lowercased().contains(query) || sku.provider.lowercased().contains(query) || sku.id.contains(query))
        }
    }

    public func load() async { try? await chippi.fetchAvailableServices() }
}

/// The seed's ServicePurchaseView: the delivery target checked against the service's pattern, the
/// amount for bills, the STRK it costs with "Gas fee: FREE", confirm, the steps as they go, and
/// "Purchase Successful!" with the transaction id and where it was delivered.
@MainActor
@Observable
public final class ServicePurchaseViewModel {
    public let sku: ChippiSKU
    public var referenceText = ""
    /// MXN, for bills (services without a fixed price).
    public var amountText = ""
    public private(set) var quote: ChippiQuote?
    @ObservationIgnored let starknet: StarknetManager
    @ObservationIgnored let chippi: ChippiPayManager

    public init(sku: ChippiSKU, starknet: StarknetManager, chippi: ChippiPayManager) {
        self.sku = sku
        self.starknet = starknet
        self.chippi = chippi
    }

    public var needsAmount: Bool { sku.amount == nil }
    public var priceText: String { sku.amount.map { "\($0) MXN" } ?? (amountText.isEmpty ? "\(sku.minAmount ?? "?")–\(sku.maxAmount ?? "?") MXN" : "\(amountText) MXN") }
    public var strkNeededText: String? { quote.map { "\($0.strkAmount) STRK" } }
    public let gasFeeText = "Gas fee: FREE"
    public var totalText: String? { quote.map { "Total: \($0.strkAmount) STRK" } }

    /// What is wrong with the form; nil when it can be confirmed (or is still empty).
    public var validationMessage: String? {
        if let inputMessage { return inputMessage }
        if let quote, let needed = quote.fri, let vault = starknet.vaultBalance, vault < needed {
            return "Not enough STRK in the vault: \(quote.strkAmount) STRK needed, \(starknet.vaultBalanceText ?? "0") available"
        }
        return nil
    }

    /// What is wrong with what the user typed (the delivery target, the amount).
    var inputMessage: String? {
        let reference = referenceText.trimmingCharacters(in: .whitespaces)
        if !reference.isEmpty, !sku.accepts(reference: reference) { return "Enter a \(sku.reference.label), such as \(sku.reference.example)" }
        if needsAmount, !amountText.isEmpty {
            guard let amount = Decimal(string: amountText), amountText.allSatisfy({ $0.isNumber || $0 == "." }),
                  let minimum = sku.minAmount.flatMap({ Decimal(string: $0) }), let maximum = sku.maxAmount.flatMap({ Decimal(string: $0) }),
                  amount >= minimum, amount <= maximum else {
                return "Enter an amount from \(sku.minAmount ?? "?") to \(sku.maxAmount ?? "?") MXN"
            }
        }
        return nil
    }

    public var canConfirm: Bool {
        !referenceText.isEmpty && (!needsAmount || !amountText.isEmpty) && validationMessage == nil && quote != nil && !isPurchasing
    }

    /// Gets the STRK price for the current amount.
    public func refreshQuote() async {
        guard !needsAmount || (!amountText.isEmpty && inputMessage == nil) else { quote = nil; return }
        quote = try? await chippi.api.quote(skuId: sku.id, amount: needsAmount ? amountText : nil)
    }

    public var step: PurchaseStep { chippi.purchaseStep }
    public var isPurchasing: Bool {
        switch step {
        case .quoting, .checkingBalance, .withdrawing, .creatingTransaction, .polling: true
        default: false
        }
    }

    /// The seed's step number (1–7) of the purchase in progress: this screen is step 2 (the
    /// service selected), confirming and checking the balance 3.
    public var stepNumber: Int {
        switch step {
        case .idle: 2
        case .quoting: 3
        case .checkingBalance: 3
        case .withdrawing: 4
        case .creatingTransaction: 5
        case .polling: 6
        case .completed, .failed, .pending: 7
        }
    }

    /// The result screen's lines: "Purchase Successful!", the transaction id, where it went.
    public var resultLines: [String]? {
        switch step {
        case .completed(let receipt):
            ["Purchase Successful!", "Transaction ID: \(receipt.transactionId)", "Service delivered to: \(receipt.reference)"]
        case .pending(let id):
            ["Purchase submitted", "Transaction ID: \(id)", "Delivery is not confirmed yet; it will show in your history."]
        case .failed(let message, let id):
            // Paid and unfinished is not a failure to the user: the STRK left the vault, and
            // confirming again finishes this same purchase.
            [chippi.purchaseFailure?.isPaid == true ? "Paid; finishing" : "Purchase failed", message] + (id.map { ["Transaction ID: \($0)"] } ?? [])
        default: nil
        }
    }

    public func confirm() async {
        guard canConfirm else { return }
        await chippi.buyService(sku, reference: referenceText.trimmingCharacters(in: .whitespaces), amount: needsAmount ? amountText : nil, starknet: starknet)
    }
}

/// The seed's ChippiWalletCreationView: e-mail, then a password (twice), then confirm.
@MainActor
@Observable
public final class WalletCreationViewModel {
    public enum Step: Int, Sendable, Comparable {
        case email = 1, password, confirm, done

        public static func < (a: Step, b: Step) -> Bool { a.rawValue < b.rawValue }
    }

    public private(set) var step: Step = .email
    public var email = ""
    public var password = ""
    public var passwordAgain = ""
    public private(set) var walletId: WalletID?
    @ObservationIgnored let chippi: ChippiPayManager
    @ObservationIgnored let authToken: (@MainActor () async -> String?)?
    @ObservationIgnored let externalUserId: String

    /// For user mode (``ChippiCredentials/user(token:)``): the token every call carries names
    /// the user the wallet is for.
    /// - Parameter externalUserId: The app's id for the user: the subject of its token.
    public init(chippi: ChippiPayManager, externalUserId: String) {
        self.chippi = chippi
        self.externalUserId = externalUserId
        self.authToken = nil
    }

    /// For the seed's merchant-key form, which sends the user's token in the body.
    /// - Parameters:
    ///   - authToken: The signed-in user's session token (the app's session).
    ///   - externalUserId: The app's id for the user.
    public init(chippi: ChippiPayManager, externalUserId: String, authToken: @escaping @MainActor () async -> String?) {
        self.chippi = chippi
        self.externalUserId = externalUserId
        self.authToken = authToken
    }

    public var errorMessage: String? { chippi.errorMessage }
    public var isCreating: Bool { chippi.isLoading }

    public var validationMessage: String? {
        switch step {
        case .email:
            let trimmed = email.trimmingCharacters(in: .whitespaces)
            return trimmed.isEmpty || trimmed.range(of: "^[^@\\s]+@[^@\\s]+\\.[^@\\s]{2,}$", options: .regularExpression) != nil ? nil : "Enter a valid e-mail address"
        case .password:
            if !password.isEmpty, password.count < 8 { return "Use at least 8 characters" }
            if !passwordAgain.isEmpty, passwordAgain != password { return "The passwords do not match" }
            return nil
        case .confirm, .done: return nil
        }
    }

    public var canContinue: Bool {
        switch step {
        case .email: !email.isEmpty && validationMessage == nil
        case .password: password.count >= 8 && password == passwordAgain
        case .confirm: !isCreating
        case .done: false
        }
    }

    public func back() { if step == .password { step = .email } else if step == .confirm { step = .password } }

    /// Moves on; on the confirm step, creates the wallet.
    public func next() async {
        guard canContinue else { return }
        switch step {
        case .email: step = .password
        case .password: step = .confirm
        case .confirm:
            var token: String?
            if let authToken {
                guard let given = await authToken() else { return }
                token = given
            }
            if let id = try? await chippi.createGaslessWallet(userPassword: password, authToken: token, externalUserId: externalUserId,
                                                              email: email.trimmingCharacters(in: .whitespaces)) {
                walletId = id
                password = ""
                passwordAgain = ""
                step = .done
            }
        case .done: break
        }
    }
}

/// The purchase history, newest first, a page at a time.
@MainActor
@Observable
public final class PurchaseHistoryViewModel {
    public private(set) var purchases: [SKUTransaction] = []
    public private(set) var hasMore = true
    public private(set) var errorMessage: String?
    @ObservationIgnored let api: ChippiPayAPI
    @ObservationIgnored let walletId: WalletID

    public init(api: ChippiPayAPI, walletId: WalletID) {
        self.api = api
        self.walletId = walletId
    }

    public func reload() async {
        purchases = []
        hasMore = true
        await loadMore()
    }

    public func loadMore() async {
        guard hasMore else { return }
        do {
            let page = try await api.listSKUTransactions(walletId: walletId, limit: 20, startingAfter: purchases.last?.transactionId)
            purchases += page.transactions
            hasMore = page.hasMore
            errorMessage = nil
        } catch {
            errorMessage = ChippiPayManager.message(for: error)
        }
    }
}

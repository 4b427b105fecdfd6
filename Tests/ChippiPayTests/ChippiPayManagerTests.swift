import ChippiPay
@testable import PurseCLI
import Foundation
import PurseFormats
import HTTPTypes
import PurseKit
import PurseHTTP
import PurseServer
import PurseTestSupport
import Synchronization
import Testing
@testable import Starknet

/// The app's ChippiPay side (ChippiPayAPI, ChippiPayManager) against the provider and the sandbox node.
@Suite("ChippiPay: the app's purchases")
@MainActor
struct ChippiPayManagerTests {
    /// Loses the answer to the first matching request after the server has handled it: a
    /// dropped connection on the way back.
    final class LosingTransport: HTTPTransport {
        let inner: any HTTPTransport
        let path: String
        let lost = Mutex(false)

        init(_ inner: any HTTPTransport, losingFirst path: String) {
            self.inner = inner
            self.path = path
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            let response = try await inner.send(request)
            if request.method == .post, request.url.path == path, lost.withLock({ lost in defer { lost = true }; return !lost }) {
                throw PurseError.offline("connection reset")
            }
            return response
        }
    }

    struct App {
        let starknet: StarknetManager
        let chippi: ChippiPayManager
        let store: any SecureStore
    }

    /// Each wait of a status poll also runs the server's due jobs, so delivery happens between polls.
    static func sleeper(_ h: ProviderTests.Harness) -> Sleeper {
        let server = h.server
        return Sleeper { _ in
            await server.app.jobWorker.runDue()
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// - Parameter user: user mode for this app user (the publishable key and the user's session,
    ///   as a shipped app runs); nil: the seed's merchant keys.
    static func app(_ h: ProviderTests.Harness, transport: (any HTTPTransport)? = nil, retry: RetryPolicy = RetryPolicy(maxAttempts: 1),
                    account: Int = 0, user: String? = nil) async throws -> App {
        let store: any SecureStore = InMemorySecureStore()
        let router = RouterTransport(client: h.client)
        let starknet = StarknetManager(configuration: StarknetConfiguration(rpcURL: h.provider.url, vaultAddress: h.vault), transport: router, store: store,
                                       poller: Poller(interval: .milliseconds(10), multiplier: 1, maxAttempts: 200))
        let sleeper = Self.sleeper(h)
        let credentials: ChippiCredentials
        if let user {
            let session = try await h.token(user)
            credentials = .user { session }
        } else {
            credentials = .merchantKeys
        }
        let api = ChippiPayAPI(environment: .custom(URL(string: "http://127.0.0.1")!), credentials: credentials, store: store, transport: transport ?? router,
                               retry: retry, sleeper: sleeper)
        if user != nil {
            try await api.configure(apiKey: ProviderTests.keys.public)
        } else {
            try await api.configure(apiKey: ProviderTests.keys.public, secretKey: ProviderTests.keys.secret)
        }
        let chippi = ChippiPayManager(api: api, store: store, sleeper: sleeper, keyRounds: 1_000)
        let (address, key) = h.accounts[account]
        try await starknet.connectWallet(address: address.description, privateKey: key.privateKey.description)
        return App(starknet: starknet, chippi: chippi, store: store)
    }

    /// The seed's journey as a shipped app runs it: user mode, the merchant's secret nowhere on
    /// the device.
    @Test func theSeedsJourney() async throws {
        try await ProviderTests.withProvider { @MainActor (h: ProviderTests.Harness) async throws in
            let app = try await Self.app(h, user: "user_123")
            #expect(try await app.store.data(for: ChippiPayAPI.secretKeyItem) == nil)
            try await app.starknet.depositToVault(amount: "10")
            let wallet = try await app.chippi.createGaslessWallet(userPassword: "correct horse", externalUserId: "user_123")
            // The provider keeps the public key and a blob only the password opens.
            let (_, saved, _) = try await h.call(.get, "/v1/chipi-wallets/\(wallet)")
            let blob = try #require(saved["encrypted_private_key"]?.stringValue)
            let restored = try WalletKeyBackup.open(blob, password: "correct horse", walletId: wallet)
            #expect(restored.publicKey.description == saved["public_key"]?.stringValue)
            #expect(throws: WalletKeyBackup.Failure.wrongPassword) { try WalletKeyBackup.open(blob, password: "wrong horse", walletId: wallet) }
            #expect(throws: WalletKeyBackup.Failure.wrongPassword) { try WalletKeyBackup.open(blob, password: "correct horse", walletId: "wallet_other") }
            // On a new device the manager recovers the key with the password.
            #expect(try await app.chippi.recoverWalletKey(userPassword: "correct horse").publicKey == restored.publicKey)
            await #expect(throws: WalletKeyBackup.Failure.wrongPassword) { try await app.chippi.recoverWalletKey(userPassword: "wrong horse") }

            try await app.chippi.fetchAvailableServices()
            let telcel = try #require(await app.chippi.availableServices.first { $0.id == "telcel_50" })
            let walletBefore = try #require(app.starknet.walletBalance)
            let outcome = await app.chippi.buyService(telcel, reference: "5512345678", starknet: app.starknet)
            guard case .completed(let receipt) = outcome else { Issue.record("ended \(outcome)"); return }
            #expect(app.starknet.walletBalance == walletBefore, "gasless: the relayer paid the withdrawal's fee")
            #expect(receipt.reference == "5512345678" && receipt.strkAmount == "2.5" && receipt.status == .completed)
            #expect(app.starknet.vaultBalance == SandboxNodeTests.strk("7.5"), "the vault paid exactly 2.5 STRK")
            try await app.chippi.fetchHistory()
            #expect(app.chippi.history.map(\.transactionId) == [receipt.transactionId])
            #expect(try await app.store.data(for: ChippiPayManager.pendingPurchaseItem) == nil)
        }
    }

    @Test func notEnoughInTheVaultStopsBeforeAnyTransaction() async throws {
        try await ProviderTests.withProvider { @MainActor (h: ProviderTests.Harness) async throws in
            let app = try await Self.app(h, account: 1)
            try await app.starknet.depositToVault(amount: "1")
            try await app.chippi.createGaslessWallet(userPassword: "correct horse", authToken: try await h.token("user_poor"), externalUserId: "user_poor")
            try await app.chippi.fetchAvailableServices(category: "phone_topup")
            let telcel = try #require(app.chippi.availableServices.first { $0.id == "telcel_50" })
            let nonce = try await h.provider.nonce(of: h.accounts[1].address)
            let outcome = await app.chippi.buyService(telcel, reference: "5512345678", starknet: app.starknet)
            #expect(outcome == .failed(message: "Not enough STRK in the vault: 2.5 STRK needed, 1 available", transactionId: nil))
            #expect(try await h.provider.nonce(of: h.accounts[1].address) == nonce)
            #expect(await app.chippi.buyService(telcel, reference: "55", starknet: app.starknet) == .failed(message: "Enter a 10-digit phone number", transactionId: nil))
        }
    }

    /// An app with 10 STRK in the vault and a wallet, whose first purchase's answer is lost
    /// (after the vault paid), and the Telcel top-up.
    @MainActor
    static func appLosingTheFirstPurchase(_ h: ProviderTests.Harness, user: String) async throws -> (App, ChippiSKU) {
        let losing = LosingTransport(RouterTransport(client: h.client), losingFirst: "/v1/sku-transactions")
        let app = try await Self.app(h, transport: losing, account: 2)
        try await app.starknet.depositToVault(amount: "10")
        try await app.chippi.createGaslessWallet(userPassword: "correct horse", authToken: try await h.token(user), externalUserId: user)
        try await app.chippi.fetchAvailableServices()
        return (app, try #require(app.chippi.availableServices.first { $0.id == "telcel_50" }))
    }

    @Test func aLostAnswerResumesWithoutPayingTwice() async throws {
        try await ProviderTests.withProvider { @MainActor (h: ProviderTests.Harness) async throws in
            let (app, telcel) = try await Self.appLosingTheFirstPurchase(h, user: "user_lost")
            let first = await app.chippi.buyService(telcel, reference: "5512345678", starknet: app.starknet)
            guard case .failed(let message, nil) = first, message.hasPrefix("Paid; finishing"), message.contains("Check your internet connection") else {
                Issue.record("a stop after paying says so: \(first)"); return
            }
            // The user taps Retry (the same purchase, no restart): it carries on with the same payment.
            guard case .completed = await app.chippi.buyService(telcel, reference: "5512345678", starknet: app.starknet) else {
                Issue.record("the retry did not complete"); return
            }
            try await app.starknet.checkBalance()
            #expect(app.starknet.vaultBalance == SandboxNodeTests.strk("7.5"), "one withdrawal")
            let (_, page, _) = try await h.call(.get, "/v1/sku-transactions")
            #expect(page["data"]?.arrayValue?.count == 1, "one purchase")
            #expect(await app.chippi.resumePendingPurchase(starknet: app.starknet) == .idle)
        }
    }

    /// Fails the `n`-th provider call of a purchase: with a 503 before the provider sees it, or
    /// by losing the answer after the provider handled it.
    final class StepFailingTransport: HTTPTransport {
        enum Mode: CaseIterable { case before, after }
        let inner: any HTTPTransport
        let failing: Int
        let mode: Mode
        let seen = Mutex(0)

        init(_ inner: any HTTPTransport, failing: Int, mode: Mode) {
            self.inner = inner
            self.failing = failing
            self.mode = mode
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            let index = seen.withLock { count in defer { count += 1 }; return count }
            guard index == failing else { return try await inner.send(request) }
            switch mode {
            case .before: return TransportResponse(status: .serviceUnavailable, body: Data(#"{"error":"Service unavailable"}"#.utf8))
            case .after:
                _ = try await inner.send(request)
                throw PurseError.offline("connection reset")
            }
        }
    }

    /// Answers 503 to every POST to `path`, which the provider never sees.
    final class PathFailingTransport: HTTPTransport {
        let inner: any HTTPTransport
        let path: String
        init(_ inner: any HTTPTransport, path: String) {
            self.inner = inner
            self.path = path
        }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            if request.method == .post, request.url.path == path {
                return TransportResponse(status: .serviceUnavailable, body: Data(#"{"error":"Service unavailable"}"#.utf8))
            }
            return try await inner.send(request)
        }
    }

    /// The measured double purchase: a step fails after the vault paid, the CLI (or the app)
    /// starts again and buys the same thing. For a failure at every provider call of a purchase,
    /// before or after the provider saw it, then a restart (a new manager on the same store) and
    /// the same order again: exactly one purchase and one payment, and a paid-but-unfinished
    /// stop says so.
    @Test func aFailureAtEveryStepThenARestartBuysOnce() async throws {
        try await ProviderTests.withProvider { @MainActor (h: ProviderTests.Harness) async throws in
            let sleeper = Self.sleeper(h)
            var calls = 0
            var stopsSayingPaid = 0
            for failing in 0..<6 {
                for mode in StepFailingTransport.Mode.allCases {
                    let user = "user_step_\(failing)_\(mode)"
                    let app = try await Self.app(h, account: 1)
                    try await app.starknet.depositToVault(amount: "5")
                    try await app.chippi.createGaslessWallet(userPassword: "correct horse", authToken: try await h.token(user), externalUserId: user)
                    try await app.chippi.fetchAvailableServices()
                    let telcel = try #require(app.chippi.availableServices.first { $0.id == "telcel_50" })
                    try await app.starknet.checkBalance()
                    let before = try #require(app.starknet.vaultBalance)
                    // The purchase's `failing`-th provider call fails.
                    let failingTransport = StepFailingTransport(RouterTransport(client: h.client), failing: failing, mode: mode)
                    let api = ChippiPayAPI(environment: .custom(URL(string: "http://127.0.0.1")!), credentials: .merchantKeys, store: app.store, transport: failingTransport,
                                           retry: RetryPolicy(maxAttempts: 1), sleeper: sleeper)
                    let first = ChippiPayManager(api: api, store: app.store, sleeper: sleeper, keyRounds: 1_000)
                    _ = try await first.restoreWallet()
                    let outcome = await first.buyService(telcel, reference: "5512345678", starknet: app.starknet)
                    calls = max(calls, failingTransport.seen.withLock { $0 })
                    if case .failed(let message, _) = outcome, first.purchaseFailure?.isPaid == true {
                        stopsSayingPaid += 1
                        #expect(message.hasPrefix("Paid; finishing"))
                    }
                    // A restart: a new manager on the same store, working calls, the same order.
                    let restarted = ChippiPayManager(api: app.chippi.api, store: app.store, sleeper: sleeper, keyRounds: 1_000)
                    _ = try await restarted.restoreWallet()
                    var again = await restarted.buyService(telcel, reference: "5512345678", starknet: app.starknet)
                    if case .pending(let id) = again, case .completed(let done) = try await restarted.pollTransactionStatus(transactionId: id) { again = .completed(done) }
                    if case .completed = outcome {} else {
                        guard case .completed = again else { Issue.record("failing call \(failing) \(mode): the restart ended \(again)"); continue }
                    }
                    try await app.starknet.checkBalance()
                    let wallet = try #require(restarted.currentWalletId)
                    let (_, page, _) = try await h.call(.get, "/v1/sku-transactions?wallet_id=\(wallet)&limit=100")
                    let purchases = page["data"]?.arrayValue ?? []
                    // One order, one purchase, one payment — or two of each when the first run
                    // completed before its failure and the restart was a new order.
                    let expected = { if case .completed = outcome { return 2 } else { return 1 } }()
                    #expect(purchases.count == expected, "failing call \(failing) \(mode): \(purchases.count) purchases")
                    var paid = UInt256.zero
                    for _ in 0..<expected { paid = paid.adding(SandboxNodeTests.strk("2.5"))! }
                    #expect(before.subtracting(try #require(app.starknet.vaultBalance)) == paid, "failing call \(failing) \(mode)")
                    #expect(await restarted.resumePendingPurchase(starknet: app.starknet) == .idle)
                }
            }
            #expect(stopsSayingPaid > 0 && calls >= 4, "\(calls) calls, \(stopsSayingPaid) stops after paying")
        }
    }

    /// `purse chippi buy` as it was measured: the purchase call answered 503 after the vault
    /// paid, then the same command again. The second run finishes the first purchase and buys
    /// nothing more (it used to resume and then buy again).
    @Test func theCLIRunTwiceAfterAPaidFailureBuysOnce() async throws {
        try await ProviderTests.withProvider { @MainActor (h: ProviderTests.Harness) async throws in
            let sleeper = Self.sleeper(h)
            let app = try await Self.app(h, account: 2)
            try await app.starknet.depositToVault(amount: "12.5")
            try await app.chippi.createGaslessWallet(userPassword: "correct horse", authToken: try await h.token("user_cli"), externalUserId: "user_cli")
            // The purchase call (step 5, after the vault paid) answers 503.
            let failing = PathFailingTransport(RouterTransport(client: h.client), path: "/v1/sku-transactions")
            let api = ChippiPayAPI(environment: .custom(URL(string: "http://127.0.0.1")!), credentials: .merchantKeys, store: app.store, transport: failing,
                                   retry: RetryPolicy(maxAttempts: 1), sleeper: sleeper)
            let firstRun = ChippiPayManager(api: api, store: app.store, sleeper: sleeper, keyRounds: 1_000)
            _ = try await firstRun.restoreWallet()
            var lines: [String] = []
            let first = try await ChippiCommand.Buy.purchase("telcel_50", reference: "5512345678", amount: nil, manager: firstRun, starknet: app.starknet) { lines.append($0) }
            guard case .failed(let message, _) = first, message.hasPrefix("Paid; finishing") else { Issue.record("the first run: \(first)"); return }
            let secondRun = ChippiPayManager(api: app.chippi.api, store: app.store, sleeper: sleeper, keyRounds: 1_000)
            _ = try await secondRun.restoreWallet()
            let second = try await ChippiCommand.Buy.purchase("telcel_50", reference: "5512345678", amount: nil, manager: secondRun, starknet: app.starknet) { lines.append($0) }
            guard case .completed = second else { Issue.record("the second run: \(second)"); return }
            try await app.starknet.checkBalance()
            #expect(app.starknet.vaultBalance == SandboxNodeTests.strk("10"), "one payment")
            let (_, page, _) = try await h.call(.get, "/v1/sku-transactions?wallet_id=\(try #require(secondRun.currentWalletId))")
            #expect(page["data"]?.arrayValue?.count == 1, "one purchase")
        }
    }

    /// Answers quotes 0.1 STRK short of the price: the rate moved between the quote and the
    /// payment, as it does for a real app.
    final class MovedRateTransport: HTTPTransport {
        let inner: any HTTPTransport
        init(_ inner: any HTTPTransport) { self.inner = inner }

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            var response = try await inner.send(request)
            guard request.url.path == "/v1/quote", var quote = try? JSONDecoder().decode([String: JSONValue].self, from: response.body),
                  let fri = quote["strk_amount_fri"]?.stringValue.flatMap({ UInt256($0) }),
                  let shaved = fri.subtracting(SandboxNodeTests.strk("0.1")) else { return response }
            quote["strk_amount_fri"] = .string(shaved.description)
            quote["strk_amount"] = .string(STRKAmount.format(shaved))
            response.body = try JSONEncoder().encode(quote)
            return response
        }
    }

    /// A payment the provider refuses as short (the rate rose between quote and payment) comes
    /// back: the app follows the provider's failed purchase until its refund, and says so; the
    /// vault is whole again.
    @Test func aShortPaymentIsRefundedAndTheAppSaysSo() async throws {
        try await ProviderTests.withProvider { @MainActor (h: ProviderTests.Harness) async throws in
            let app = try await Self.app(h, transport: MovedRateTransport(RouterTransport(client: h.client)), account: 2)
            try await app.starknet.depositToVault(amount: "10")
            try await app.chippi.createGaslessWallet(userPassword: "correct horse", authToken: try await h.token("user_short"), externalUserId: "user_short")
            try await app.chippi.fetchAvailableServices()
            let telcel = try #require(app.chippi.availableServices.first { $0.id == "telcel_100" })
            let outcome = await app.chippi.buyService(telcel, reference: "5512345678", starknet: app.starknet)
            guard case .failed(let message, let id) = outcome else { Issue.record("a short payment ended \(outcome)"); return }
            #expect(message.contains("refunded") && id != nil, "\(message)")
            try await app.starknet.checkBalance()
            #expect(app.starknet.vaultBalance == SandboxNodeTests.strk("10"), "the 4.9 STRK came back into the vault")
            #expect(await app.chippi.resumePendingPurchase(starknet: app.starknet) == .idle)
        }
    }

    /// Another purchase started while one is unfinished finishes the earlier one first (with
    /// its own payment), then makes its own: two payments, two purchases.
    @Test func anotherPurchaseFinishesTheUnfinishedOneFirst() async throws {
        try await ProviderTests.withProvider { @MainActor (h: ProviderTests.Harness) async throws in
            let (app, telcel) = try await Self.appLosingTheFirstPurchase(h, user: "user_two")
            guard case .failed = await app.chippi.buyService(telcel, reference: "5512345678", starknet: app.starknet) else { Issue.record("the first did not fail"); return }
            guard case .completed(let second) = await app.chippi.buyService(telcel, reference: "5587654321", starknet: app.starknet) else {
                Issue.record("the second did not complete"); return
            }
            #expect(second.reference == "5587654321")
            try await app.starknet.checkBalance()
            #expect(app.starknet.vaultBalance == SandboxNodeTests.strk("5"), "two withdrawals")
            let (_, page, _) = try await h.call(.get, "/v1/sku-transactions")
            #expect(Set(page["data"]?.arrayValue?.compactMap { $0["reference"]?.stringValue } ?? []) == ["5512345678", "5587654321"])
            #expect(await app.chippi.resumePendingPurchase(starknet: app.starknet) == .idle)
        }
    }

    /// The screens as a shipped app drives them: in user mode.
    @Test func theScreensViewModelsWalkTheSetupAndAPurchase() async throws {
        try await ProviderTests.withProvider { @MainActor (h: ProviderTests.Harness) async throws in
            let app = try await Self.app(h, user: "user_screens")
            let home = HomeViewModel(starknet: app.starknet, chippi: app.chippi)
            await home.load()
            #expect(home.nextStep == .depositToVault)
            try await app.starknet.depositToVault(amount: "5")
            #expect(home.nextStep == .createGaslessWallet && home.vaultText == "5 STRK")

            let creation = WalletCreationViewModel(chippi: app.chippi, externalUserId: "user_screens")
            creation.email = "ana@"
            #expect(creation.validationMessage == "Enter a valid e-mail address" && !creation.canContinue)
            creation.email = "ana@example.com"
            await creation.next()
            creation.password = "short"
            #expect(creation.validationMessage == "Use at least 8 characters")
            creation.password = "correct horse"
            creation.passwordAgain = "correct hose"
            #expect(creation.validationMessage == "The passwords do not match" && !creation.canContinue)
            creation.passwordAgain = "correct horse"
            await creation.next()
            #expect(creation.step == .confirm)
            await creation.next()
            #expect(creation.step == .done && creation.walletId != nil && creation.password.isEmpty)
            #expect(home.nextStep == .buyServices)
            // The seed's currentWallet, with the e-mail kept at the provider; a restart restores it.
            let wallet = try #require(app.chippi.currentWallet)
            #expect(wallet.walletId == creation.walletId && wallet.email == "ana@example.com" && wallet.externalUserId == "user_screens" && wallet.publicKey != nil)
            let (_, saved, _) = try await h.call(.get, "/v1/chipi-wallets/\(wallet.walletId)")
            #expect(saved["metadata"]?["email"] == "ana@example.com")
            let restarted = ChippiPayManager(api: app.chippi.api, store: app.store, keyRounds: 1_000)
            #expect(try await restarted.restoreWallet() && restarted.currentWallet?.email == "ana@example.com")

            let services = ServicesViewModel(chippi: app.chippi)
            await services.load()
            services.category = "phone_topup"
            services.searchText = "telcel"
            #expect(services.services.map(\.id) == ["telcel_50", "telcel_100", "telcel_200"])
            services.category = "bill"
            services.searchText = ""
            let cfe = try #require(services.services.first { $0.id == "cfe_electricity" })

            let bill = ServicePurchaseViewModel(sku: cfe, starknet: app.starknet, chippi: app.chippi)
            bill.referenceText = "123"
            #expect(bill.validationMessage == "Enter a 12-digit CFE service number, such as 012345678901")
            bill.referenceText = "012345678901"
            bill.amountText = "20"
            #expect(bill.validationMessage == "Enter an amount from 50 to 10000 MXN")
            bill.amountText = "200"
            await bill.refreshQuote()
            #expect(bill.strkNeededText == "10 STRK" && bill.gasFeeText == "Gas fee: FREE")
            #expect(bill.validationMessage == "Not enough STRK in the vault: 10 STRK needed, 5 available" && !bill.canConfirm)
            bill.amountText = "60"
            await bill.refreshQuote()
            #expect(bill.totalText == "Total: 3 STRK" && bill.canConfirm)
            await bill.confirm()
            #expect(bill.stepNumber == 7 && bill.resultLines?.first == "Purchase Successful!")
            #expect(bill.resultLines?.last == "Service delivered to: 012345678901")

            let history = PurchaseHistoryViewModel(api: app.chippi.api, walletId: try #require(creation.walletId))
            await history.reload()
            #expect(history.purchases.map(\.skuId) == ["cfe_electricity"] && !history.hasMore)
        }
    }

    /// Under 429s, 503s, dropped requests, lost answers, duplicated and delayed requests (a seeded
    /// 30 % of the provider's requests), purchases retried (automatically, then by resuming) never
    /// pay or buy twice: one withdrawal and one purchase per attempt that paid.
    @Test func faultsNeverBuyTwice() async throws {
        try await ProviderTests.withProvider { @MainActor (h: ProviderTests.Harness) async throws in
            let faulty = FaultInjectingTransport(RouterTransport(client: h.client), seed: 2026, percent: 30) { $0.url.path.hasPrefix("/v1/") }
            let app = try await Self.app(h, transport: faulty, retry: RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(1), maxDelay: .milliseconds(5)))
            let (starknet, chippi, store) = (app.starknet, app.chippi, app.store)
            try await starknet.depositToVault(amount: "50")
            var created = false
            for _ in 0..<10 where !created { created = (try? await chippi.createGaslessWallet(userPassword: "correct horse", authToken: try await h.token("user_faults"), externalUserId: "user_faults")) != nil }
            #expect(created)
            for _ in 0..<10 where chippi.availableServices.isEmpty { try? await chippi.fetchAvailableServices() }
            let telcel = try #require(chippi.availableServices.first { $0.id == "telcel_50" })
            var completed = 0
            for _ in 0..<6 {
                var outcome = await chippi.buyService(telcel, reference: "5512345678", starknet: starknet)
                for _ in 0..<10 {
                    guard case .failed = outcome, (try? await store.data(for: ChippiPayManager.pendingPurchaseItem)) != nil else { break }
                    outcome = await chippi.resumePendingPurchase(starknet: starknet)
                }
                if case .completed = outcome { completed += 1 }
                if case .pending(let id) = outcome, case .completed = try await chippi.pollTransactionStatus(transactionId: id) { completed += 1 }
            }
            try await starknet.checkBalance()
            let (_, page, _) = try await h.call(.get, "/v1/sku-transactions?limit=100")
            let purchases = page["data"]?.arrayValue ?? []
            let paid = (SandboxNodeTests.strk("50").subtracting(try #require(starknet.vaultBalance)))!
            // Every STRK that left the vault bought exactly one purchase, and no payment bought two.
            var expected = UInt256.zero
            for _ in purchases { expected = expected.adding(SandboxNodeTests.strk("2.5"))! }
            #expect(paid == expected)
            #expect(Set(purchases.compactMap { $0["vault_transaction_hash"]?.stringValue }).count == purchases.count)
            #expect(completed == purchases.count && completed >= 3, "completed \(completed) of \(purchases.count); faults \(faulty.faults)")
            #expect(faulty.totalFaults > 0)
        }
    }

    @Test func errorsSpeakTheSeedsWords() async throws {
        try await ProviderTests.withProvider { @MainActor (h: ProviderTests.Harness) async throws in
            let store: any SecureStore = InMemorySecureStore()
            let logs = CapturedLogs()
            let api = ChippiPayAPI(environment: .custom(URL(string: "http://127.0.0.1")!), credentials: .merchantKeys, store: store, transport: RouterTransport(client: h.client),
                                   retry: RetryPolicy(maxAttempts: 1), logger: logs.logger)
            await #expect(throws: ChippiPayError(kind: .credentials, message: "API credentials invalid", details: "no ChippiPay publishable key is configured")) {
                try await api.fetchSKUs()
            }
            try await api.configure(apiKey: "pk_test_provider", secretKey: "sk_test_wrong")
            let wrong = await #expect(throws: ChippiPayError.self) { try await api.fetchSKUs() }
            #expect(wrong?.message == "API credentials invalid" && wrong?.kind == .credentials && wrong?.isTransient == false)
            try await api.configure(apiKey: ProviderTests.keys.public, secretKey: ProviderTests.keys.secret)
            // A 404 names what is missing; only a path the provider does not serve is the service missing.
            let missing = await #expect(throws: ChippiPayError.self) { try await api.getSKUTransaction("chipi_tx_nope") }
            #expect(missing?.kind == .notFound && missing?.message == "No purchase chipi_tx_nope" && missing?.details == "Transaction not found")
            let product = await #expect(throws: ChippiPayError.self) { try await api.quote(skuId: "nope_50") }
            #expect(product?.kind == .notFound && product?.message == "No product nope_50")
            let wallet = await #expect(throws: ChippiPayError.self) { try await api.getWallet("wallet_nope") }
            #expect(wallet?.kind == .notFound && wallet?.message == "No wallet wallet_nope")
            let elsewhere = ChippiPayAPI(environment: .custom(URL(string: "http://127.0.0.1/not-chippi")!), credentials: .merchantKeys, store: store, transport: RouterTransport(client: h.client),
                                         retry: RetryPolicy(maxAttempts: 1))
            let absent = await #expect(throws: ChippiPayError.self) { try await elsewhere.fetchSKUs() }
            #expect(absent?.kind == .unavailable && absent?.message == "Service temporarily unavailable")
            // Failures are logged with the provider's details, never with a key.
            let lines = logs.lines.withLock { $0 }
            #expect(lines.contains { $0.contains("ChippiPay call failed") && $0.contains("Transaction not found") && $0.contains("/v1/sku-transactions/chipi_tx_nope") })
            #expect(!lines.contains { $0.contains(ProviderTests.keys.secret) || $0.contains("sk_test_wrong") })
            let refused = await #expect(throws: ChippiPayError.self) { try await api.quote(skuId: "cfe_electricity") }
            #expect(refused?.kind == .refused && refused?.message.hasPrefix("amount is required") == true)
        }
    }
}

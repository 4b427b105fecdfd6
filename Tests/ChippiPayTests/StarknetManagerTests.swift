import ChippiPay
import Foundation
import PurseKit
import PurseHTTP
import Testing
@testable import Starknet

/// The app's wallet and vault (StarknetManager, VaultActionViewModel) against the sandbox node.
@Suite("ChippiPay: the Starknet wallet and vault")
@MainActor
struct StarknetManagerTests {
    static func manager(_ h: SandboxNodeTests.Harness, store: any SecureStore = InMemorySecureStore()) -> StarknetManager {
        let configuration = StarknetConfiguration(rpcURL: h.provider.url, vaultAddress: h.vault)
        return StarknetManager(configuration: configuration, transport: h.transport, store: store,
                               poller: Poller(interval: .milliseconds(10), multiplier: 1, maxAttempts: 200))
    }

    @Test func theSandboxVaultIsTheConfiguredDefault() async throws {
        try await SandboxNodeTests.withNode { (h: SandboxNodeTests.Harness) async throws in
            #expect(h.vault == StarknetConfiguration.sandboxVaultAddress)
        }
    }

    @Test func connectingChecksTheAccountAndKeepsTheKeyInTheStore() async throws {
        try await SandboxNodeTests.withNode { (h: SandboxNodeTests.Harness) async throws in
            let store: any SecureStore = InMemorySecureStore()
            let manager = await Self.manager(h, store: store)
            let (address, key) = h.accounts[0]

            // Not an address, not a key, nobody there, someone else's key: refused, nothing stored.
            await #expect(throws: StarknetWalletError.invalidAddress("The wallet address")) {
                try await manager.connectWallet(address: "0xnope", privateKey: key.privateKey.description)
            }
            await #expect(throws: StarknetWalletError.invalidPrivateKey) {
                try await manager.connectWallet(address: address.description, privateKey: "0x0")
            }
            await #expect(throws: StarknetWalletError.noAccount(Felt(0x1234))) {
                try await manager.connectWallet(address: "0x1234", privateKey: key.privateKey.description)
            }
            await #expect(throws: StarknetWalletError.notAnAccount(ERC20.strkAddress)) {
                try await manager.connectWallet(address: ERC20.strkAddress.description, privateKey: key.privateKey.description)
            }
            await #expect(throws: StarknetWalletError.keyMismatch) {
                try await manager.connectWallet(address: address.description, privateKey: h.accounts[1].key.privateKey.description)
            }
            await MainActor.run {
                #expect(!manager.isConnected && !manager.isLoading)
                #expect(manager.errorMessage == "The private key does not belong to this account")
            }
            #expect(try await store.data(for: StarknetManager.storeKey) == nil)

            try await manager.connectWallet(address: address.description, privateKey: key.privateKey.description)
            await MainActor.run {
                #expect(manager.isConnected && manager.walletAddress == address && manager.errorMessage == nil)
                #expect(manager.walletBalance! > .zero && manager.vaultBalance == .zero)
            }
            let saved = try #require(try await store.data(for: StarknetManager.storeKey))
            #expect(String(decoding: saved, as: UTF8.self).contains(key.privateKey.description))

            // A new manager (the app started again) finds the wallet; disconnecting forgets it.
            let again = await Self.manager(h, store: store)
            #expect(try await again.restore())
            await MainActor.run { #expect(again.isConnected && again.walletAddress == address) }
            try await again.disconnect()
            #expect(try await store.data(for: StarknetManager.storeKey) == nil)
            #expect(try await Self.manager(h, store: store).restore() == false)
        }
    }

    @Test func depositThenWithdrawMovesTheBalances() async throws {
        try await SandboxNodeTests.withNode { (h: SandboxNodeTests.Harness) async throws in
            let manager = await Self.manager(h)
            let (address, key) = h.accounts[0]
            try await manager.connectWallet(address: address.description, privateKey: key.privateKey.description)
            let before = try #require(await manager.walletBalance)

            let deposit = try await manager.depositToVault(amount: "10")
            let receipt = try await h.provider.transactionReceipt(deposit)
            #expect(receipt.succeeded)
            let fee = try #require(UInt256(low: receipt.actualFee.amount, high: .zero))
            await MainActor.run {
                #expect(manager.lastTransactionHash == deposit)
                #expect(manager.vaultBalance == SandboxNodeTests.strk("10"))
                #expect(manager.walletBalance == before.subtracting(SandboxNodeTests.strk("10"))?.subtracting(fee))
            }

            // To another address: the vault pays the recipient.
            let recipient = h.accounts[1].address
            let recipientBefore = try await h.strk.balance(of: recipient)
            let withdrawal = try await manager.withdrawFromVault(amount: "2.5", toAddress: recipient.description)
            #expect(try await h.strk.balance(of: recipient) == recipientBefore.adding(SandboxNodeTests.strk("2.5")))
            await MainActor.run {
                #expect(manager.lastTransactionHash == withdrawal)
                #expect(manager.vaultBalance == SandboxNodeTests.strk("7.5"))
            }

            // More than the vault holds: refused before anything is sent (the nonce stays).
            let nonce = try await h.provider.nonce(of: address)
            await #expect(throws: StarknetWalletError.insufficientVaultBalance(available: SandboxNodeTests.strk("7.5"))) {
                try await manager.withdrawFromVault(amount: "8")
            }
            await #expect(throws: StarknetWalletError.invalidAmount("An amount has at most 18 decimals")) {
                try await manager.depositToVault(amount: "0.0000000000000000001")
            }
            #expect(try await h.provider.nonce(of: address) == nonce)
            await MainActor.run {
                #expect(manager.errorMessage == "An amount has at most 18 decimals" && !manager.isLoading)
                #expect(manager.lastTransactionHash == withdrawal)
            }
        }
    }

    @Test func theVaultActionFormValidatesThenShowsTheTransaction() async throws {
        try await SandboxNodeTests.withNode { (h: SandboxNodeTests.Harness) async throws in
            let manager = await Self.manager(h)
            let (address, key) = h.accounts[2]
            try await manager.connectWallet(address: address.description, privateKey: key.privateKey.description)
            let walletText = try #require(await manager.walletBalanceText)

            let deposit = await VaultActionViewModel(action: .deposit, manager: manager)
            await MainActor.run {
                #expect(!deposit.canSubmit && deposit.validationMessage == nil)
                deposit.amountText = "abc"
                #expect(deposit.validationMessage == "An amount is digits with at most one decimal point, such as 10 or 2.5")
                deposit.amountText = "0"
                #expect(deposit.validationMessage == "The amount must be more than 0")
                deposit.amountText = "100000000"
                #expect(deposit.validationMessage == "More than the wallet holds (\(walletText) STRK)")
                deposit.amountText = "3"
                #expect(deposit.validationMessage == nil && deposit.canSubmit)
            }
            await deposit.submit()
            let hash = try #require(await manager.lastTransactionHash)
            await MainActor.run { #expect(deposit.phase == .succeeded(transactionHash: hash)) }

            let withdraw = await VaultActionViewModel(action: .withdraw, manager: manager)
            await MainActor.run {
                withdraw.amountText = "1"
                withdraw.recipientText = "0xzz"
                #expect(withdraw.validationMessage == "The recipient is not a Starknet address" && !withdraw.canSubmit)
                withdraw.recipientText = ""
                withdraw.useMaximum()
                #expect(withdraw.amountText == "3" && withdraw.canSubmit)
            }
            await withdraw.submit()
            await MainActor.run {
                #expect(withdraw.phase == .succeeded(transactionHash: manager.lastTransactionHash!))
                #expect(manager.vaultBalance == .zero)
            }
        }
    }
}

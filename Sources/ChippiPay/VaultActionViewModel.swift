import Foundation
import Observation
import Starknet

/// The seed's VaultActionView: enter an amount (and, to withdraw, optionally a recipient), see
/// what is wrong with it before sending, follow the transaction, and end with its hash.
@MainActor
@Observable
public final class VaultActionViewModel {
    public enum Action: Sendable, Equatable {
        case deposit
        case withdraw
    }

    public enum Phase: Equatable, Sendable {
        case editing
        case submitting
        case succeeded(transactionHash: Felt)
        case failed(message: String, transactionHash: Felt?)
    }

    public let action: Action
    public var amountText = "" { didSet { if phase != .submitting { phase = .editing } } }
    /// Withdrawals only; empty means the wallet itself.
    public var recipientText = "" { didSet { if phase != .submitting { phase = .editing } } }
    public private(set) var phase: Phase = .editing

    @ObservationIgnored let manager: StarknetManager

    public init(action: Action, manager: StarknetManager) {
        self.action = action
        self.manager = manager
    }

    public var title: String { action == .deposit ? "Deposit STRK" : "Withdraw STRK" }

    /// What the user can spend for this action: the wallet for deposits, the vault for withdrawals.
    public var available: UInt256? { action == .deposit ? manager.walletBalance : manager.vaultBalance }
    public var availableText: String? { available.map { "\(STRKAmount.format($0)) STRK available" } }

    /// The amount in fri, when the text is a valid amount.
    public var amount: UInt256? {
        let text = amountText.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, let value = try? STRKAmount.parse(text), value > .zero else { return nil }
        return value
    }

    /// What is wrong with the form, in words; nil when it can be sent. An empty amount is not an
    /// error yet (the button is simply disabled).
    public var validationMessage: String? {
        let text = amountText.trimmingCharacters(in: .whitespaces)
        if text.isEmpty { return nil }
        let value: UInt256
        do {
            value = try STRKAmount.parse(text)
        } catch {
            return error.description
        }
        guard value > .zero else { return "The amount must be more than 0" }
        if let available, value > available {
            return action == .deposit ? "More than the wallet holds (\(STRKAmount.format(available)) STRK)"
                                      : "More than the vault holds (\(STRKAmount.format(available)) STRK)"
        }
        if action == .withdraw, recipient == nil { return "The recipient is not a Starknet address" }
        return nil
    }

    var recipient: Felt?? {
        let text = recipientText.trimmingCharacters(in: .whitespaces)
        if text.isEmpty { return .some(nil) }
        guard let felt = Felt(text), !felt.isZero else { return nil }
        return .some(felt)
    }

    public var canSubmit: Bool {
        manager.isConnected && amount != nil && validationMessage == nil && phase != .submitting
    }

    /// Sets the amount to everything available.
    public func useMaximum() {
        if let available { amountText = STRKAmount.format(available) }
    }

    /// Sends the deposit or withdrawal and waits for it; the phase tells the outcome.
    public func submit() async {
        guard canSubmit, let amount else { return }
        phase = .submitting
        do {
            let hash: Felt
            switch action {
            case .deposit: hash = try await manager.depositToVault(amount: amount)
            case .withdraw: hash = try await manager.withdrawFromVault(amount: amount, toAddress: recipient ?? nil)
            }
            phase = .succeeded(transactionHash: hash)
        } catch let StarknetWalletError.reverted(hash, _) {
            phase = .failed(message: manager.errorMessage ?? "The transaction was reverted", transactionHash: hash)
        } catch {
            phase = .failed(message: manager.errorMessage ?? StarknetManager.message(for: error), transactionHash: nil)
        }
    }
}

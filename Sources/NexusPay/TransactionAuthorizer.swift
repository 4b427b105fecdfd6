import PurseKit
import PurseHTTP

/// The checkout as a pure state machine: events in, actions out, no I/O.
///
/// It follows the seed's diagrams: options → biometric → sign → verify → top-up; biometric
/// unavailable → PIN ("Biometric unavailable"); cancelled or three failures → "Biometric failed"
/// with "Use PIN instead?"; verification refused → "Verification failed. Try again or use PIN"
/// with retry and switch; network errors → the PurseHTTP taxonomy with retry. One idempotency
/// key per order, reused by every retry of its top-up.
public struct TransactionAuthorizer: Sendable, Equatable {
    public static let maxBiometricAttempts = 3

    public enum Step: Sendable, Equatable {
        case idle
        case fetchingOptions
        case awaitingBiometric(attempt: Int)
        case signing
        case verifying
        case submitting(TopupAuthorization)
        /// Cancelled or failed three times: offer "Use PIN instead?".
        case biometricFailed
        /// The server refused the proof: offer retry or PIN.
        case verificationFailed(message: String)
        case enteringPin(message: String?)
        /// A network or server error at `during`; `retry` repeats that step.
        case failed(PurseError, during: Stage)
        /// The top-up was refused for a reason retrying will not fix (balance, product …).
        case refused(PurseError)
        /// Paid; the supplier has not confirmed delivery yet: the top-up is being followed.
        case awaitingDelivery(TopupReceipt)
        /// Paid and still unconfirmed after following it: it settles later (history shows it).
        case deliveryPending(TopupReceipt)
        /// The supplier could not deliver: the price is back in the wallet.
        case deliveryFailed(TopupReceipt, reason: String)
        case completed(TopupReceipt)
        case cancelled
    }

    public enum Stage: Sendable, Equatable { case options, verify, topup }

    public enum Event: Sendable, Equatable {
        case start(TopupOrder, biometricAvailable: Bool, idempotencyKey: String)
        /// The user chose to pay with the PIN (the seed's "User chose PIN").
        case startWithPin(TopupOrder, idempotencyKey: String)
        case optionsReceived(AuthenticationOptions)
        case optionsFailed(PurseError)
        case biometricFinished(BiometricResult)
        case assertionSigned(Assertion)
        case signingFailed(PurseError)
        case verified(token: String)
        case verificationRejected(message: String)
        case verifyFailed(PurseError)
        case topupSucceeded(TopupReceipt)
        case topupFailed(PurseError)
        /// Following a pending top-up ended: the transaction as it now stands.
        case deliveryChecked(WalletTransaction)
        /// Following a pending top-up gave up while it was still pending.
        case deliveryStillPending
        /// The user taps "Use PIN instead?".
        case usePin
        case pinEntered(String)
        case retryBiometric
        /// After a network error: repeat what failed.
        case retry
        case cancel
    }

    public enum Action: Sendable, Equatable {
        case fetchOptions(intent: ChallengeIntent)
        case promptBiometric(reason: String)
        case signAssertion(AuthenticationOptions, userVerified: Bool)
        case verify(Assertion)
        case submitTopup(TopupOrder, TopupAuthorization, idempotencyKey: String)
        /// Follow the top-up until it is completed or failed (``NexusClient/awaitDelivery(of:poller:)``).
        case awaitDelivery(transactionID: TransactionID)
    }

    /// The question the failure alert asks (the seed's wording).
    public static let usePinPrompt = "Use PIN instead?"

    public private(set) var step: Step = .idle
    /// Why the biometric path failed, when a device error (not the user) caused it.
    public private(set) var deviceError: PurseError?
    public private(set) var order: TopupOrder?
    public private(set) var idempotencyKey: String?
    private var options: AuthenticationOptions?
    private var pendingAuthorization: TopupAuthorization?
    private var biometricFailures = 0

    public init() {}

    /// What the user reads for the current step.
    public var message: String? {
        switch step {
        case .biometricFailed: "Biometric failed"
        case .verificationFailed: "Verification failed. Try again or use PIN"
        case .enteringPin(let message): message
        case .failed(let error, _), .refused(let error): error.message
        case .completed: "Topup successful"
        case .awaitingDelivery: "Confirming delivery…"
        case .deliveryPending: "Your top-up is being processed. Your history shows it once the network confirms."
        case .deliveryFailed(let receipt, let reason): "\(reason). ₦\(receipt.amount) is back in your wallet."
        default: nil
        }
    }

    /// What the alert offering the PIN asks, when it is offered.
    public var pinOffer: String? { offersPin ? Self.usePinPrompt : nil }

    /// Whether "Use PIN instead?" is offered.
    public var offersPin: Bool {
        switch step {
        case .biometricFailed, .verificationFailed, .failed(_, .options), .failed(_, .verify): true
        default: false
        }
    }

    public var isFinished: Bool {
        switch step {
        case .completed, .cancelled, .deliveryPending, .deliveryFailed: true
        default: false
        }
    }

    public mutating func handle(_ event: Event) -> [Action] {
        switch (step, event) {
        case (_, .cancel):
            guard !isFinished, !isSubmitting else { return [] }
            step = .cancelled
            return []

        case (.idle, .startWithPin(let order, let key)), (.cancelled, .startWithPin(let order, let key)), (.completed, .startWithPin(let order, let key)),
             (.refused, .startWithPin(let order, let key)), (.deliveryPending, .startWithPin(let order, let key)), (.deliveryFailed, .startWithPin(let order, let key)):
            self = TransactionAuthorizer()
            self.order = order
            idempotencyKey = key
            step = .enteringPin(message: nil)
            return []

        case (.idle, .start(let order, let available, let key)), (.cancelled, .start(let order, let available, let key)),
             (.completed, .start(let order, let available, let key)), (.refused, .start(let order, let available, let key)),
             (.deliveryPending, .start(let order, let available, let key)), (.deliveryFailed, .start(let order, let available, let key)):
            self = TransactionAuthorizer()
            self.order = order
            idempotencyKey = key
            guard available else {
                step = .enteringPin(message: "Biometric unavailable")
                return []
            }
            step = .fetchingOptions
            return [.fetchOptions(intent: .transaction)]

        case (.fetchingOptions, .optionsReceived(let options)):
            self.options = options
            step = .awaitingBiometric(attempt: 1)
            return [.promptBiometric(reason: promptReason)]
        case (.fetchingOptions, .optionsFailed(let error)):
            if error.status == 404 || error.domainCode == "no_credentials" {
                step = .enteringPin(message: "No biometric enrolled. Enter your PIN")
                return []
            }
            step = .failed(error, during: .options)
            return []

        case (.awaitingBiometric(let attempt), .biometricFinished(let result)):
            switch result {
            case .success:
                guard let options else { return [] }
                step = .signing
                return [.signAssertion(options, userVerified: true)]
            case .failed:
                biometricFailures = attempt
                if attempt >= Self.maxBiometricAttempts {
                    step = .biometricFailed
                    return []
                }
                step = .awaitingBiometric(attempt: attempt + 1)
                return [.promptBiometric(reason: promptReason)]
            case .cancelled:
                step = .biometricFailed
                return []
            case .unavailable:
                step = .enteringPin(message: "Biometric unavailable")
                return []
            }

        case (.signing, .assertionSigned(let assertion)):
            step = .verifying
            return [.verify(assertion)]
        case (.signing, .signingFailed(let error)):
            deviceError = error
            step = .biometricFailed
            return []

        case (.verifying, .verified(let token)):
            return submit(.verificationToken(token))
        case (.verifying, .verificationRejected(let message)):
            step = .verificationFailed(message: message)
            return []
        case (.verifying, .verifyFailed(let error)):
            step = .failed(error, during: .verify)
            return []

        case (.submitting, .topupSucceeded(let receipt)):
            switch receipt.status {
            case .pending:
                step = .awaitingDelivery(receipt)
                return [.awaitDelivery(transactionID: receipt.transactionId)]
            case .failed:
                step = .deliveryFailed(receipt, reason: "The top-up could not be delivered")
            case .completed:
                step = .completed(receipt)
            }
            return []
        case (.awaitingDelivery(var receipt), .deliveryChecked(let transaction)):
            receipt.status = transaction.status
            switch transaction.status {
            case .completed: step = .completed(receipt)
            case .failed: step = .deliveryFailed(receipt, reason: transaction.failureReason ?? "The top-up could not be delivered")
            case .pending: step = .deliveryPending(receipt)
            }
            return []
        case (.awaitingDelivery(let receipt), .deliveryStillPending):
            step = .deliveryPending(receipt)
            return []
        case (.submitting, .topupFailed(let error)):
            if error.isTransient {
                step = .failed(error, during: .topup)
                return []
            }
            switch error.domainCode {
            case "incorrect_pin":
                step = .enteringPin(message: error.message)
            case "token_expired", "token_used", "token_invalid":
                // The proof went stale: start the biometric again (or use the PIN).
                step = .verificationFailed(message: error.message)
            default:
                // Insufficient balance, PIN locked, bad product …: retrying the same request cannot help.
                step = .refused(error)
            }
            return []

        case (.biometricFailed, .usePin), (.verificationFailed, .usePin), (.failed(_, .options), .usePin), (.failed(_, .verify), .usePin):
            step = .enteringPin(message: nil)
            return []
        case (.enteringPin, .pinEntered(let pin)):
            guard pin.count == 4, pin.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                step = .enteringPin(message: "Enter your 4-digit PIN")
                return []
            }
            return submit(.pin(pin))

        case (.biometricFailed, .retryBiometric), (.verificationFailed, .retryBiometric), (.failed(_, .options), .retry), (.failed(_, .verify), .retry):
            biometricFailures = 0
            options = nil
            step = .fetchingOptions
            return [.fetchOptions(intent: .transaction)]
        case (.failed(_, .topup), .retry):
            guard let pendingAuthorization else { return [] }
            return submit(pendingAuthorization)

        default:
            return []
        }
    }

    private var isSubmitting: Bool {
        if case .submitting = step { return true }
        return false
    }

    private var promptReason: String {
        guard let order else { return "Confirm purchase" }
        return "Pay ₦\(order.amount) for \(order.productCode) to \(order.recipientPhone)"
    }

    private mutating func submit(_ authorization: TopupAuthorization) -> [Action] {
        guard let order, let idempotencyKey else { return [] }
        pendingAuthorization = authorization
        step = .submitting(authorization)
        return [.submitTopup(order, authorization, idempotencyKey: idempotencyKey)]
    }
}

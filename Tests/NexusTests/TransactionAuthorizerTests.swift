import Foundation
import HTTPTypes
import NexusPay
import PurseHTTP
import PurseKit
import Testing

/// Every branch of the seed's checkout diagrams, without I/O.
@Suite("Nexus: checkout state machine")
struct TransactionAuthorizerTests {
    typealias Machine = TransactionAuthorizer
    let order = TopupOrder(amount: 500, productCode: "AIRTIME_MTN", recipientPhone: "08012345678", supplierSlug: "mtn")
    let options = AuthenticationOptions(challenge: "abc", rpId: "localhost", allowCredentials: [], userVerification: "required", timeout: 60000)
    let assertion = Assertion(id: "c", rawId: "c", response: .init(clientDataJSON: "a", authenticatorData: "b", signature: "s", userHandle: nil))
    let receipt = TopupReceipt(transactionId: "tx_1", status: .completed, amount: 500, balance: 4500, timestamp: "2024-01-22T10:30:45Z")

    func started(available: Bool = true) -> Machine {
        var machine = Machine()
        _ = machine.handle(.start(order, biometricAvailable: available, idempotencyKey: "key-1"))
        return machine
    }

    func atBiometric() -> Machine {
        var machine = started()
        _ = machine.handle(.optionsReceived(options))
        return machine
    }

    func atVerifying() -> Machine {
        var machine = atBiometric()
        _ = machine.handle(.biometricFinished(.success))
        _ = machine.handle(.assertionSigned(assertion))
        return machine
    }

    @Test func happyPathIsOptionsBiometricSignVerifyTopup() {
        var machine = Machine()
        #expect(machine.handle(.start(order, biometricAvailable: true, idempotencyKey: "key-1")) == [.fetchOptions(intent: .transaction)])
        #expect(machine.step == .fetchingOptions)
        #expect(machine.handle(.optionsReceived(options)) == [.promptBiometric(reason: "Pay ₦500 for AIRTIME_MTN to 08012345678")])
        #expect(machine.handle(.biometricFinished(.success)) == [.signAssertion(options, userVerified: true)])
        #expect(machine.handle(.assertionSigned(assertion)) == [.verify(assertion)])
        #expect(machine.handle(.verified(token: "jwt")) == [.submitTopup(order, .verificationToken("jwt"), idempotencyKey: "key-1")])
        #expect(machine.handle(.topupSucceeded(receipt)) == [])
        #expect(machine.step == .completed(receipt))
        #expect(machine.message == "Topup successful")
        #expect(machine.isFinished)
    }

    @Test func biometricUnavailableGoesStraightToPin() {
        var machine = started(available: false)
        #expect(machine.step == .enteringPin(message: "Biometric unavailable"))
        #expect(machine.handle(.pinEntered("2580")) == [.submitTopup(order, .pin("2580"), idempotencyKey: "key-1")])
        _ = machine.handle(.topupSucceeded(receipt))
        #expect(machine.step == .completed(receipt))
    }

    @Test func biometricReportedUnavailableAtThePromptGoesToPin() {
        var machine = atBiometric()
        #expect(machine.handle(.biometricFinished(.unavailable)) == [])
        #expect(machine.step == .enteringPin(message: "Biometric unavailable"))
    }

    @Test func cancelOffersPin() {
        var machine = atBiometric()
        _ = machine.handle(.biometricFinished(.cancelled))
        #expect(machine.step == .biometricFailed)
        #expect(machine.message == "Biometric failed")
        #expect(machine.offersPin)
        _ = machine.handle(.usePin)
        #expect(machine.step == .enteringPin(message: nil))
    }

    @Test func threeFailuresOfferPinTwoDoNot() {
        var machine = atBiometric()
        #expect(machine.handle(.biometricFinished(.failed)) == [.promptBiometric(reason: "Pay ₦500 for AIRTIME_MTN to 08012345678")])
        #expect(machine.step == .awaitingBiometric(attempt: 2))
        #expect(machine.handle(.biometricFinished(.failed)).count == 1)
        #expect(machine.step == .awaitingBiometric(attempt: 3))
        #expect(machine.handle(.biometricFinished(.failed)) == [])
        #expect(machine.step == .biometricFailed)
        #expect(machine.offersPin)
    }

    @Test func failuresThenSuccessStillPaysByBiometric() {
        var machine = atBiometric()
        _ = machine.handle(.biometricFinished(.failed))
        _ = machine.handle(.biometricFinished(.failed))
        #expect(machine.handle(.biometricFinished(.success)) == [.signAssertion(options, userVerified: true)])
    }

    @Test func retryBiometricAfterFailureFetchesAFreshChallenge() {
        var machine = atBiometric()
        _ = machine.handle(.biometricFinished(.cancelled))
        #expect(machine.handle(.retryBiometric) == [.fetchOptions(intent: .transaction)])
        #expect(machine.handle(.optionsReceived(options)).count == 1)
        #expect(machine.step == .awaitingBiometric(attempt: 1))
    }

    @Test func signingFailureIsABiometricFailure() {
        var machine = atBiometric()
        _ = machine.handle(.biometricFinished(.success))
        _ = machine.handle(.signingFailed(.domain("not_enrolled", message: "no passkey")))
        #expect(machine.step == .biometricFailed)
    }

    @Test func verificationRejectedOffersRetryAndPin() {
        var machine = atVerifying()
        _ = machine.handle(.verificationRejected(message: "Signature verification failed"))
        #expect(machine.step == .verificationFailed(message: "Signature verification failed"))
        #expect(machine.message == "Verification failed. Try again or use PIN")
        #expect(machine.offersPin)
        var retry = machine
        #expect(retry.handle(.retryBiometric) == [.fetchOptions(intent: .transaction)])
        _ = machine.handle(.usePin)
        #expect(machine.step == .enteringPin(message: nil))
    }

    @Test func networkErrorWhileFetchingOptionsRetriesOrFallsBack() {
        var machine = started()
        _ = machine.handle(.optionsFailed(.offline))
        #expect(machine.step == .failed(.offline, during: .options))
        #expect(machine.offersPin)
        var retry = machine
        #expect(retry.handle(.retry) == [.fetchOptions(intent: .transaction)])
        _ = machine.handle(.usePin)
        #expect(machine.step == .enteringPin(message: nil))
    }

    @Test func noEnrolledCredentialGoesToPin() {
        var machine = started()
        _ = machine.handle(.optionsFailed(.domain("no_credentials", message: "none")))
        #expect(machine.step == .enteringPin(message: "No biometric enrolled. Enter your PIN"))
    }

    @Test func networkErrorWhileVerifyingRestartsTheCeremony() {
        var machine = atVerifying()
        _ = machine.handle(.verifyFailed(.timeout))
        #expect(machine.step == .failed(.timeout, during: .verify))
        #expect(machine.handle(.retry) == [.fetchOptions(intent: .transaction)])
    }

    @Test func networkErrorWhileSubmittingResendsTheSameRequestAndKey() {
        var machine = atVerifying()
        _ = machine.handle(.verified(token: "jwt"))
        _ = machine.handle(.topupFailed(.timeout))
        #expect(machine.step == .failed(.timeout, during: .topup))
        #expect(!machine.offersPin, "switching method after an ambiguous failure could pay twice")
        #expect(machine.handle(.retry) == [.submitTopup(order, .verificationToken("jwt"), idempotencyKey: "key-1")])
        _ = machine.handle(.topupFailed(.server(status: 503, message: "busy")))
        #expect(machine.handle(.retry) == [.submitTopup(order, .verificationToken("jwt"), idempotencyKey: "key-1")])
    }

    @Test func wrongPinAsksAgainWithTheServersMessage() {
        var machine = started(available: false)
        _ = machine.handle(.pinEntered("1111"))
        _ = machine.handle(.topupFailed(.domain("incorrect_pin", message: "Incorrect PIN. 4 attempts left.")))
        #expect(machine.step == .enteringPin(message: "Incorrect PIN. 4 attempts left."))
        #expect(machine.handle(.pinEntered("2580")) == [.submitTopup(order, .pin("2580"), idempotencyKey: "key-1")])
    }

    @Test func malformedPinIsNotSent() {
        var machine = started(available: false)
        #expect(machine.handle(.pinEntered("12")) == [])
        #expect(machine.step == .enteringPin(message: "Enter your 4-digit PIN"))
    }

    @Test func staleTokenSendsTheUserBackToVerification() {
        var machine = atVerifying()
        _ = machine.handle(.verified(token: "jwt"))
        _ = machine.handle(.topupFailed(.domain("token_expired", message: "Verification token expired. Verify again or use your PIN.")))
        #expect(machine.step == .verificationFailed(message: "Verification token expired. Verify again or use your PIN."))
        #expect(machine.offersPin)
    }

    @Test func refusalsThatRetryingCannotFixEndTheFlow() {
        for code in ["insufficient_balance", "pin_locked", "invalid_phone"] {
            var machine = started(available: false)
            _ = machine.handle(.pinEntered("2580"))
            let error = PurseError.domain(code, message: "refused: \(code)")
            _ = machine.handle(.topupFailed(error))
            #expect(machine.step == .refused(error))
            #expect(machine.message == "refused: \(code)")
            #expect(machine.handle(.retry) == [])
        }
    }

    @Test func cancelWorksUntilTheRequestIsInFlight() {
        var machine = atBiometric()
        _ = machine.handle(.cancel)
        #expect(machine.step == .cancelled)
        #expect(machine.handle(.biometricFinished(.success)) == [], "late events after cancel do nothing")
        var submitting = atVerifying()
        _ = submitting.handle(.verified(token: "jwt"))
        _ = submitting.handle(.cancel)
        #expect(submitting.step == .submitting(.verificationToken("jwt")), "a sent payment cannot be cancelled")
    }

    @Test func outOfOrderEventsAreIgnored() {
        var machine = Machine()
        #expect(machine.handle(.verified(token: "x")) == [])
        #expect(machine.handle(.pinEntered("2580")) == [])
        #expect(machine.step == .idle)
        var waiting = atBiometric()
        #expect(waiting.handle(.topupSucceeded(receipt)) == [])
        #expect(waiting.step == .awaitingBiometric(attempt: 1))
    }

    @Test func aNewOrderAfterCompletionStartsClean() {
        var machine = atVerifying()
        _ = machine.handle(.verified(token: "jwt"))
        _ = machine.handle(.topupSucceeded(receipt))
        #expect(machine.handle(.start(order, biometricAvailable: true, idempotencyKey: "key-2")) == [.fetchOptions(intent: .transaction)])
        #expect(machine.idempotencyKey == "key-2")
    }

    // MARK: Delivery and the user's choice of PIN

    @Test func aPendingTopupIsFollowedToItsVerdict() {
        var pending = receipt
        pending.status = .pending
        var machine = atVerifying()
        _ = machine.handle(.verified(token: "jwt"))
        #expect(machine.handle(.topupSucceeded(pending)) == [.awaitDelivery(transactionID: "tx_1")])
        #expect(machine.message == "Confirming delivery…" && !machine.isFinished)
        let delivered = WalletTransaction(transactionId: "tx_1", kind: .topup, productCode: "AIRTIME_MTN", recipientPhone: "08012345678",
                                          amount: 500, method: .biometric, status: .completed, timestamp: "t", failureReason: nil)
        _ = machine.handle(.deliveryChecked(delivered))
        #expect(machine.step == .completed(receipt))

        var failing = atVerifying()
        _ = failing.handle(.verified(token: "jwt"))
        _ = failing.handle(.topupSucceeded(pending))
        var refused = delivered
        refused.status = .failed
        refused.failureReason = "The network did not accept the top-up"
        _ = failing.handle(.deliveryChecked(refused))
        #expect(failing.message == "The network did not accept the top-up. ₦500 is back in your wallet.")
        #expect(failing.isFinished)

        var slow = atVerifying()
        _ = slow.handle(.verified(token: "jwt"))
        _ = slow.handle(.topupSucceeded(pending))
        _ = slow.handle(.deliveryStillPending)
        #expect(slow.step == .deliveryPending(pending) && slow.isFinished)
        #expect(slow.message?.contains("being processed") == true)
    }

    @Test func aTopupFailedAtOnceSaysSo() {
        var failed = receipt
        failed.status = .failed
        var machine = started(available: false)
        _ = machine.handle(.pinEntered("2580"))
        #expect(machine.handle(.topupSucceeded(failed)) == [])
        #expect(machine.message?.contains("back in your wallet") == true)
    }

    @Test func theUserMayChooseThePinFromTheStart() {
        var machine = Machine()
        #expect(machine.handle(.startWithPin(order, idempotencyKey: "key-9")) == [])
        #expect(machine.step == .enteringPin(message: nil))
        #expect(machine.handle(.pinEntered("2580")) == [.submitTopup(order, .pin("2580"), idempotencyKey: "key-9")])
    }

    @Test func theFailureAlertAsksUsePinInstead() {
        var machine = atBiometric()
        #expect(machine.pinOffer == nil)
        _ = machine.handle(.biometricFinished(.cancelled))
        #expect(machine.pinOffer == "Use PIN instead?")
    }
}

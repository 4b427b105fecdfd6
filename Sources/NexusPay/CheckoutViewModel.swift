import Foundation
import HTTPTypes
import Observation
import PurseKit
import PurseHTTP

/// Drives ``TransactionAuthorizer`` with real effects: the API, the biometric prompt, the
/// device authenticator. A SwiftUI checkout sheet binds to ``step``, ``message`` and the
/// `offersPin` flag and calls the intent methods.
@MainActor
@Observable
public final class CheckoutViewModel {
    public private(set) var machine = TransactionAuthorizer()
    public var step: TransactionAuthorizer.Step { machine.step }
    public var message: String? { machine.message }
    public var offersPin: Bool { machine.offersPin }
    /// "Use PIN instead?" when the PIN is offered.
    public var pinOffer: String? { machine.pinOffer }
    /// A device-side failure behind "Biometric failed" (no passkey on this device …).
    public var deviceError: PurseError? { machine.deviceError }

    @ObservationIgnored let client: NexusClient
    @ObservationIgnored let gate: any BiometricGate
    @ObservationIgnored let authenticator: DeviceAuthenticator
    @ObservationIgnored let makeKey: @Sendable () -> String
    @ObservationIgnored let deliveryPoller: Poller

    public init(
        client: NexusClient, gate: any BiometricGate, authenticator: DeviceAuthenticator,
        makeIdempotencyKey: @escaping @Sendable () -> String = IdempotencyKey.make,
        deliveryPoller: Poller = Poller(interval: .seconds(2), maxAttempts: 15)
    ) {
        self.deliveryPoller = deliveryPoller
        self.client = client
        self.gate = gate
        self.authenticator = authenticator
        self.makeKey = makeIdempotencyKey
    }

    /// Starts a purchase and runs until it needs the user or finishes.
    public func buy(_ order: TopupOrder) async {
        let available = await gate.availability().isAvailable
        await send(.start(order, biometricAvailable: available, idempotencyKey: makeKey()))
    }

    /// Starts a purchase on the PIN path, by the user's choice.
    public func buyWithPin(_ order: TopupOrder) async {
        await send(.startWithPin(order, idempotencyKey: makeKey()))
    }

    public func usePin() async { await send(.usePin) }
    public func submitPin(_ pin: String) async { await send(.pinEntered(pin)) }
    public func retryBiometric() async { await send(.retryBiometric) }
    public func retry() async { await send(.retry) }
    public func cancel() async { await send(.cancel) }

    /// Feeds an event and performs the resulting actions until the machine waits for the user.
    func send(_ event: TransactionAuthorizer.Event) async {
        var pending = machine.handle(event)
        while !pending.isEmpty {
            let action = pending.removeFirst()
            let next = await perform(action)
            pending += machine.handle(next)
        }
    }

    private func perform(_ action: TransactionAuthorizer.Action) async -> TransactionAuthorizer.Event {
        switch action {
        case .fetchOptions(let intent):
            do { return .optionsReceived(try await client.authenticationOptions(intent: intent)) } catch { return .optionsFailed(Self.purse(error)) }
        case .promptBiometric(let reason):
            return .biometricFinished(await gate.authenticate(reason: reason))
        case .signAssertion(let options, let userVerified):
            do { return .assertionSigned(try await authenticator.makeAssertion(for: options, userVerified: userVerified)) } catch { return .signingFailed(Self.purse(error)) }
        case .verify(let assertion):
            do {
                return .verified(token: try await client.verify(assertion).verificationToken)
            } catch let error as PurseError where error.domainCode == "verification_failed" {
                return .verificationRejected(message: error.message)
            } catch {
                return .verifyFailed(Self.purse(error))
            }
        case .submitTopup(let order, let authorization, let key):
            do { return .topupSucceeded(try await client.topup(order, authorization: authorization, idempotencyKey: key)) } catch { return .topupFailed(Self.purse(error)) }
        case .awaitDelivery(let id):
            do { return .deliveryChecked(try await client.awaitDelivery(of: id, poller: deliveryPoller)) } catch { return .deliveryStillPending }
        }
    }

    static func purse(_ error: any Error) -> PurseError {
        (error as? PurseError) ?? .invalidResponse(String(describing: error))
    }
}

import Crypto
import CryptoExtras
import Foundation
import PurseFormats
import PurseKit
import PurseHTTP

/// The app's soft lock: the device's biometric, or a local PIN — and never the network.
///
/// It has no transport at all; the PIN's salted PBKDF2 hash lives in the ``SecureStore``.
/// A successful unlock sets the session flag so the app does not ask again until ``logout()``.
public actor SoftLock {
    public enum Outcome: Sendable, Equatable {
        case unlocked
        /// Biometrics are unavailable, cancelled or failed: show the PIN screen.
        case needsPin(reason: String)
        /// No PIN is set and biometrics are not available: the app must set a PIN first.
        case needsPinSetup
        case wrongPin(attemptsLeft: Int)
        /// Too many wrong PINs: the user must sign in again.
        case lockedOut
    }

    let gate: any BiometricGate
    let store: any SecureStore
    let maxPinAttempts: Int
    let iterations: Int
    private(set) var isUnlocked = false
    private var failedPins = 0

    static let pinTag = "nexus.softlock.pin"

    public init(gate: any BiometricGate, store: any SecureStore, maxPinAttempts: Int = 5, iterations: Int = 100_000) {
        self.gate = gate
        self.store = store
        self.maxPinAttempts = maxPinAttempts
        self.iterations = iterations
    }

    public var unlocked: Bool { isUnlocked }

    public var hasPin: Bool {
        get async { (try? await store.data(for: Self.pinTag)) != nil }
    }

    /// Asks for the biometric when available; otherwise says the PIN is needed.
    public func unlock(reason: String = "Unlock Nexus Data") async -> Outcome {
        if isUnlocked { return .unlocked }
        guard await gate.availability().isAvailable else {
            return await hasPin ? .needsPin(reason: "Biometric unavailable") : .needsPinSetup
        }
        switch await gate.authenticate(reason: reason) {
        case .success:
            isUnlocked = true
            failedPins = 0
            return .unlocked
        case .cancelled:
            return await hasPin ? .needsPin(reason: "Biometric cancelled") : .needsPinSetup
        case .failed:
            return await hasPin ? .needsPin(reason: "Biometric failed") : .needsPinSetup
        case .unavailable:
            return await hasPin ? .needsPin(reason: "Biometric unavailable") : .needsPinSetup
        }
    }

    /// Checks the local PIN.
    public func unlock(pin: String) async throws -> Outcome {
        if isUnlocked { return .unlocked }
        guard failedPins < maxPinAttempts else { return .lockedOut }
        guard let stored = try await store.data(for: Self.pinTag), stored.count == 48 else { return .needsPinSetup }
        let salt = stored.prefix(16), expected = stored.suffix(32)
        let derived = try Self.derivedKey(pin: pin, salt: salt, iterations: iterations, length: 32)
        if ConstantTime.equal(derived, Data(expected)) {
            isUnlocked = true
            failedPins = 0
            return .unlocked
        }
        failedPins += 1
        return failedPins >= maxPinAttempts ? .lockedOut : .wrongPin(attemptsLeft: maxPinAttempts - failedPins)
    }

    /// Sets the local PIN (4 to 8 digits).
    public func setPin(_ pin: String) async throws {
        guard (4...8).contains(pin.count), pin.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw PurseError.domain("invalid_pin", message: "The PIN must be 4 to 8 digits")
        }
        let salt = Data(RandomBytes.make(16))
        let derived = try Self.derivedKey(pin: pin, salt: salt, iterations: iterations, length: 32)
        try await store.set(salt + derived, for: Self.pinTag)
        failedPins = 0
    }

    /// Ends the session: the next launch asks again.
    public func logout() {
        isUnlocked = false
    }

    /// PBKDF2-HMAC-SHA256 (RFC 8018 §5.2) of the PIN's UTF-8 bytes, through swift-crypto.
    /// The PIN never leaves the device and the hash never leaves the secure store, so the
    /// iteration count is the caller's (100,000 by default; tests use fewer) rather than
    /// swift-crypto's 210,000 floor for password storage.
    static func derivedKey(pin: String, salt: some DataProtocol, iterations: Int, length: Int) throws -> Data {
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: Data(pin.utf8), salt: salt, using: .sha256, outputByteCount: length, unsafeUncheckedRounds: iterations
        )
        return key.withUnsafeBytes { Data($0) }
    }
}

/// Whether the device can do biometrics now.
public enum BiometricAvailability: Sendable, Equatable {
    case available(BiometryKind)
    /// Not enrolled, no hardware, or locked out; the reason is for logs, not users.
    case unavailable(reason: String)

    public var isAvailable: Bool {
        if case .available = self { return true }
        return false
    }
}

public enum BiometryKind: String, Sendable, Equatable {
    case faceID, touchID, opticID, fingerprint, software
}

/// How a biometric prompt ended. An outcome, not an error: cancelling is a normal answer.
public enum BiometricResult: Sendable, Equatable {
    case success
    /// The user dismissed the prompt.
    case cancelled
    /// The biometric did not match (the user may try again).
    case failed
    /// Biometrics cannot be used (not enrolled, no hardware, locked out).
    case unavailable
}

/// The device's biometric prompt: LocalAuthentication on Apple platforms, a software gate elsewhere.
public protocol BiometricGate: Sendable {
    func availability() async -> BiometricAvailability
    /// Shows the prompt with `reason` and waits for the user.
    func authenticate(reason: String) async -> BiometricResult
}

/// A biometric gate in software, for Linux, the CLI and tests.
///
/// The CLI answers it at a y/n prompt (`--yes` for scripts); tests script its answers.
public struct SoftwareBiometricGate: BiometricGate {
    let isAvailable: Bool
    let answer: @Sendable (String) async -> BiometricResult

    /// - Parameters:
    ///   - available: What ``availability()`` reports.
    ///   - answer: Called with the prompt's reason for every ``authenticate(reason:)``.
    public init(available: Bool = true, answer: @escaping @Sendable (String) async -> BiometricResult) {
        self.isAvailable = available
        self.answer = answer
    }

    /// A gate that answers with `results` in order, then keeps answering with the last one.
    public static func scripted(_ results: [BiometricResult], available: Bool = true) -> SoftwareBiometricGate {
        let script = Script(results)
        return SoftwareBiometricGate(available: available) { _ in await script.next() }
    }

    public func availability() async -> BiometricAvailability {
        isAvailable ? .available(.software) : .unavailable(reason: "no biometric sensor")
    }

    public func authenticate(reason: String) async -> BiometricResult {
        guard isAvailable else { return .unavailable }
        return await answer(reason)
    }

    actor Script {
        var results: [BiometricResult]
        var index = 0
        init(_ results: [BiometricResult]) { self.results = results.isEmpty ? [.success] : results }
        func next() -> BiometricResult {
            defer { index = min(index + 1, results.count - 1) }
            return results[index]
        }
    }
}

#if canImport(LocalAuthentication)
import LocalAuthentication

/// Face ID / Touch ID / Optic ID through LocalAuthentication.
public struct LocalAuthenticationGate: BiometricGate {
    public init() {}

    public func availability() async -> BiometricAvailability {
        let context = LAContext()
        var error: NSError?
        guard context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error) else {
            return .unavailable(reason: error?.localizedDescription ?? "biometrics unavailable")
        }
        switch context.biometryType {
        case .faceID: return .available(.faceID)
        case .touchID: return .available(.touchID)
        default: return .available(.opticID)
        }
    }

    public func authenticate(reason: String) async -> BiometricResult {
        let context = LAContext()
        do {
            let ok = try await context.evaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, localizedReason: reason)
            return ok ? .success : .failed
        } catch let error as LAError {
            switch error.code {
            case .userCancel, .appCancel, .systemCancel, .userFallback: return .cancelled
            case .authenticationFailed: return .failed
            default: return .unavailable
            }
        } catch {
            return .failed
        }
    }
}
#endif

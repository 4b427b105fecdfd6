import PurseKit
import PurseHTTP

/// Enrols this device: registration options → biometric prompt → a new credential → stored.
public struct Enrollment: Sendable {
    let client: NexusClient
    let gate: any BiometricGate
    let authenticator: DeviceAuthenticator

    public init(client: NexusClient, gate: any BiometricGate, authenticator: DeviceAuthenticator) {
        self.client = client
        self.gate = gate
        self.authenticator = authenticator
    }

    /// - Parameter name: A label for the credential ("iPhone 15").
    /// - Returns: The enrolled credential as the server stored it.
    /// - Throws: ``PurseError`` `domain("biometric_failed")` when the prompt did not succeed,
    ///   `domain("registration_failed")` when the server refused, network errors as they are.
    public func enroll(name: String? = nil) async throws -> EnrolledCredential {
        let options = try await client.registrationOptions()
        guard await gate.authenticate(reason: "Enrol biometrics for Nexus Data purchases") == .success else {
            throw PurseError.domain("biometric_failed", message: "Biometric failed")
        }
        let registration = try await authenticator.makeRegistration(for: options, userVerified: true, name: name)
        return try await client.register(registration)
    }
}

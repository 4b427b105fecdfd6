import Foundation
import PurseKit
import PurseHTTP
import Synchronization

/// App Attest for Cuti-E: `performAttestation()` has this device's key attested (by Apple on a
/// device, by the development CA in software elsewhere) and registered with the backend;
/// `generateAssertion(clientData:)` signs data with it. Once attested, the SDK sends an
/// assertion with every request on its own.
///
/// The attested key's id is kept in the ``SecureStore``. When attesting fails or is unsupported,
/// requests go on with device-token auth — which the backend accepts unless the app requires
/// App Attest (then calls fail with `serverError(401, …)`, the service's `app_attest_required`).
public final class CutiEAppAttest: Sendable {
    /// The App Attest of ``CutiE/shared`` (the Cuti-E SDK's singleton).
    public static var shared: CutiEAppAttest { CutiE.shared.appAttest }

    /// Nil when the SDK was configured without `useAppAttest` (or not at all).
    let client: CutiEAPIClient?

    init(client: CutiEAPIClient?) {
        self.client = client
        if let client { Task { await client.loadAttestedKey() } }
    }

    /// Whether App Attest was configured and this device supports it.
    public var isSupported: Bool { client?.attestSupported ?? false }

    /// Whether this device has an attested key (as last read from the ``SecureStore``).
    public var isAttested: Bool { client?.attestedFlag.withLock { $0 } ?? false }

    /// Attests a new key for this device and registers it; returns its key id.
    /// - Throws: ``AppAttestError`` for the attestation itself, ``CutiEError`` for the service's answers.
    @discardableResult
    public func performAttestation() async throws -> String {
        guard let client else { throw AppAttestError.notSupported }
        do {
            return try await client.performAttestation()
        } catch let error as AppAttestError {
            throw error
        } catch {
            throw CutiEError.from(error)
        }
    }

    /// An assertion over `clientData` (base64 CBOR `{signature, authenticatorData}`), as sent in
    /// `X-App-Assertion`.
    /// - Throws: ``AppAttestError``: `notSupported`, `notAttested`, `assertionFailed`.
    public func generateAssertion(clientData: Data) async throws -> String {
        guard let client else { throw AppAttestError.notSupported }
        return try await client.assertion(clientData: clientData)
    }

    /// The Cuti-E SDK's name for ``generateAssertion(clientData:)``.
    public func generateAssertion(for clientData: Data) async throws -> String {
        try await generateAssertion(clientData: clientData)
    }

    /// Forgets this device's attested key: the next request attests a new one.
    public func reset() {
        guard let client else { return }
        Task { await client.forgetAttestedKey() }
    }

    /// The platform's App Attest: DeviceCheck where it exists, otherwise the software attester
    /// with the development CA of the server at `apiURL`.
    static func defaultService(apiURL: URL, appID: String, transport: any HTTPTransport, store: any SecureStore) -> any AppAttestService {
        #if canImport(DeviceCheck)
        if #available(iOS 14.0, macOS 11.0, *), DeviceCheckAppAttestService().isSupported { return DeviceCheckAppAttestService() }
        #endif
        return SoftwareAppAttestService(sandboxURL: apiURL, transport: transport, store: store, cutieAppID: appID)
    }
}

/// Why App Attest failed on the device (the Cuti-E SDK's `AppAttestError`).
public enum AppAttestError: LocalizedError, Sendable {
    /// No App Attest here (a simulator, an old device, or the SDK configured without it).
    case notSupported
    /// No attested key yet: attest first.
    case notAttested
    case hashingFailed
    case keyGenerationFailed
    case attestationFailed(any Error)
    case assertionFailed(any Error)
    /// The service or the development CA refused: its words.
    case serverError(String)

    public var errorDescription: String? {
        switch self {
        case .notSupported: "App Attest is not available on this device"
        case .notAttested: "This device has no attested key yet"
        case .hashingFailed: "The client data could not be hashed"
        case .keyGenerationFailed: "No App Attest key could be made"
        case .attestationFailed(let error): "Attesting the key failed: \(error)"
        case .assertionFailed(let error): "Making an assertion failed: \(error)"
        case .serverError(let message): "App Attest was refused: \(message)"
        }
    }
}

/// A reason for an ``AppAttestError`` that has no error of its own.
public struct AppAttestFailure: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Whether the service holds an attested key for this device (`GET /v1/device/attest/status`).
public struct AttestationStatus: Codable, Sendable, Hashable {
    public let attested: Bool
    public let attestation: AttestationInfo?
}

/// The attested key the service holds: its id, Apple's environment, the assertion counter, and
/// when it was attested and last used (Unix milliseconds).
public struct AttestationInfo: Codable, Sendable, Hashable {
    public let keyId: String
    public let environment: String
    public let signCount: Int
    public let createdAt: Int64
    public let lastAssertionAt: Int64?

    enum CodingKeys: String, CodingKey {
        case keyId = "key_id", environment, signCount = "sign_count", createdAt = "created_at", lastAssertionAt = "last_assertion_at"
    }
}

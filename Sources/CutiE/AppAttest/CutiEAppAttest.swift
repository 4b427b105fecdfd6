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
/// App Attest (then calls fail with ``CutiEError/appAttestRequired(_:)``).
public final class CutiEAppAttest: Sendable {
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
    @discardableResult
    public func performAttestation() async throws(CutiEError) -> String {
        guard let client else { throw .appAttestUnsupported }
        do {
            return try await client.performAttestation()
        } catch {
            throw CutiEError.from(error)
        }
    }

    /// An assertion over `clientData` (base64 CBOR `{signature, authenticatorData}`), as sent in
    /// `X-App-Assertion`.
    public func generateAssertion(clientData: Data) async throws(CutiEError) -> String {
        guard let client else { throw .appAttestUnsupported }
        do {
            return try await client.assertion(clientData: clientData)
        } catch {
            throw CutiEError.from(error)
        }
    }

    /// The Cuti-E SDK's name for ``generateAssertion(clientData:)``.
    public func generateAssertion(for clientData: Data) async throws(CutiEError) -> String {
        try await generateAssertion(clientData: clientData)
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

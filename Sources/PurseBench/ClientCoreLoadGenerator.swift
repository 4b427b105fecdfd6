import Crypto
import Foundation
import HTTPTypes
import NexusPay
import PurseKit
import PurseHTTP

/// A benchmark user: account, enrolled device and funded wallet, made through the real client
/// core (untimed), which also drives the load with `--client core` — the load generator that
/// does what a phone does, request by request.
struct ClientCoreLoadGenerator: LoadGenerator {
    let api: APIClient
    let nexus: NexusClient
    let authenticator: DeviceAuthenticator
    let connection: BenchConnection
    let sessionToken: String
    let key: P256.Signing.PrivateKey

    static func make(base: URL, index: Int) async throws -> ClientCoreLoadGenerator {
        let transport = try await BenchConnection.connect(host: base.host ?? "127.0.0.1", port: base.port ?? 80)
        let api = APIClient(session: ClientSession(baseURL: base), transport: transport, retry: .none)
        struct Auth: Decodable { var token: String }
        let auth: Auth = try await api.send(
            .post, "/auth/register", body: ["email": "bench-\(index)-\(UUID().uuidString.prefix(8))@example.com", "password": "bench password"],
            authenticated: false
        )
        try await api.session.setToken(auth.token)
        let key = P256.Signing.PrivateKey()
        let authenticator = DeviceAuthenticator(store: InMemorySecureStore(), origin: origin(of: base)) { _, _ in SoftwareDeviceKey(privateKey: key) }
        let nexus = NexusClient(api: api)
        _ = try await Enrollment(client: nexus, gate: SoftwareBiometricGate.scripted([.success]), authenticator: authenticator).enroll()
        _ = try await nexus.fund(amount: 10_000_000)
        return ClientCoreLoadGenerator(api: api, nexus: nexus, authenticator: authenticator, connection: transport, sessionToken: auth.token, key: key)
    }

    static func origin(of base: URL) -> String {
        var origin = "\(base.scheme ?? "http")://\(base.host ?? "127.0.0.1")"
        if let port = base.port { origin += ":\(port)" }
        return origin
    }

    /// The same user and device driven by the lean load generator on a connection of its own.
    func lean(base: URL) async throws -> LeanLoadGenerator {
        guard let credentialID = try await authenticator.credentialID() else { throw BenchmarkError("bench user is not enrolled") }
        // The relying party's id, from one options request (its challenge is left to expire).
        let rpID = try await nexus.authenticationOptions().rpId
        await connection.close()
        let host = base.host ?? "127.0.0.1", port = base.port ?? 80
        return try LeanLoadGenerator(
            connection: try await RawHTTPConnection.connect(host: host, port: port), host: "\(host):\(port)", sessionToken: sessionToken,
            signer: AssertionSigner(key: key, credentialID: credentialID, origin: Self.origin(of: base), rpID: rpID, signCount: 0),
            order: NexusBenchmark.order
        )
    }

    func health() async throws {
        _ = try await api.sendRaw(.get, "/health", authenticated: false)
    }

    func stepUp() async throws -> String {
        let options = try await nexus.authenticationOptions()
        let assertion = try await authenticator.makeAssertion(for: options, userVerified: true)
        return try await nexus.verify(assertion).verificationToken
    }

    func topup(token: String) async throws {
        _ = try await nexus.topup(NexusBenchmark.order, authorization: .verificationToken(token), idempotencyKey: IdempotencyKey.make())
    }

    func close() async { await connection.close() }
}

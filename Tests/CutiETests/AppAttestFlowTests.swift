@testable import CutiE
@testable import CutiEService
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import PurseDatabase
import PurseFormats
import PurseKit
import PurseHTTP
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// App Attest end to end: the SDK's software attester gets its key certified by the sandbox's
/// development CA, the service verifies the attestation as it does Apple's, and assertions ride
/// on every request with a counter that only grows.
@Suite("Cuti-E: App Attest flow")
struct AppAttestFlowTests {
    /// An SDK instance with App Attest on, using the software attester against the sandbox.
    func attestedDevice(_ h: CutiEHarness, app: String = "app_sandbox") -> (cutie: CutiE, store: InMemorySecureStore, service: SoftwareAppAttestService) {
        let transport = RouterTransport(client: h.client)
        let store = InMemorySecureStore()
        let service = SoftwareAppAttestService(sandboxURL: URL(string: "http://localhost")!, transport: transport, store: store, cutieAppID: app)
        let cutie = CutiE()
        let clock = h.server.clock
        cutie.configure(appId: app, apiURL: URL(string: "http://localhost")!, transport: transport, store: store, preferences: InMemoryPreferences(),
                        retry: RetryPolicy(maxAttempts: 1), useAppAttest: true, appAttestService: service, now: { clock.now })
        return (cutie, store, service)
    }

    func attestedKey(_ h: CutiEHarness, device: String) async throws -> (keyID: String, counter: Int64)? {
        try await h.environment.database.read { db in
            // By the id the device sends: the identity's own id is another.
            guard let row = try await db.raw("""
                SELECT k.key_id, k.sign_count FROM cutie_attested_keys k JOIN cutie_devices d ON d.app_id = k.app_id AND d.device_id = k.device_id
                WHERE d.client_device_id = \(bind: device)
                """).first() else { return nil }
            return (try row.decode(column: "key_id", as: String.self), try row.decode(column: "sign_count", as: Int64.self))
        }
    }

    @Test("the SDK attests on first use and every request carries an assertion whose counter grows")
    func journey() async throws {
        try await CutiEHarness.withServer { h in
            let (cutie, _, _) = attestedDevice(h)
            let id = try await cutie.createConversation(category: .bug, message: "The app crashes on launch")
            let deviceID = try #require(cutie.deviceID)
            let first = try #require(try await attestedKey(h, device: deviceID))
            #expect(first.counter == 1)
            _ = try await cutie.getConversations()
            _ = try await cutie.sendMessage("Still crashing", to: id)
            #expect(try await attestedKey(h, device: deviceID)?.counter == 3)
            #expect(cutie.appAttest.isAttested)
            // An explicit check of one assertion.
            let marked = try await h.client.execute(uri: "/v1/device/attest/assert", method: .post)
            #expect(marked.status == .unauthorized)
        }
    }

    @Test("an app requiring App Attest refuses unattested devices with a clear error and accepts attested ones")
    func required() async throws {
        try await CutiEHarness.withServer { h in
            try await h.environment.database.transaction { db in
                _ = try await CutiEApp.updateAttest("app_sandbox", teamID: nil, requireAppAttest: true, attestEnvironment: nil, in: db)
            }
            let plain = h.device()
            await #expect {
                _ = try await plain.cutie.createConversation(category: .bug, message: "hello")
            } throws: { error in
                guard case .serverError(401, let message) = error as? CutiEError else { return false }
                return message.contains("attest")
            }
            let (cutie, _, _) = attestedDevice(h)
            _ = try await cutie.createConversation(category: .bug, message: "hello")
            #expect(try await cutie.getConversations().count == 1)
        }
    }

    @Test("after reset() the device attests a new key on its next request and goes on, on an app that requires App Attest")
    func resetAttestsAgain() async throws {
        try await CutiEHarness.withServer { h in
            try await h.environment.database.transaction { db in
                _ = try await CutiEApp.updateAttest("app_sandbox", teamID: nil, requireAppAttest: true, attestEnvironment: nil, in: db)
            }
            let (cutie, _, _) = attestedDevice(h)
            _ = try await cutie.createConversation(category: .bug, message: "before")
            let device = try #require(cutie.deviceID)
            let first = try #require(try await attestedKey(h, device: device))
            cutie.appAttest.reset()
            for _ in 0..<100 where cutie.appAttest.isAttested { try await Task.sleep(for: .milliseconds(10)) }
            #expect(!cutie.appAttest.isAttested)
            #expect(try await cutie.getConversations().count == 1, "the next request attested again and was let in")
            #expect(cutie.appAttest.isAttested)
            let second = try #require(try await attestedKey(h, device: device))
            #expect(second.keyID != first.keyID)
        }
    }

    struct Unsupported: AppAttestService {
        var isSupported: Bool { false }
        func generateKey() async throws -> String { throw AppAttestError.notSupported }
        func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data { throw AppAttestError.notSupported }
        func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data { throw AppAttestError.notSupported }
    }

    /// Supported, but Apple's service fails (as `DCError.serverUnavailable` does).
    struct Failing: AppAttestService {
        var isSupported: Bool { true }
        func generateKey() async throws -> String { Data(SHA256.hash(data: Data("k".utf8))).base64EncodedString() }
        func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data { throw URLError(.timedOut) }
        func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data { throw URLError(.timedOut) }
    }

    @Test("an unsupported or failed attestation falls back to device-token auth when the app allows it, not when it requires App Attest")
    func fallback() async throws {
        try await CutiEHarness.withServer { h in
            for service in [Unsupported() as any AppAttestService, Failing()] {
                let cutie = CutiE()
                let clock = h.server.clock
                cutie.configure(appId: "app_sandbox", apiURL: URL(string: "http://localhost")!, transport: RouterTransport(client: h.client),
                                store: InMemorySecureStore(), preferences: InMemoryPreferences(), retry: RetryPolicy(maxAttempts: 1),
                                useAppAttest: true, appAttestService: service, now: { clock.now })
                _ = try await cutie.createConversation(category: .question, message: "Works without App Attest?")
                #expect(try await cutie.getConversations().count == 1)
                #expect(!cutie.appAttest.isAttested)
                await #expect(throws: AppAttestError.self) { try await cutie.appAttest.performAttestation() }
            }
            try await h.environment.database.transaction { db in
                _ = try await CutiEApp.updateAttest("app_sandbox", teamID: nil, requireAppAttest: true, attestEnvironment: nil, in: db)
            }
            let cutie = CutiE()
            cutie.configure(appId: "app_sandbox", apiURL: URL(string: "http://localhost")!, transport: RouterTransport(client: h.client),
                            store: InMemorySecureStore(), preferences: InMemoryPreferences(), retry: RetryPolicy(maxAttempts: 1),
                            useAppAttest: true, appAttestService: Unsupported())
            await #expect {
                _ = try await cutie.getConversations()
            } throws: { error in
                if case .serverError(401, let message) = error as? CutiEError { return message.contains("App Attest") }
                return false
            }
        }
    }

    @Test("a replayed assertion, a reordered one and 100 racing copies: each counter is accepted once")
    func replays() async throws {
        try await CutiEHarness.withServer { h in
            let (cutie, store, service) = attestedDevice(h)
            _ = try await cutie.getConversations()
            let deviceID = try #require(cutie.deviceID)
            let keyID = try #require(try await attestedKey(h, device: deviceID)).keyID
            let credentials = try #require(await store.data(for: CutiEAPIClient.credentialsKey))
            let stored = try JSONDecoder().decode(CutiEAPIClient.Credentials.self, from: credentials)
            let device = (id: deviceID, token: stored.device_token, secret: stored.device_secret)

            // One signed request with its assertion, sent 100 times at once.
            func assertedHeaders(for uri: String) async throws -> [String: String] {
                // A millisecond passes between two requests the device makes, as on a phone.
                h.server.clock.advance(by: 0.001)
                let millis = String(Int64(h.server.clock.now.timeIntervalSince1970 * 1000))
                let signature = CutiERequestSignature.sign(secret: device.secret, timestamp: millis, method: "POST", target: uri, body: Data())
                let clientData = Data("\(millis)\nPOST\n\(uri)\n\(Hex.encode(SHA256.hash(data: Data())))".utf8)
                let assertion = try await service.generateAssertion(keyID, clientDataHash: Data(SHA256.hash(data: clientData)))
                return ["X-App-ID": "app_sandbox", "X-Device-ID": device.id, "X-Device-Token": device.token, "X-Timestamp": millis,
                        "X-Signature": signature, "X-App-Assertion": assertion.base64EncodedString()]
            }
            let headers = try await assertedHeaders(for: "/v1/device/attest/assert")
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<100 {
                    group.addTask { Int(try await h.raw(.post, "/v1/device/attest/assert", headers: headers).0.code) }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1)
            #expect(statuses.filter { $0 == 401 }.count == 99)

            // Made in order 1, 2; sent 2 then 1: the late one is refused as a replay.
            let earlier = try await assertedHeaders(for: "/v1/device/attest/assert")
            let later = try await assertedHeaders(for: "/v1/device/attest/assert")
            #expect(try await h.raw(.post, "/v1/device/attest/assert", headers: later).0 == .ok)
            let (status, body, _) = try await h.raw(.post, "/v1/device/attest/assert", headers: earlier)
            #expect(status == .unauthorized && body["error"]?.stringValue?.contains("counter") == true)

            // An assertion over another request (the signature is right, the assertion is not).
            var swapped = try await assertedHeaders(for: "/v1/device/attest/assert")
            let other = try await assertedHeaders(for: "/v1/conversations")
            swapped["X-App-Assertion"] = other["X-App-Assertion"]
            let (swappedStatus, swappedBody, _) = try await h.raw(.post, "/v1/device/attest/assert", headers: swapped)
            #expect(swappedStatus == .unauthorized && swappedBody["error"]?.stringValue?.contains("signature") == true)
        }
    }

    @Test("bad attestations are 400s naming the check, and change nothing")
    func badAttestations() async throws {
        try await CutiEHarness.withServer { h in
            let device = try await h.register()
            func challenge() async throws -> String {
                let (status, body, _) = try await h.signed(.post, "/v1/device/attest/challenge", device: device)
                #expect(status == .ok && body["expires_in"]?.int64Value == 300)
                return try #require(body["challenge"]?.stringValue)
            }
            func attest(_ attestation: Data, keyID: String, challenge: String) async throws -> (Int, String) {
                let body = #"{"key_id":"\#(keyID)","attestation":"\#(attestation.base64EncodedString())","challenge":"\#(challenge)"}"#
                let (status, json, _) = try await h.signed(.post, "/v1/device/attest", body: body, device: device)
                return (Int(status.code), json["error"]?.stringValue ?? json["success"].map { "\($0)" } ?? "")
            }
            let store = InMemorySecureStore()
            let service = SoftwareAppAttestService(sandboxURL: URL(string: "http://localhost")!, transport: RouterTransport(client: h.client), store: store,
                                                   cutieAppID: "app_sandbox")
            func make(_ challenge: String) async throws -> (String, Data) {
                let keyID = try await service.generateKey()
                let hash = AppAttestVerifier.sdkClientData(challenge: challenge, keyID: keyID)
                return (keyID, try await service.attestKey(keyID, clientDataHash: hash))
            }
            let first = try await challenge()
            let (keyID, good) = try await make(first)

            #expect(try await attest(Data("not cbor".utf8), keyID: keyID, challenge: first).1.contains("not CBOR"))
            #expect(try await attest(good.prefix(good.count / 2), keyID: keyID, challenge: first).1.contains("not CBOR"))
            var packed = CBOR.map([(.text("fmt"), .text("packed")), (.text("attStmt"), .map([])), (.text("authData"), .bytes(Data()))]).encoded
            #expect(try await attest(packed, keyID: keyID, challenge: first).1.contains("apple-appattest"))
            // Signed by a CA the server does not trust.
            let foreignCA = try AppAttestDevelopmentCA(rootKey: P256.Signing.PrivateKey(), intermediateKey: P256.Signing.PrivateKey(), now: Date())
            let object = try CBORDecoder.decode(good)
            let authData = try #require(object[text: "authData"]?.bytesValue)
            let key = try await service.load(keyID).0.publicKey
            let hash = AppAttestVerifier.sdkClientData(challenge: first, keyID: keyID)
            let foreign = try foreignCA.issue(publicKey: key, nonce: Data(SHA256.hash(data: authData + hash)), now: Date())
            packed = CBOR.map([(.text("fmt"), .text("apple-appattest")),
                               (.text("attStmt"), .map([(.text("x5c"), .array(foreign.map { .bytes($0) })), (.text("receipt"), .bytes(Data([1])))])),
                               (.text("authData"), .bytes(authData))]).encoded
            #expect(try await attest(packed, keyID: keyID, challenge: first).1.contains("certificate chain"))
            // Another key id; another challenge.
            let other = Data(SHA256.hash(data: Data("x".utf8))).base64EncodedString()
            #expect(try await attest(good, keyID: other, challenge: first).1.contains("nonce"))
            let second = try await challenge()
            #expect(try await attest(good, keyID: keyID, challenge: second).1.contains("nonce"))
            #expect(try await attestedKey(h, device: device.id) == nil)

            // The good one passes once; its challenge cannot be used again.
            #expect(try await attest(good, keyID: keyID, challenge: first).0 == 200)
            #expect(try await attestedKey(h, device: device.id)?.counter == 0)
            #expect(try await attest(good, keyID: keyID, challenge: first).1.contains("no open challenge"))
            // An unknown challenge.
            #expect(try await attest(good, keyID: keyID, challenge: "nope").1.contains("no open challenge"))
        }
    }
    /// One attestation for one challenge sent 30 times at once (on PostgreSQL, concurrent
    /// transactions as replicas on one database run them): exactly one attests the key; every
    /// other copy is refused, and the challenge is spent.
    @Test("30 racing copies of one attestation: the challenge attests once", arguments: TestEngines.all)
    func racingAttestations(engine: DatabaseEngine) async throws {
        try await CutiEHarness.withServer(engine: engine) { h in
            let device = try await h.register()
            let (status, body, _) = try await h.signed(.post, "/v1/device/attest/challenge", device: device)
            #expect(status == .ok)
            let challenge = try #require(body["challenge"]?.stringValue)
            let service = SoftwareAppAttestService(sandboxURL: URL(string: "http://localhost")!, transport: RouterTransport(client: h.client),
                                                   store: InMemorySecureStore(), cutieAppID: "app_sandbox")
            let keyID = try await service.generateKey()
            let attestation = try await service.attestKey(keyID, clientDataHash: AppAttestVerifier.sdkClientData(challenge: challenge, keyID: keyID))
            let request = #"{"key_id":"\#(keyID)","attestation":"\#(attestation.base64EncodedString())","challenge":"\#(challenge)"}"#
            let statuses = try await withThrowingTaskGroup(of: Int.self, returning: [Int].self) { group in
                for _ in 0..<30 {
                    group.addTask { Int(try await h.signed(.post, "/v1/device/attest", body: request, device: device).0.code) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1, "\(statuses)")
            #expect(statuses.allSatisfy { $0 == 200 || $0 == 400 || $0 == 409 }, "\(statuses)")
            #expect(try await attestedKey(h, device: device.id)?.counter == 0)
        }
    }
}


/// Vectors for independent verifiers (pyattest in `.ci/run`): an attestation and an assertion the
/// SDK's software attester made against the sandbox's development CA, with that CA's root.
/// Written only when `CUTIE_ATTEST_VECTORS_OUT` names a file.
@Suite("Cuti-E: App Attest vectors for pyattest")
struct AppAttestVectorTests {
    @Test("the software attester's attestation and assertion, written for pyattest")
    func writesAttestationVectors() async throws {
        guard let out = ProcessInfo.processInfo.environment["CUTIE_ATTEST_VECTORS_OUT"] else { return }
        try await CutiEHarness.withServer { h in
            let store = InMemorySecureStore()
            let service = SoftwareAppAttestService(sandboxURL: URL(string: "http://localhost")!, transport: RouterTransport(client: h.client), store: store,
                                                   cutieAppID: "app_sandbox")
            let challenge = "pyattest-\(UUID().uuidString)"
            let keyID = try await service.generateKey()
            let keyBytes = try #require(Data(base64Encoded: keyID))
            let attestation = try await service.attestKey(keyID, clientDataHash: Data(SHA256.hash(data: Data("\(challenge)|\(keyID)".utf8))))
            let clientData = Data("1700000000000\nGET\n/v1/conversations\n\(Hex.encode(SHA256.hash(data: Data())))".utf8)
            let assertion = try await service.generateAssertion(keyID, clientDataHash: Data(SHA256.hash(data: clientData)))
            let publicKey = try await service.load(keyID).0.publicKey
            let ca = try #require(h.configuration.appAttestDevelopmentCA)
            // Our own verifier takes them too.
            let attested = try await AppAttestVerifier(roots: [ca.root]).verify(
                attestation: attestation, appID: "PURSETEAM0.com.purse.cutie.sandbox", clientDataHash: AppAttestVerifier.sdkClientData(challenge: challenge, keyID: keyID),
                keyID: keyBytes, environment: .development, at: Date())
            #expect(try AppAttestVerifier.verifyAssertion(assertion, clientData: clientData, publicKey: attested.publicKey,
                                                          appID: "PURSETEAM0.com.purse.cutie.sandbox", after: 0) == 1)
            let vectors: [String: String] = [
                "root_pem": try ca.rootPEM, "app_id": "PURSETEAM0.com.purse.cutie.sandbox", "challenge": challenge, "key_id": keyID,
                "attestation": attestation.base64EncodedString(), "client_data": clientData.base64EncodedString(),
                "assertion": assertion.base64EncodedString(), "public_key": publicKey.x963Representation.base64EncodedString(),
            ]
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
            try encoder.encode(vectors).write(to: URL(fileURLWithPath: out))
        }
    }
}

import Crypto
import CutiE
import Foundation
import HTTPTypes
import PurseFormats
import PurseKit
import PurseHTTP
import Synchronization

/// `purse bench cutie`: signed `GET /v1/conversations` and `POST /v1/conversations/{id}/messages`
/// per second against `GET /health` on the same connections, each connection a registered device
/// with a few conversations; and the QR encoder's version-10 codes per second.
public struct CutieBenchmark: PurseBenchmark {
    public var connections = 16
    /// Requests per connection and phase (×20 for reads), instead of ``duration``.
    public var count: Int?
    public var duration = 10
    public var appID = "app_sandbox"
    /// How long the QR phase runs (seconds).
    public var qrSeconds = 2.0
    /// Also measure the inbox with an App Attest assertion checked on every request.
    public var assertions = false

    public init() {}

    public func validate() throws {
        guard (1...256).contains(connections), (1...300).contains(duration), (1...100_000).contains(count ?? 1), qrSeconds > 0, qrSeconds <= 60 else {
            throw BenchmarkError("--connections 1-256, --duration 1-300, --count 1-100000, --qr-seconds 0-60")
        }
    }

    struct Device: Sendable {
        var id: String
        var token: String
        var secret: String
        var conversation: String
        var connection: BenchConnection
        /// The software attester and its attested key (with --assert).
        var attester: SoftwareAppAttestService?
        var keyID: String?
    }

    public func run(against base: URL, inProcess: Bool) async throws {
        try validate()
        try await waitForHealth(base)
        guard let host = base.host, let port = base.port else { throw BenchmarkError("the server URL needs a host and a port") }
        let budget = count.map { "\($0) messages per connection" } ?? "\(duration) s per phase"
        print("purse bench cutie: \(connections) connections, \(budget), server \(base.absoluteString)")
        print(inProcess ? "cpu/op: this process, server and load generator together" : "cpu/op: this process, the load generator only")

        // Setup, untimed: per connection a registered device with five conversations (and, with
        // --assert, an attested key).
        let appID = self.appID
        let assertions = self.assertions
        try await Self.subscribeUnlimited(base: base, host: host, port: port, appID: appID)
        let devices = try await withThrowingTaskGroup(of: Device.self) { group in
            for _ in 0..<connections {
                group.addTask {
                    let connection = try await BenchConnection.connect(host: host, port: port)
                    let id = "device_" + UUID().uuidString.lowercased()
                    let registered = try await connection.send(TransportRequest(method: .post, url: base.appendingPathComponent("v1/device/register"),
                                                                                headerFields: [.appID: appID, .deviceID: id]))
                    struct Registration: Decodable { var device_token: String; var device_secret: String }
                    guard registered.status == 200, let credentials = try? JSONDecoder().decode(Registration.self, from: registered.body) else {
                        throw BenchmarkError("device registration answered \(registered.status): is app \(appID) known to the server?")
                    }
                    var device = Device(id: id, token: credentials.device_token, secret: credentials.device_secret, conversation: "", connection: connection)
                    for number in 0..<5 {
                        let body = Data(#"{"category":"feedback","initial_message":"Bench conversation \#(number)","title":"Bench \#(number)"}"#.utf8)
                        let created = try await connection.send(Self.signed(.post, "/v1/conversations", base: base, device: device, body: body))
                        struct Created: Decodable { var conversation_id: String }
                        guard created.status == 201, let conversation = try? JSONDecoder().decode(Created.self, from: created.body) else {
                            throw BenchmarkError("creating a conversation answered \(created.status)")
                        }
                        device.conversation = conversation.conversation_id
                    }
                    if assertions { try await Self.attest(&device, base: base, appID: appID) }
                    return device
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        var cpu = ProcessCPU.now()
        let health = await phase("GET /health", devices, reads: true, cpu: &cpu) { _ in
            TransportRequest(method: .get, url: base.appendingPathComponent("health"))
        }
        // Each device signs its requests before the phase, as it would on its own CPU (sized from
        // the rate just measured; a device that runs out signs the rest as it goes).
        func perDevice(_ rate: Double, reads: Bool) -> Int {
            count.map { reads ? $0 * 20 : $0 } ?? min(40_000, Int(rate * Double(duration) * 1.2) / max(1, devices.count) + 16)
        }
        let signedLists = duration <= 240 ? try await Self.mint(devices, perDevice: perDevice(health * 0.75, reads: true)) { device in
            Self.signed(.get, "/v1/conversations", base: base, device: device, body: nil)
        } : [:]
        cpu = ProcessCPU.now()
        let list = await phase("GET /v1/conversations (signed)", devices, reads: true, cpu: &cpu) { device in
            signedLists[device.id]?.next() ?? Self.signed(.get, "/v1/conversations", base: base, device: device, body: nil)
        }
        // Asserted reads right after the plain ones, over the same inboxes.
        var asserted: Double?
        if assertions {
            // The device's work, done before the phase as the Nexus benchmark mints its tokens:
            // each connection's asserted requests, signed in order (their counters rise in the
            // order they are sent). A connection that runs out signs the rest as it goes.
            let minted = duration <= 240 ? try await Self.mint(devices, perDevice: perDevice(list, reads: true)) { device in
                try await Self.assertedList(device, base: base)
            } : [:]
            cpu = ProcessCPU.now()
            asserted = await phase("GET /v1/conversations (+ assertion)", devices, reads: true, cpu: &cpu) { device in
                if let request = minted[device.id]?.next() { return request }
                return try await Self.assertedList(device, base: base)
            }
        }
        let message: @Sendable (Device) -> TransportRequest = { device in
            Self.signed(.post, "/v1/conversations/\(device.conversation)/messages", base: base, device: device,
                        body: Data(#"{"message":"Still happening on 2.1, see attached steps."}"#.utf8), idempotencyKey: IdempotencyKey.make())
        }
        let messages = duration <= 240 ? try await Self.mint(devices, perDevice: perDevice(list * 0.6, reads: false), make: message) : [:]
        cpu = ProcessCPU.now()
        let post = await phase("POST …/messages (signed, idempotent)", devices, reads: false, cpu: &cpu, expect: 201) { device in
            messages[device.id]?.next() ?? message(device)
        }
        BenchReport.figure("cutie.list_vs_health", list / health * 100, unit: "%", target: "≥ 60 %", met: list / health >= 0.6,
                           line: String(format: "ratio: list / health = %.1f %%  (target ≥ 60 %%), post / health = %.1f %%  (target ≥ 25 %%)", list / health * 100, post / health * 100))
        BenchReport.figure("cutie.post_vs_health", post / health * 100, unit: "%", target: "≥ 25 %", met: post / health >= 0.25, line: "")
        if let asserted {
            let cost = (1 - asserted / list) * 100
            BenchReport.figure("cutie.assertion_cost", cost, unit: "%", target: "≤ 30 %", met: cost <= 30,
                               line: String(format: "App Attest: asserted list / list = %.1f %% — the assertion costs %.1f %% of the plain rate (target ≤ 30 %%: %@)",
                                            asserted / list * 100, cost, cost <= 30 ? "met" : "not met"))
        }
        for device in devices { await device.connection.close() }

        // The QR encoder: version-10 codes (200 bytes at level M) with the mask search.
        var payloads: [[UInt8]] = []
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<64 { payloads.append((0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
        let start = ContinuousClock.now
        var codes = 0
        var version = 0
        while ContinuousClock.now - start < .milliseconds(Int64(qrSeconds * 1000)) {
            for payload in payloads {
                version = try QRCode.encode(payload, errorCorrection: .medium).version
                codes += 1
            }
        }
        let seconds = (ContinuousClock.now - start).seconds
        let rate = Double(codes) / seconds
        BenchReport.figure("qr.version10", rate, unit: "/s", target: "≥ 10,000 /s", met: rate >= 10_000,
                           line: String(format: "QR encoder: %.0f version-%d codes/s (level M, mask search)  (target ≥ 10,000: %@)", rate, version, rate >= 10_000 ? "met" : "not met"))
    }

    /// Gives the app the business tier (no monthly feedback limit) through the sandbox's StoreKit,
    /// so the setup's conversations are not refused; a server without the sandbox keeps its tier.
    static func subscribeUnlimited(base: URL, host: String, port: Int, appID: String) async throws {
        let connection = try await BenchConnection.connect(host: host, port: port)
        defer { Task { await connection.close() } }
        let id = "device_" + UUID().uuidString.lowercased()
        let registered = try await connection.send(TransportRequest(method: .post, url: base.appendingPathComponent("v1/device/register"),
                                                                    headerFields: [.appID: appID, .deviceID: id]))
        struct Registration: Decodable { var device_token: String; var device_secret: String }
        guard let credentials = try? JSONDecoder().decode(Registration.self, from: registered.body) else { return }
        let purchase = try await connection.send(TransportRequest(
            method: .post, url: base.appendingPathComponent("sandbox/storekit/transactions"), headerFields: [.contentType: "application/json"],
            body: Data(#"{"bundle_id":"com.purse.cutie.sandbox","product_id":"com.cutie.business.monthly"}"#.utf8)))
        struct Purchase: Decodable { var signed_transaction: String }
        guard purchase.status == 200, let bought = try? JSONDecoder().decode(Purchase.self, from: purchase.body) else { return }
        let body = try JSONSerialization.data(withJSONObject: ["platform": "ios", "signed_transaction": bought.signed_transaction, "product_id": "com.cutie.business.monthly"])
        let device = Device(id: id, token: credentials.device_token, secret: credentials.device_secret, conversation: "", connection: connection)
        let verified = try await connection.send(signed(.post, "/v1/subscription/verify", base: base, device: device, body: body))
        guard verified.status == 200 else { throw BenchmarkError("the sandbox's subscription was refused: \(verified.status)") }
    }

    /// Attests a device's key with the software attester (the server's development CA), as the
    /// SDK does on first use.
    static func attest(_ device: inout Device, base: URL, appID: String) async throws {
        let attester = SoftwareAppAttestService(sandboxURL: base, transport: device.connection, store: InMemorySecureStore(), cutieAppID: appID)
        let answer = try await device.connection.send(signed(.post, "/v1/device/attest/challenge", base: base, device: device, body: nil))
        struct Challenge: Decodable { var challenge: String }
        guard answer.status == 200, let challenge = try? JSONDecoder().decode(Challenge.self, from: answer.body).challenge else {
            throw BenchmarkError("the App Attest challenge answered \(answer.status) (--assert needs the server's sandbox)")
        }
        let keyID = try await attester.generateKey()
        let attestation = try await attester.attestKey(keyID, clientDataHash: Data(SHA256.hash(data: Data("\(challenge)|\(keyID)".utf8))))
        let body = try JSONSerialization.data(withJSONObject: ["key_id": keyID, "attestation": attestation.base64EncodedString(), "challenge": challenge])
        let attested = try await device.connection.send(signed(.post, "/v1/device/attest", base: base, device: device, body: body))
        guard attested.status == 200 else { throw BenchmarkError("the attestation answered \(attested.status): \(String(decoding: attested.body, as: UTF8.self))") }
        device.attester = attester
        device.keyID = keyID
    }

    /// `GET /v1/conversations` signed, with an App Attest assertion over it, as the SDK sends it.
    static func assertedList(_ device: Device, base: URL) async throws -> TransportRequest {
        var request = signed(.get, "/v1/conversations", base: base, device: device, body: nil)
        let clientData = CutiERequestSignature.signedText(timestamp: request.headerFields[.requestTimestamp] ?? "", method: "GET", target: "/v1/conversations", body: Data())
        guard let attester = device.attester, let keyID = device.keyID else { return request }
        let assertion = try await attester.generateAssertion(keyID, clientDataHash: Data(SHA256.hash(data: Data(clientData.utf8))))
        request.headerFields[.appAssertion] = assertion.base64EncodedString()
        return request
    }

    /// `perDevice` requests made by `make` for each device, in order, by device id.
    static func mint(_ devices: [Device], perDevice: Int,
                     make: @escaping @Sendable (Device) async throws -> TransportRequest) async throws -> [String: Minted<TransportRequest>] {
        try await withThrowingTaskGroup(of: (String, Minted<TransportRequest>).self) { group in
            for device in devices {
                group.addTask {
                    var requests: [TransportRequest] = []
                    requests.reserveCapacity(perDevice)
                    for _ in 0..<perDevice { requests.append(try await make(device)) }
                    return (device.id, Minted(requests))
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
    }

    /// A request signed as the SDK signs it (the signature covers its Idempotency-Key).
    static func signed(_ method: HTTPRequest.Method, _ path: String, base: URL, device: Device, body: Data?, idempotencyKey: String? = nil) -> TransportRequest {
        let timestamp = String(Int64(Date().timeIntervalSince1970 * 1000))
        var request = TransportRequest(method: method, url: base.appendingPathComponent(path), body: body)
        request.headerFields = [
            .appID: "app_sandbox", .deviceID: device.id, .deviceToken: device.token, .requestTimestamp: timestamp,
            .requestSignature: CutiERequestSignature.sign(secret: device.secret, timestamp: timestamp, method: method.rawValue, target: path, body: body ?? Data(),
                                                          idempotencyKey: idempotencyKey),
        ]
        if let idempotencyKey { request.headerFields[.idempotencyKey] = idempotencyKey }
        if body != nil { request.headerFields[.contentType] = "application/json" }
        return request
    }

    func phase(_ name: String, _ devices: [Device], reads: Bool, cpu: inout Double, expect: HTTPResponse.Status = .ok,
               request: @escaping @Sendable (Device) async throws -> TransportRequest) async -> Double {
        let recorder = LatencyRecorder()
        let elapsed = await closedLoop(devices, count: count.map { reads ? $0 * 20 : $0 }, duration: duration, recorder: recorder) { device in
            try await device.connection.send(try await request(device)).status == expect
        }
        let summary = recorder.summary(over: elapsed)
        reportPhase(name, summary, cpuSince: &cpu)
        return summary.perSecond
    }
}

@testable import CutiE
@testable import CutiEService
import Foundation
import PurseAPNs
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PurseDatabase
import PurseFormats
import PurseKit
import PurseHTTP
import PurseServer
import PurseTestSupport

/// A Cuti-E server in-process (APNs sandbox included) and SDK instances talking to it.
struct CutiEHarness: Sendable {
    let server: TestServer
    let client: any TestClientProtocol
    let configuration: CutiEService.CutiEConfiguration

    /// - Parameters:
    ///   - live: a server on a loopback socket (requests have a client address) instead of the router.
    ///   - trustedProxies: peers whose `X-Forwarded-For` names the client (with `live`).
    static func withServer(engine: DatabaseEngine = .sqlite, live: Bool = false, trustedProxies: Set<String> = [],
                           adjust: @Sendable (inout CutiEService.CutiEConfiguration) -> Void = { _ in },
                           _ body: @Sendable (CutiEHarness) async throws -> Void) async throws {
        var purse = PurseConfiguration()
        purse.dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-cutie-\(UUID().uuidString)").path
        var configuration = try CutiEService.CutiEConfiguration.from(purse)
        adjust(&configuration)
        let cutie = configuration
        let server = try await TestServer.make(engine: engine, modules: [CutiEModule(configuration: cutie)]) {
            $0.runsJobsInBackground = false
            $0.trustedProxies = trustedProxies
        }
        defer { try? FileManager.default.removeItem(atPath: purse.dataDirectory) }
        let run: @Sendable (any TestClientProtocol) async throws -> Void = { client in
            try await body(CutiEHarness(server: server, client: client, configuration: cutie))
        }
        if live { try await server.withLive(run) } else { try await server.withRouter(run) }
    }

    var environment: ServerEnvironment { server.environment }

    /// A fresh install of an app using the SDK (its own preferences and keychain).
    func device(app: String = "app_sandbox") -> (cutie: CutiE, transport: RouterTransport, preferences: InMemoryPreferences, store: InMemorySecureStore) {
        let cutie = CutiE()
        let transport = RouterTransport(client: client)
        let preferences = InMemoryPreferences()
        let store = InMemorySecureStore()
        let clock = server.clock
        cutie.configure(appId: app, apiURL: URL(string: "http://localhost")!, transport: transport, store: store, preferences: preferences,
                        retry: RetryPolicy(maxAttempts: 1), now: { clock.now })
        return (cutie, transport, preferences, store)
    }

    func runJobs() async { await server.app.jobWorker.runDue() }

    /// A raw request with the headers given.
    @discardableResult
    func raw(_ method: HTTPRequest.Method, _ uri: String, body: String? = nil, headers: [String: String] = [:]) async throws -> (HTTPResponse.Status, JSONValue, HTTPFields) {
        var fields = HTTPFields()
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        if body != nil, fields[.contentType] == nil { fields[.contentType] = "application/json" }
        let response = try await client.execute(uri: uri, method: method, headers: fields, body: body.map { ByteBuffer(string: $0) })
        let json = (try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: response.body))) ?? .null
        return (response.status, json, response.headers)
    }

    /// A raw request, its answer as bytes (for decoding with other models).
    func rawData(_ method: HTTPRequest.Method, _ uri: String, body: Data? = nil, headers: [String: String] = [:]) async throws -> (HTTPResponse.Status, Data) {
        var fields = HTTPFields()
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        let response = try await client.execute(uri: uri, method: method, headers: fields, body: body.map { ByteBuffer(data: $0) })
        return (response.status, Data(buffer: response.body))
    }

    /// Registers a device by hand: (device id, token, secret).
    func register(app: String = "app_sandbox", deviceID: String = "device_" + UUID().uuidString.lowercased(),
                  headers: [String: String] = [:]) async throws -> (id: String, token: String, secret: String) {
        let (status, body, _) = try await raw(.post, "/v1/device/register", headers: headers.merging(["X-App-ID": app, "X-Device-ID": deviceID]) { $1 })
        guard status == .ok, let token = body["device_token"]?.stringValue, let secret = body["device_secret"]?.stringValue else {
            throw ConfigurationError("registration failed: \(status) \(body)")
        }
        return (deviceID, token, secret)
    }

    /// A request signed as the SDK signs it (or with the parts given).
    func signed(_ method: HTTPRequest.Method, _ uri: String, body: String? = nil, device: (id: String, token: String, secret: String), app: String = "app_sandbox",
                timestamp: Date? = nil, secret: String? = nil, headers: [String: String] = [:]) async throws -> (HTTPResponse.Status, JSONValue, HTTPFields) {
        // A millisecond passes between two requests a device makes, as on a phone: two requests
        // signed alike would be one request sent twice (a replay).
        if timestamp == nil { server.clock.advance(by: 0.001) }
        let millis = String(Int64((timestamp ?? server.clock.now).timeIntervalSince1970 * 1000))
        let signature = DeviceSignature.sign(secret: secret ?? device.secret, timestamp: millis, method: method.rawValue, target: uri, body: Data((body ?? "").utf8),
                                             idempotencyKey: headers["Idempotency-Key"])
        return try await raw(method, uri, body: body, headers: headers.merging(
            ["X-App-ID": app, "X-Device-ID": device.id, "X-Device-Token": device.token, "X-Timestamp": millis, "X-Signature": signature]) { $1 })
    }

    /// Signs in to the admin API: (cookie, CSRF token).
    func adminSession(email: String = "agent-\(UUID().uuidString.prefix(6))@example.com", role: String = "agent") async throws -> (cookie: String, csrf: String, id: String) {
        let created = try await CutiEModule.createAdmin(email: email, name: "Sam", role: role, password: "correct-horse-battery", environment: environment)
        let (status, body, headers) = try await raw(.post, "/v1/admin/login", body: #"{"email":"\#(email)","password":"correct-horse-battery"}"#)
        guard status == .ok, let csrf = body["csrf_token"]?.stringValue, let cookie = headers[.setCookie]?.split(separator: ";").first else {
            throw ConfigurationError("admin login failed: \(status) \(body)")
        }
        return (String(cookie), csrf, created.id)
    }

    func adminReply(_ conversation: String, _ text: String, session: (cookie: String, csrf: String, id: String)) async throws -> (HTTPResponse.Status, JSONValue) {
        let (status, body, _) = try await raw(.post, "/v1/admin/conversations/\(conversation)/messages", body: #"{"message":"\#(text)"}"#,
                                              headers: ["Cookie": session.cookie, "X-CSRF-Token": session.csrf])
        return (status, body)
    }
}

/// The request signature as the SDK makes it, for hand-made requests.
enum DeviceSignature {
    static func sign(secret: String, timestamp: String, method: String, target: String, body: Data, idempotencyKey: String? = nil) -> String {
        CutiEAPIClient.signature(secret: secret, timestamp: timestamp, method: method, target: target, body: body, idempotencyKey: idempotencyKey)
    }
}

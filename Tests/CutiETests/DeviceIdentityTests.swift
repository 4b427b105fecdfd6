@testable import CutiE
@testable import CutiEService
import Crypto
import Foundation
import HTTPTypes
import PurseAPNs
import PurseDatabase
import PurseFormats
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// A device id is not a credential: the SDK sends it with every request, and conversations,
/// messages and link lists name devices. Each test plays an attacker who knows a victim's id
/// and sends exactly what the real Cuti-E SDK sends.
@Suite("Cuti-E: a device id gives nothing")
struct DeviceIdentityTests {
    static let victimPush = "aa112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
    static let attackerPush = "bb112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

    /// The takeover as it was measured: register with the victim's `X-Device-ID`, read the
    /// inbox, post as the user, register a push token, wait for support's reply.
    @Test("registering with a victim's device id gets an empty inbox of its own; the victim's token, thread and pushes stay theirs",
          arguments: TestEngines.all)
    func takeoverByDeviceID(engine: DatabaseEngine) async throws {
        try await CutiEHarness.withServer(engine: engine) { h in
            var victim = RealSDKDevice(harness: h, appID: "app_sandbox")
            let created = try await victim.success(.post, "/v1/conversations", body: ["category": "question", "initial_message": "I can't sign in"],
                                                   as: RealSDK.CreateConversationResponse.self)
            _ = try await victim.success(.post, "/v1/notifications/register", body: ["platform": "ios", "push_token": Self.victimPush, "environment": "sandbox"],
                                         as: RealSDK.EmptyResponse.self)
            let victimToken = try #require(victim.token)

            // The attacker: the same app id and device id, no token, no signature.
            var attacker = RealSDKDevice(harness: h, appID: "app_sandbox", deviceID: victim.deviceID)
            let registered = try await attacker.register()
            #expect(registered.isNew)
            #expect(try await attacker.success(.get, "/v1/conversations", as: RealSDK.ConversationsListResponse.self).conversations.isEmpty)
            guard case .failure(let hidden) = try await attacker.request(.get, "/v1/conversations/\(created.conversationId)", as: RealSDK.Conversation.self) else {
                Issue.record("the attacker read the victim's conversation"); return
            }
            #expect(hidden.status == 404)
            guard case .failure(let refused) = try await attacker.request(.post, "/v1/conversations/\(created.conversationId)/messages",
                                                                          body: ["message": "it's me, reset it"], as: RealSDK.Message.self) else {
                Issue.record("the attacker wrote in the victim's conversation"); return
            }
            #expect(refused.status == 404)
            _ = try await attacker.success(.post, "/v1/notifications/register", body: ["platform": "ios", "push_token": Self.attackerPush, "environment": "sandbox"],
                                           as: RealSDK.EmptyResponse.self)
            // Nor can it take the victim's push token from it, even knowing it.
            _ = try await attacker.success(.post, "/v1/notifications/register", body: ["platform": "ios", "push_token": Self.victimPush, "environment": "sandbox"],
                                           as: RealSDK.EmptyResponse.self)

            // The victim's token was not revoked: it reads its thread and registers its push token.
            #expect(victim.token == victimToken)
            let inbox = try await victim.success(.get, "/v1/conversations", as: RealSDK.ConversationsListResponse.self)
            #expect(inbox.conversations.map(\.id) == [created.conversationId])
            _ = try await victim.success(.post, "/v1/notifications/register", body: ["platform": "ios", "push_token": Self.victimPush, "environment": "sandbox"],
                                         as: RealSDK.EmptyResponse.self)

            // Support's reply is pushed to the victim, never to the attacker.
            let admin = try await h.adminSession()
            let (status, _) = try await h.adminReply(created.conversationId, "Your reset code is 123456", session: admin)
            #expect(status == .created)
            await h.runJobs()
            let (toVictim, toAttacker) = try await h.environment.database.read { db in
                (try await APNsSandbox.deliveries(in: CutiEModule.apnsSandboxTables, deviceToken: Self.victimPush, limit: 10, on: db),
                 try await APNsSandbox.deliveries(in: CutiEModule.apnsSandboxTables, deviceToken: Self.attackerPush, limit: 10, on: db))
            }
            #expect(toVictim.count == 1 && toAttacker.isEmpty)
            // Admin views show a push token's end only.
            let (_, pushes, _) = try await h.raw(.get, "/v1/admin/pushes", headers: ["Cookie": admin.cookie])
            #expect(pushes["pushes"]?.arrayValue?.allSatisfy { $0["push_token"]?.stringValue == "…" + Self.victimPush.suffix(8) } == true, "\(pushes)")

            // No answer names the id the victim sends: not the conversation, not its messages.
            let (_, thread) = try await h.rawData(.get, "/v1/conversations/\(created.conversationId)", headers: victim.headers)
            #expect(!String(decoding: thread, as: UTF8.self).contains(victim.deviceID))
        }
    }

    /// On an app that requires App Attest (without signed requests, as the real SDK needs), an
    /// unattested re-registration of an attested device's id is a new, unattested identity: it
    /// gets nothing, and cannot forget the real device's key.
    @Test("App Attest cannot be bypassed with an attested device's id; its key is forgotten only by an assertion")
    func attestBypass() async throws {
        try await CutiEHarness.withServer { h in
            try await h.environment.database.transaction { db in
                _ = try await CutiEApp.updateAttest("app_sandbox", teamID: nil, requireAppAttest: true, attestEnvironment: nil, in: db)
            }
            let (cutie, _, _) = AppAttestFlowTests().attestedDevice(h)
            let id = try await cutie.createConversation(category: .bug, message: "private")
            let victimID = try #require(cutie.deviceID)
            #expect(try await AppAttestFlowTests().attestedKey(h, device: victimID) != nil)

            var attacker = RealSDKDevice(harness: h, appID: "app_sandbox", deviceID: victimID)
            #expect(try await attacker.register().isNew)
            guard case .failure(let required) = try await attacker.request(.get, "/v1/conversations", as: RealSDK.ConversationsListResponse.self) else {
                Issue.record("an unattested identity read an inbox"); return
            }
            #expect(required.status == 401 && required.message.contains("App Attest required"))
            // Its own (unattested) identity has no key to forget; the victim's stays.
            _ = try await attacker.register()
            _ = try await attacker.request(.delete, "/v1/device/attest", as: RealSDK.EmptyResponse.self)
            #expect(try await AppAttestFlowTests().attestedKey(h, device: victimID) != nil)
            #expect(try await cutie.getConversation(id: id).messages?.count == 1)
        }
    }

    /// The real SDK sends pings outside its token pipeline. A ping needs only the app id; it is
    /// counted once per proven identity or address and day, never per made-up hash.
    @Test("activity pings: accepted by app id, consent honoured, one device per address a day however many hashes, 64 hex only")
    func pings() async throws {
        try await CutiEHarness.withServer(live: true, trustedProxies: ["127.0.0.1"]) { h in
            func ping(_ hash: String, consent: Bool = true, from address: String, app: String = "app_sandbox",
                      device: (id: String, token: String, secret: String)? = nil) async throws -> HTTPResponse.Status {
                var headers = ["X-App-ID": app, "X-Device-ID": device?.id ?? "device_" + UUID().uuidString, "X-Forwarded-For": address]
                headers["X-Device-Token"] = device?.token
                return try await h.raw(.post, "/v1/activity/ping", body: #"{"hashed_device_id":"\#(hash)","consent":\#(consent),"language":"en"}"#, headers: headers).0
            }
            func hash(_ n: Int) -> String { Hex.encode(SHA256.hash(data: Data("device \(n)".utf8))) }
            for n in 0..<50 { #expect(try await ping(hash(n), from: "203.0.113.7") == .ok) }
            #expect(try await ping(hash(0), from: "198.51.100.9") == .ok)
            #expect(try await ping(hash(99), consent: false, from: "192.0.2.1") == .ok)
            let rows = try await h.environment.database.read { db in
                try await db.raw("SELECT pings FROM cutie_activity ORDER BY pings").all().map { try $0.decode(column: "pings", as: Int64.self) }
            }
            #expect(rows == [1, 50])
            // A device with a token is counted by its identity, wherever it pings from.
            let device = try await h.register(headers: ["X-Forwarded-For": "192.0.2.50"])
            for address in ["192.0.2.51", "192.0.2.52"] { #expect(try await ping(hash(7), from: address, device: device) == .ok) }
            let counted = try await h.environment.database.read { db in try await db.raw("SELECT pings FROM cutie_activity").all().count }
            #expect(counted == 3)
            // What the SDK documents: 64 hexadecimal characters.
            for bad in [String(hash(1).dropLast()), hash(1) + "0", String(repeating: "z", count: 64), "device_" + UUID().uuidString] {
                #expect(try await ping(bad, from: "203.0.113.7") == .badRequest)
            }
            #expect(try await ping(hash(1), from: "203.0.113.7", app: "app_unknown") == .unauthorized)
        }
    }
}

/// The admin sign-in backs off guessing without locking out support: a browser that signed in
/// before keeps a sign-in device cookie, and guesses from elsewhere never hold it.
@Suite("Cuti-E: admin sign-in without lockout")
struct AdminSignInTests {
    @Test("guesses from four networks hold new browsers; the one that signed in before gets in", arguments: TestEngines.all)
    func knownBrowserIsNotHeld(engine: DatabaseEngine) async throws {
        try await CutiEHarness.withServer(engine: engine, live: true, trustedProxies: ["127.0.0.1"]) { h in
            let email = "support@example.com"
            _ = try await CutiEModule.createAdmin(email: email, name: "Sam", role: "agent", password: "correct-horse-battery", environment: h.environment)
            func login(_ password: String, from address: String, cookie: String? = nil) async throws -> (HTTPResponse.Status, HTTPFields) {
                var headers = ["X-Forwarded-For": address]
                headers["Cookie"] = cookie
                let (status, _, fields) = try await h.raw(.post, "/v1/admin/login", body: #"{"email":"\#(email)","password":"\#(password)"}"#, headers: headers)
                return (status, fields)
            }
            let (first, fields) = try await login("correct-horse-battery", from: "192.0.2.1")
            #expect(first == .ok)
            let device = try #require(fields[values: .setCookie].first { $0.hasPrefix(AdminAccounts.deviceCookieName + "=") }?.split(separator: ";").first)
            for round in 0..<10 {
                for address in ["203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4"] { _ = try await login("wrong \(round)", from: address) }
            }
            #expect(try await login("correct-horse-battery", from: "198.51.100.7").0 == .tooManyRequests, "a new browser waits")
            for attempt in 0..<5 {
                #expect(try await login("correct-horse-battery", from: "198.51.100.\(20 + attempt)", cookie: String(device)).0 == .ok, "attempt \(attempt)")
            }
        }
    }
}

@testable import CutiE
@testable import CutiEService
import Crypto
import Foundation
import PurseKit
import PurseAPNs
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PurseDatabase
import PurseFormats
import PurseHTTP
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

@Suite("Cuti-E: the SDK against its backend")
struct CutiEServiceTests {
    static let pushToken = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

    @Test("the journey: feedback → admin reply → push → unread 1 → mark read → 0")
    func journey() async throws {
        try await CutiEHarness.withServer { h in
            let phone = h.device()
            phone.cutie.setUserName("Ana")
            let id = try await phone.cutie.createConversation(category: .bug, message: "Settings crash", title: "Crash")
            try await phone.cutie.registerForPushNotifications(deviceToken: Data(Hex.decode(Self.pushToken)!), bundleId: "com.purse.cutie.sandbox", environment: "sandbox")
            #expect(try await phone.cutie.getUnreadCount() == 0)
            // The device id is in preferences, the token and secret in the secure store.
            #expect(phone.preferences.string(forKey: CutiEAPIClient.deviceIDKey)?.hasPrefix("device_") == true)
            #expect(await phone.store.data(for: CutiEAPIClient.credentialsKey) != nil)

            let admin = try await h.adminSession()
            let (status, reply) = try await h.adminReply(id, "A fix ships tomorrow", session: admin)
            #expect(status == .created && reply["pushes_queued"]?.int64Value == 1)
            await h.runJobs()
            let delivered = try await h.environment.database.read { db in try await APNsSandbox.deliveries(in: CutiEModule.apnsSandboxTables, deviceToken: Self.pushToken, limit: 10, on: db) }
            #expect(delivered.count == 1)
            let payload = try JSONDecoder().decode(JSONValue.self, from: Data(try #require(delivered.first).payload.utf8))
            #expect(payload["conversation_id"] == .string(id))
            #expect(payload["aps"]?["badge"]?.int64Value == 1)
            #expect(payload["aps"]?["alert"]?["body"]?.stringValue?.contains("A fix ships tomorrow") == true)
            let pushes = try await h.environment.database.read { db in try await AdminStore().pushes(conversation: ConversationID(id), limit: 10, in: db) }
            #expect(pushes.map(\.status) == [.sent])

            // The app opens the push.
            let userInfo: [AnyHashable: Any] = try #require(JSONSerialization.jsonObject(with: Data(delivered[0].payload.utf8)) as? [AnyHashable: Any])
            #expect(phone.cutie.handleNotification(userInfo) == id)
            #expect(phone.cutie.badgeCount == 1)

            #expect(try await phone.cutie.getUnreadCount() == 1)
            let conversation = try await phone.cutie.getConversation(id: id)
            #expect(conversation.status == .waiting_user)
            #expect(conversation.messages?.map(\.senderType) == [.user, .admin])
            try await phone.cutie.markAllRead(conversationId: id)
            #expect(try await phone.cutie.getUnreadCount() == 0)
            #expect(phone.cutie.badgeCount == 0)

            // The user answers: the conversation waits for support again.
            _ = try await phone.cutie.sendMessage("Thanks!", to: id)
            #expect(try await phone.cutie.getConversation(id: id).status == .waiting_admin)
        }
    }

    @Test("stale, forged and unknown credentials are 401; a known device id registers again as a new identity unless it proves its token")
    func signatures() async throws {
        try await CutiEHarness.withServer { h in
            let device = try await h.register()
            #expect(try await h.signed(.get, "/v1/conversations", device: device).0 == .ok)
            #expect(try await h.signed(.get, "/v1/conversations", device: device, timestamp: h.server.clock.now.addingTimeInterval(-301)).0 == .unauthorized)
            #expect(try await h.signed(.get, "/v1/conversations", device: device, timestamp: h.server.clock.now.addingTimeInterval(301)).0 == .unauthorized)
            #expect(try await h.signed(.get, "/v1/conversations", device: device, secret: Base64URL.encode(RandomID.bytes(32))).0 == .unauthorized)
            #expect(try await h.signed(.get, "/v1/conversations", device: (device.id, "cdt_unknown", device.secret)).0 == .unauthorized)
            #expect(try await h.signed(.get, "/v1/conversations", device: device, app: "app_other").0 == .unauthorized)
            // A signature covers the body: the same signature over another body fails.
            let millis = String(Int64(h.server.clock.now.timeIntervalSince1970 * 1000))
            let body = #"{"category":"bug","initial_message":"one"}"#
            let signature = DeviceSignature.sign(secret: device.secret, timestamp: millis, method: "POST", target: "/v1/conversations", body: Data(body.utf8))
            let (tampered, _, _) = try await h.raw(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"two"}"#,
                                                 headers: ["X-App-ID": "app_sandbox", "X-Device-Token": device.token, "X-Timestamp": millis, "X-Signature": signature])
            #expect(tampered == .unauthorized)
            // The signature's hex in either case is the same signature; a short, long or
            // non-hex one is refused.
            let good = #"{"category":"bug","initial_message":"one"}"#
            let headers = ["X-App-ID": "app_sandbox", "X-Device-Token": device.token, "X-Timestamp": millis]
            #expect(try await h.raw(.post, "/v1/conversations", body: good, headers: headers.merging(["X-Signature": signature.uppercased()]) { $1 }).0 == .created)
            for bad in [String(signature.dropLast(2)), signature + "00", String(signature.dropLast()) + "g", ""] {
                #expect(try await h.raw(.post, "/v1/conversations", body: good, headers: headers.merging(["X-Signature": bad]) { $1 }).0 == .unauthorized)
            }
            // Missing headers, unknown app, bad device id.
            #expect(try await h.raw(.get, "/v1/conversations").0 == .unauthorized)
            #expect(try await h.raw(.post, "/v1/device/register", headers: ["X-App-ID": "nope", "X-Device-ID": "device_" + UUID().uuidString]).0 == .unauthorized)
            #expect(try await h.raw(.post, "/v1/device/register", headers: ["X-App-ID": "app_sandbox", "X-Device-ID": "phone"]).0 == .badRequest)
            // The device itself (signed with its token) gets a new token; the old one is revoked.
            let (renewed, fresh, _) = try await h.signed(.post, "/v1/device/register", device: device)
            #expect(renewed == .ok && fresh["is_new"] == .bool(false))
            #expect(try await h.signed(.get, "/v1/conversations", device: device).0 == .unauthorized)
            // As the Cuti-E SDK does after a 401: the same id, no token. That proves nothing: a new
            // identity in a group of its own, and the device's current token keeps working.
            let (again, second, _) = try await h.raw(.post, "/v1/device/register", headers: ["X-App-ID": "app_sandbox", "X-Device-ID": device.id])
            #expect(again == .ok && second["is_new"] == .bool(true) && second["group_id"] != fresh["group_id"])
            let token = try #require(fresh["device_token"]?.stringValue)
            #expect(try await h.raw(.get, "/v1/conversations", headers: ["X-App-ID": "app_sandbox", "X-Device-ID": device.id, "X-Device-Token": token]).0 == .ok)

            // An app that requires signed requests: a token alone is refused with the reason, and
            // someone who only knows a device id cannot take over its inbox.
            try await h.environment.database.transaction { db in
                _ = try await CutiEApp.create(id: "app_signed", name: "Signed", bundleID: "com.example.signed", apnsEnvironment: "sandbox",
                                              requireSignedRequests: true, now: Date(), in: db)
            }
            let strict = try await h.register(app: "app_signed")
            let (unsigned, refusal, _) = try await h.raw(.get, "/v1/conversations", headers: ["X-App-ID": "app_signed", "X-Device-ID": strict.id, "X-Device-Token": strict.token])
            #expect(unsigned == .unauthorized && refusal["error"]?.stringValue?.contains("Signed requests required") == true)
            #expect(try await h.signed(.get, "/v1/conversations", device: strict, app: "app_signed").0 == .ok)
            let (taken, other, _) = try await h.raw(.post, "/v1/device/register", headers: ["X-App-ID": "app_signed", "X-Device-ID": strict.id])
            #expect(taken == .ok && other["is_new"] == .bool(true))
            #expect(try await h.signed(.get, "/v1/conversations", device: strict, app: "app_signed").0 == .ok)
        }
    }

    /// A captured signed POST without an Idempotency-Key, sent again within the signature
    /// window, is answered from the first one's record: five copies make one conversation. With a
    /// key, a retry is answered from the key's record (the SDK's way).
    @Test("a signed request replayed, with or without an Idempotency-Key, is answered from its record and changes nothing more")
    func replays() async throws {
        try await CutiEHarness.withServer { h in
            let device = try await h.register()
            let body = #"{"category":"bug","initial_message":"captured"}"#
            let millis = String(Int64(h.server.clock.now.timeIntervalSince1970 * 1000))
            let signature = DeviceSignature.sign(secret: device.secret, timestamp: millis, method: "POST", target: "/v1/conversations", body: Data(body.utf8))
            let headers = ["X-App-ID": "app_sandbox", "X-Device-Token": device.token, "X-Timestamp": millis, "X-Signature": signature]
            var answers: [(HTTPResponse.Status, JSONValue, HTTPFields)] = []
            for _ in 0..<5 { answers.append(try await h.raw(.post, "/v1/conversations", body: body, headers: headers)) }
            #expect(answers.allSatisfy { $0.0 == answers[0].0 && $0.1 == answers[0].1 }, "\(answers.map(\.0))")
            #expect(answers.dropFirst().allSatisfy { $0.2[.idempotentReplayed] == "true" })
            let (_, list, _) = try await h.signed(.get, "/v1/conversations", device: device)
            #expect(list["conversations"]?.arrayValue?.count == 1)
            // The same with an Idempotency-Key: every copy gets the first answer, one conversation more.
            let keyed = headers.merging(["Idempotency-Key": "retry-1", "X-Signature": DeviceSignature.sign(
                secret: device.secret, timestamp: millis, method: "POST", target: "/v1/conversations", body: Data(#"{"category":"bug","initial_message":"keyed"}"#.utf8),
                idempotencyKey: "retry-1")]) { $1 }
            var ids: Set<String> = []
            for _ in 0..<3 {
                let (status, created, _) = try await h.raw(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"keyed"}"#, headers: keyed)
                #expect(status == .created || status == .ok)
                if let id = created["conversation_id"]?.stringValue ?? created["id"]?.stringValue { ids.insert(id) }
            }
            #expect(ids.count == 1)
            // The signature covers the key: the captured request under a fresh key is refused,
            // and makes no conversation.
            for fresh in ["retry-2", "retry-3"] {
                let (status, _, _) = try await h.raw(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"keyed"}"#,
                                                     headers: keyed.merging(["Idempotency-Key": fresh]) { $1 })
                #expect(status == .unauthorized)
            }
            // Nor can a key be added to a request signed without one.
            #expect(try await h.raw(.post, "/v1/conversations", body: body, headers: headers.merging(["Idempotency-Key": "added"]) { $1 }).0 == .unauthorized)
            let (_, after, _) = try await h.signed(.get, "/v1/conversations", device: device)
            #expect(after["conversations"]?.arrayValue?.count == 2)
        }
    }

    /// A device that lost its token proves nothing when it registers again, so it starts a new,
    /// empty inbox, under the same id, in every app; one that still holds its token keeps its inbox.
    @Test("after a 401 the SDK registers again once, keeping its id: without its token, as a new identity with an empty inbox")
    func reRegistration() async throws {
        try await CutiEHarness.withServer { h in
            try await h.environment.database.transaction { db in
                _ = try await CutiEApp.create(id: "app_signed", name: "Signed", bundleID: "com.example.signed", apnsEnvironment: "sandbox",
                                              requireSignedRequests: true, now: Date(), in: db)
            }
            for app in ["app_sandbox", "app_signed"] {
                let phone = h.device(app: app)
                _ = try await phone.cutie.createConversation(category: .question, message: "Hello?")
                let firstID = try #require(phone.cutie.deviceID)
                // Support revokes the device's tokens: the device registers again under its id.
                try await h.environment.database.transaction { db in try await db.raw("UPDATE cutie_device_tokens SET revoked_at = 1").run() }
                #expect(try await phone.cutie.getConversations().isEmpty)
                #expect(phone.cutie.deviceID == firstID)
                _ = try await phone.cutie.createConversation(category: .question, message: "Again?")
                #expect(try await phone.cutie.getConversations().count == 1)
            }
        }
    }

    @Test("another group's or app's device sees 404, never the conversation")
    func isolation() async throws {
        try await CutiEHarness.withServer { h in
            _ = try await h.environment.database.transaction { db in
                try await CutiEApp.create(id: "app_other", name: "Other", bundleID: "com.example.other", apnsEnvironment: "sandbox", now: h.server.clock.now, in: db)
            }
            let owner = h.device()
            let id = try await owner.cutie.createConversation(category: .bug, message: "Private")
            let stranger = try await h.register()
            let otherApp = try await h.register(app: "app_other")
            for device in [(stranger, "app_sandbox"), (otherApp, "app_other")] {
                #expect(try await h.signed(.get, "/v1/conversations/\(id)", device: device.0, app: device.1).0 == .notFound)
                #expect(try await h.signed(.post, "/v1/conversations/\(id)/messages", body: #"{"message":"hi"}"#, device: device.0, app: device.1).0 == .notFound)
                #expect(try await h.signed(.post, "/v1/conversations/\(id)/messages/mark-all-read", device: device.0, app: device.1).0 == .notFound)
                let (_, list, _) = try await h.signed(.get, "/v1/conversations", device: device.0, app: device.1)
                #expect(list["conversations"] == .array([]))
            }
            // Limits: too long, empty, unknown category, attachment not https.
            let device = try await h.register()
            let long = String(repeating: "x", count: 5001)
            #expect(try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"\#(long)"}"#, device: device).0 == .badRequest)
            #expect(try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"  "}"#, device: device).0 == .badRequest)
            #expect(try await h.signed(.post, "/v1/conversations", body: #"{"category":"rant","initial_message":"x"}"#, device: device).0 == .badRequest)
            let (bad, error, _) = try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"x","attachment_url":"http://x.example/a.png"}"#, device: device)
            #expect(bad == .badRequest && error["error"]?.stringValue?.contains("https") == true)
        }
    }

    @Test("linking: shared inbox, single use, expiry, another app's device refused, one winner of parallel confirms")
    func linking() async throws {
        try await CutiEHarness.withServer { h in
            _ = try await h.environment.database.transaction { db in
                try await CutiEApp.create(id: "app_other", name: "Other", bundleID: "com.example.other", apnsEnvironment: "sandbox", now: h.server.clock.now, in: db)
            }
            let phone = h.device()
            let tablet = h.device()
            let id = try await phone.cutie.createConversation(category: .feedback, message: "Love it")
            let tabletOwn = try await tablet.cutie.createConversation(category: .question, message: "From the tablet")
            let token = try await phone.cutie.initiateLinkToken()
            #expect(token.hasExistingGroup == false && token.expiresIn == 600)
            #expect(phone.cutie.linkQRCode(for: token) != nil)
            #expect(try await phone.cutie.checkLinkStatus(token: token.linkToken).status == .pending)
            // Another app's device cannot use it.
            let foreign = try await h.register(app: "app_other")
            #expect(try await h.signed(.post, "/v1/sdk/link/confirm", body: #"{"link_token":"\#(token.linkToken)"}"#, device: foreign, app: "app_other").0 == .notFound)
            // A device cannot confirm its own token.
            await #expect(throws: CutiEError.self) { try await phone.cutie.confirmLink(token: token.linkToken) }
            _ = try await tablet.cutie.confirmLink(token: token.linkToken, deviceName: "iPad")
            #expect(try await phone.cutie.checkLinkStatus(token: token.linkToken).status == .confirmed)
            // One inbox: both see both conversations.
            #expect(Set(try await phone.cutie.getConversations().map(\.id)) == [id, tabletOwn])
            #expect(Set(try await tablet.cutie.getConversations().map(\.id)) == [id, tabletOwn])
            #expect(try await phone.cutie.getLinkedDevices().devices.count == 2)
            // Replayed: refused.
            let third = h.device()
            await #expect { try await third.cutie.confirmLink(token: token.linkToken) } throws: { error in
                guard case .serverError(let status, let message) = error as? CutiEError else { return false }
                return (400..<500).contains(status) && message == "Link token was already used"
            }
            // Expired: refused, and its status says so.
            let late = try await phone.cutie.initiateLinkToken()
            #expect(try await phone.cutie.initiateLinkToken().hasExistingGroup)
            h.server.clock.advance(by: 601)
            #expect(try await phone.cutie.checkLinkStatus(token: late.linkToken).status == .expired)
            await #expect { try await third.cutie.confirmLink(token: late.linkToken) } throws: { error in
                guard case .serverError(let status, let message) = error as? CutiEError else { return false }
                return (400..<500).contains(status) && message == "Link token expired"
            }
            // Parallel confirms of one token: exactly one device joins.
            let contested = try await phone.cutie.initiateLinkToken()
            let devices = (0..<12).map { _ in h.device() }
            for device in devices { _ = try await device.cutie.getConversations() }
            let results = await withTaskGroup(of: Bool.self) { group in
                for device in devices { group.addTask { (try? await device.cutie.confirmLink(token: contested.linkToken)) != nil } }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(results.filter { $0 }.count == 1)
            #expect(try await phone.cutie.getLinkedDevices().devices.count == 3)
            // Unlinking: the tablet keeps an inbox of its own; the shared conversations stay.
            let tabletID = try #require(tablet.cutie.deviceID)
            try await phone.cutie.unlinkDevice(tabletID)
            #expect(try await tablet.cutie.getConversations().isEmpty)
            #expect(try await phone.cutie.getConversations().count == 2)
        }
    }

    @Test("messages with a client id are stored once; a closed conversation takes no more")
    func messageRetries() async throws {
        try await CutiEHarness.withServer { h in
            let phone = h.device()
            let id = try await phone.cutie.createConversation(category: .bug, message: "One")
            let first = try await phone.cutie.sendMessage("Two", to: id, clientId: "c-1")
            let again = try await phone.cutie.sendMessage("Two", to: id, clientId: "c-1")
            #expect(first.id == again.id)
            #expect(try await phone.cutie.getConversation(id: id).messages?.count == 2)
            let admin = try await h.adminSession()
            let (closed, _, _) = try await h.raw(.patch, "/v1/admin/conversations/\(id)", body: #"{"status":"closed"}"#,
                                                  headers: ["Cookie": admin.cookie, "X-CSRF-Token": admin.csrf])
            #expect(closed == .ok)
            await #expect { try await phone.cutie.sendMessage("Three", to: id) } throws: { error in
                guard case .serverError(let status, let message) = error as? CutiEError else { return false }
                return (400..<500).contains(status) && message == "This conversation is closed; start a new one"
            }
        }
    }

    @Test("admin API: sign-in, CSRF, roles, filters, tags, canned responses")
    func admin() async throws {
        try await CutiEHarness.withServer { h in
            let phone = h.device()
            let id = try await phone.cutie.createConversation(category: .bug, message: "Payment failed twice", title: "Payments")
            _ = try await phone.cutie.createConversation(category: .feature, message: "Dark mode please")
            #expect(try await h.raw(.get, "/v1/admin/conversations").0 == .unauthorized)
            #expect(try await h.raw(.post, "/v1/admin/login", body: #"{"email":"nobody@example.com","password":"wrong-password"}"#).0 == .unauthorized)
            let agent = try await h.adminSession()
            let cookie = ["Cookie": agent.cookie]
            // Without the CSRF token, or from another site: refused.
            #expect(try await h.raw(.post, "/v1/admin/conversations/\(id)/messages", body: #"{"message":"x"}"#, headers: cookie).0 == .forbidden)
            #expect(try await h.raw(.post, "/v1/admin/conversations/\(id)/messages", body: #"{"message":"x"}"#,
                                    headers: cookie.merging(["X-CSRF-Token": agent.csrf, "Origin": "https://evil.example"]) { $1 }).0 == .forbidden)
            let auth = cookie.merging(["X-CSRF-Token": agent.csrf]) { $1 }
            // Filters and search.
            let (_, bugs, _) = try await h.raw(.get, "/v1/admin/conversations?category=bug", headers: cookie)
            #expect(bugs["conversations"]?.arrayValue?.count == 1)
            let (_, found, _) = try await h.raw(.get, "/v1/admin/conversations?q=dark%20MODE", headers: cookie)
            #expect(found["conversations"]?.arrayValue?.first?["category"] == .string("feature"))
            let (_, unread, _) = try await h.raw(.get, "/v1/admin/conversations?unread=true", headers: cookie)
            #expect(unread["conversations"]?.arrayValue?.count == 2 && unread["total_unread"]?.int64Value == 2)
            // Assign, prioritise, tag; an internal note is not shown to the user.
            let (changed, body, _) = try await h.raw(.patch, "/v1/admin/conversations/\(id)", body: #"{"priority":"urgent","assigned_admin_id":"\#(agent.id)","status":"in_progress"}"#, headers: auth)
            #expect(changed == .ok && body["priority"] == .string("urgent") && body["assigned_admin_id"] == .string(agent.id))
            #expect(try await h.raw(.post, "/v1/admin/conversations/\(id)/tags", body: #"{"tag":"payments"}"#, headers: auth).0 == .ok)
            let (_, mine, _) = try await h.raw(.get, "/v1/admin/conversations?assignee=me&tag=payments&priority=urgent", headers: cookie)
            #expect(mine["conversations"]?.arrayValue?.count == 1)
            let (noted, _, _) = try await h.raw(.post, "/v1/admin/conversations/\(id)/messages", body: #"{"message":"Check Stripe logs","is_internal_note":true}"#, headers: auth)
            #expect(noted == .created)
            #expect(try await phone.cutie.getConversation(id: id).messages?.count == 1)
            #expect(try await phone.cutie.getUnreadCount() == 0)
            // Canned responses are the owners'; viewers read only.
            #expect(try await h.raw(.post, "/v1/admin/canned-responses", body: #"{"title":"Thanks","body":"Thanks for writing!"}"#, headers: auth).0 == .forbidden)
            let owner = try await h.adminSession(role: "owner")
            #expect(try await h.raw(.post, "/v1/admin/canned-responses", body: #"{"title":"Thanks","body":"Thanks for writing!"}"#,
                                    headers: ["Cookie": owner.cookie, "X-CSRF-Token": owner.csrf]).0 == .created)
            let viewer = try await h.adminSession(role: "viewer")
            #expect(try await h.adminReply(id, "hello", session: viewer).0 == .forbidden)
            // Sign-out ends the session.
            #expect(try await h.raw(.post, "/v1/admin/logout", headers: auth).0 == .ok)
            #expect(try await h.raw(.get, "/v1/admin/me", headers: cookie).0 == .unauthorized)
        }
    }

    @Test("the dashboard's pages: sign in by form, answer by form (CSRF checked)")
    func dashboard() async throws {
        try await CutiEHarness.withServer { h in
            let phone = h.device()
            let id = try await phone.cutie.createConversation(category: .bug, message: "Broken <b>button</b>")
            _ = try await CutiEModule.createAdmin(email: "desk@example.com", name: "Desk", role: "agent", password: "correct-horse-battery", environment: h.environment)
            let (redirect, _, headers) = try await h.raw(.get, "/cutie/admin")
            #expect(redirect == .seeOther && headers[.location] == "/cutie/admin/login")
            let (signed, _, login) = try await h.raw(.post, "/cutie/admin/login", body: "email=desk%40example.com&password=correct-horse-battery",
                                                    headers: ["Content-Type": "application/x-www-form-urlencoded"])
            #expect(signed == .seeOther)
            let cookieHeader = try #require(login[.setCookie])
            #expect(cookieHeader.contains("HttpOnly") && cookieHeader.contains("Secure") && cookieHeader.contains("SameSite=Strict"))
            let cookie = String(cookieHeader.split(separator: ";")[0])
            let page = try await h.client.execute(uri: "/cutie/admin/conversations/\(id)", method: .get, headers: [.cookie: cookie])
            let html = String(buffer: page.body)
            #expect(html.contains("Broken &lt;b&gt;button&lt;/b&gt;"))
            let csrf = try #require(html.range(of: #"name="csrf_token" value="([^"]+)""#, options: .regularExpression).map { String(html[$0]).split(separator: "\"")[3] })
            let form = ["Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie]
            #expect(try await h.raw(.post, "/cutie/admin/conversations/\(id)/reply", body: "csrf_token=wrong&message=hi", headers: form).0 == .forbidden)
            #expect(try await h.raw(.post, "/cutie/admin/conversations/\(id)/reply", body: "csrf_token=\(csrf)&message=On+it", headers: form).0 == .seeOther)
            #expect(try await phone.cutie.getConversation(id: id).messages?.last?.message == "On it")
        }
    }

    @Test("turning require_signed_requests on says, in the admin API and on the dashboard, that Cuti-E SDK devices are refused")
    func signedRequestsWarn() async throws {
        try await CutiEHarness.withServer { h in
            let owner = try await h.adminSession(role: "owner")
            let headers = ["Cookie": owner.cookie, "X-CSRF-Token": owner.csrf]
            let (off, plain, _) = try await h.raw(.patch, "/v1/admin/apps/app_sandbox", body: #"{"require_signed_requests":false}"#, headers: headers)
            #expect(off == .ok && plain["warnings"]?.arrayValue?.isEmpty == true, "\(plain)")
            let (on, warned, _) = try await h.raw(.patch, "/v1/admin/apps/app_sandbox", body: #"{"require_signed_requests":true}"#, headers: headers)
            #expect(on == .ok && warned["warnings"]?.arrayValue?.first?.stringValue?.contains("Cuti-E SDK is refused") == true, "\(warned)")
            let page = try await h.client.execute(uri: "/cutie/admin", method: .get, headers: [.cookie: owner.cookie])
            #expect(String(buffer: page.body).contains("Cuti-E SDK is refused"))
        }
    }
}

import CutiE
@testable import CutiEService
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// Cuti-E's stores on each engine: what is single-use stays single-use under 20 parallel tries,
/// and a counter only grows.
@Suite("Cuti-E store contract")
struct CutiEStoreTests {
    /// The inbox written field by field is byte for byte what `JSONEncoder` writes for it:
    /// every optional field present and absent, text that needs escaping, non-ASCII text.
    @Test func inboxJSONIsTheEncodersJSON() throws {
        func body(_ index: Int, full: Bool) -> ConversationBody {
            ConversationBody(
                conversation_id: ConversationID("conv_\(index)"), app_id: "app_sandbox", device_id: "device_\(index)",
                group_id: full ? "grp_\(index)" : nil, user_id: full ? "u\"\\/\(index)" : nil, user_name: full ? "Zoë 🦊\n\t\u{1}" : nil,
                title: full ? "Crash on </script> & \u{7F}" : nil, category: .allCases[index % ConversationCategory.allCases.count],
                status: .allCases[index % ConversationStatus.allCases.count], priority: .allCases[index % ConversationPriority.allCases.count],
                assigned_admin_id: full ? "adm_1" : nil, app_version: full ? "2.3.1" : nil, os_version: full ? "iOS 18.1" : nil,
                device_model: full ? "iPhone16,2" : nil, message_count: index * 3, unread_count: index % 2, last_message: full ? "ok\r\u{8}\u{C}" : nil,
                tags: nil, messages: nil, created_at: 1_700_000_000_000 + Int64(index), updated_at: -Int64(index))
        }
        for conversations in [[], [body(1, full: true)], [body(2, full: false)], (0..<7).map { body($0, full: $0 % 2 == 0) }] {
            let list = SDKRoutes.ConversationList(conversations: conversations, total_unread: conversations.count)
            let written = try #require(list.inboxData)
            #expect(String(decoding: written, as: UTF8.self) == String(decoding: try JSONCoding.encoder.encode(list), as: UTF8.self))
            #expect(written == (try JSONCoding.encoder.encode(list)))
        }
    }

    /// A sent message's answer written field by field is byte for byte what `JSONEncoder` writes.
    @Test func messageJSONIsTheEncodersJSON() throws {
        for full in [true, false] {
            for sender in SenderType.allCases {
                let message = MessageBody(
                    message_id: "msg_1", conversation_id: ConversationID("conv_1"), sender_type: sender, sender_id: full ? "device_\"1\"" : nil,
                    sender_name: full ? "Zoë 🦊\n\t\u{1}" : nil, message: "Crash on </script> & \u{7F}\r\u{8}\u{C}", message_type: "text",
                    attachment_url: full ? "https://example.com/a.png?x=1&y=2" : nil, is_internal_note: full, client_id: full ? "c-1" : nil,
                    created_at: 1_700_000_000_000, read_at: full ? -5 : nil)
                let written = message.json.data
                #expect(String(decoding: written, as: UTF8.self) == String(decoding: try JSONCoding.encoder.encode(message), as: UTF8.self))
                #expect(written == (try JSONCoding.encoder.encode(message)))
            }
        }
    }

    /// Two registered devices of the sandbox app, each in a group of its own.
    func devices(_ env: ServerEnvironment) async throws -> (first: (device: String, group: String), second: (device: String, group: String)) {
        let store = DeviceStore()
        let now = env.now().epochMillis
        return try await env.database.transaction { db in
            let first = ("device_" + UUID().uuidString, RandomID.make("grp")), second = ("device_" + UUID().uuidString, RandomID.make("grp"))
            for (device, group) in [first, second] {
                try await store.register(app: "app_sandbox", device: device, claimedID: device, group: group, name: nil, now: now, in: db)
            }
            return (first, second)
        }
    }

    func parallel(_ count: Int, _ env: ServerEnvironment, _ attempt: @escaping @Sendable (any DatabaseSession) async throws -> Bool) async throws -> Int {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<count { group.addTask { try await env.database.transaction { db in try await attempt(db) } } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
    }

    @Test("a link token is confirmed once, and the confirming device joins the group", arguments: TestEngines.all)
    func linkTokenConfirmsOnce(engine: DatabaseEngine) async throws {
        try await CutiEHarness.withServer(engine: engine) { h in
            let env = h.environment
            let (maker, joiner) = try await devices(env)
            let store = LinkStore()
            let now = env.now().epochMillis
            try await env.database.transaction { db in
                try await store.createToken(hash: "h1", app: "app_sandbox", device: maker.device, group: maker.group, now: now, expires: now + 60_000, in: db)
            }
            #expect(try await parallel(20, env) { db in try await store.confirm(hash: "h1", by: joiner.device, now: now, in: db) } == 1)
            try await env.database.transaction { db in
                try await store.join(app: "app_sandbox", device: joiner.device, from: joiner.group, to: maker.group, name: "iPad", now: now, in: db)
            }
            let (token, members) = try await env.database.read { db in
                (try await store.token(hash: "h1", in: db), try await store.members(app: "app_sandbox", group: maker.group, in: db))
            }
            #expect(token?.state == .confirmed && token?.confirmedDeviceID == joiner.device && token?.confirmedDeviceName == "iPad")
            #expect(Set(members.map(\.deviceID)) == [maker.device, joiner.device])
            #expect(members.first { $0.deviceID == joiner.device }?.linkedAt == now && members.first { $0.deviceID == maker.device }?.linkedAt == nil)
            try await env.database.transaction { db in try await store.unlink(app: "app_sandbox", device: joiner.device, now: now, in: db) }
            #expect(try await env.database.read { db in try await store.groupSize(maker.group, in: db) } == 1)
        }
    }

    @Test("an attest challenge is spent once; an assertion counter only grows", arguments: TestEngines.all)
    func challengesAndCounters(engine: DatabaseEngine) async throws {
        try await CutiEHarness.withServer(engine: engine) { h in
            let env = h.environment
            let (device, other) = try await devices(env)
            let store = AttestStore()
            let now = env.now().epochMillis
            try await env.database.transaction { db in
                try await store.openChallenge("c1", app: "app_sandbox", device: device.device, now: now, expires: now + 60_000, in: db)
                try await store.storeKey(app: "app_sandbox", device: device.device, keyID: "k1", publicKey: "pk", environment: "development",
                                         receiptBytes: 0, now: now, in: db)
            }
            #expect(try await env.database.read { db in try await store.openChallenges(app: "app_sandbox", device: device.device, now: now, in: db) } == ["c1"])
            #expect(try await parallel(20, env) { db in try await store.spendChallenge("c1", app: "app_sandbox", device: device.device, now: now, in: db) } == 1)
            // The same counter sent 20 times at once is taken once; a lower one never.
            #expect(try await parallel(20, env) { db in try await store.storeCounter(5, app: "app_sandbox", device: device.device, now: now, in: db) } == 1)
            #expect(try await env.database.transaction { db in try await store.storeCounter(4, app: "app_sandbox", device: device.device, now: now, in: db) } == false)
            let (key, owner, none) = try await env.database.read { db in
                (try await store.attestedKey(app: "app_sandbox", device: device.device, in: db), try await store.owner(ofKey: "k1", in: db),
                 try await store.attestedKey(app: "app_sandbox", device: other.device, in: db))
            }
            #expect(key?.signCount == 5 && owner?.device == device.device && none == nil)
        }
    }

    @Test("an admin e-mail has one account; a session ends at its expiry and with a disabled account; tags are a set",
          arguments: TestEngines.all)
    func adminsSessionsAndTags(engine: DatabaseEngine) async throws {
        try await CutiEHarness.withServer(engine: engine) { h in
            let env = h.environment
            let store = AdminStore()
            let now = env.now().epochMillis
            let sam = Admin(id: RandomID.make("adm"), email: "sam@example.com", name: "Sam", role: "agent")
            let twin = Admin(id: RandomID.make("adm"), email: "sam@example.com", name: "Other Sam", role: "owner")
            let (first, second) = try await env.database.transaction { db in
                (try await store.createAdmin(sam, passwordHash: "h", now: now, in: db), try await store.createAdmin(twin, passwordHash: "h", now: now, in: db))
            }
            #expect(first && !second)
            try await env.database.transaction { db in
                try await store.startSession(idHash: "s1", admin: sam.id, csrfToken: "c", now: now, expires: now + 1_000, in: db)
            }
            let (live, expired) = try await env.database.read { db in
                (try await store.session(idHash: "s1", now: now, in: db), try await store.session(idHash: "s1", now: now + 1_000, in: db))
            }
            #expect(live?.admin.id == sam.id && live?.csrfToken == "c" && expired == nil)
            try await env.database.transaction { db in try await db.raw("UPDATE cutie_admins SET disabled_at = \(bind: now) WHERE id = \(bind: sam.id)").run() }
            let (disabled, active) = try await env.database.read { db in
                (try await store.session(idHash: "s1", now: now, in: db), try await store.isActiveAdmin(sam.id, in: db))
            }
            #expect(disabled == nil && !active)

            let conversation = ConversationID(try await h.device().cutie.createConversation(category: .bug, message: "It crashes"))
            let tags = try await env.database.transaction { db in
                try await store.addTag("crash", to: conversation, in: db)
                try await store.addTag("crash", to: conversation, in: db)
                try await store.addTag("ios", to: conversation, in: db)
                try await store.removeTag("ios", from: conversation, in: db)
                return try await store.tags(of: conversation, in: db)
            }
            #expect(tags.map(\.tag_name) == ["crash"])
            #expect(try await env.database.read { db in try await store.conversationExists(conversation, in: db) })
        }
    }
}

import Foundation
import HTTPTypes
import MyCHIPs
import PurseDatabase
import PurseFormats
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

@Suite("MyCHIPs provider: views, where forms, language data, notices, restarts")
struct ChipsProviderTests {
    /// A raw websocket logged in with a ticket, for frames the client core would never send.
    static func rawSocket(_ provider: ChipsProvider, user: String) async throws -> any WebSocketConnection {
        let ticket = try await provider.ticket(for: user)
        let key = ConnectionKey()
        let url = URL(string: "ws://127.0.0.1:\(provider.port)/?user=\(user)&token=\(ticket.token)&pub=\(key.loginPub)")!
        return try await NIOWebSocketTransport().connect(to: url, headerFields: [:])
    }

    static func next(_ iterator: inout AsyncThrowingStream<String, any Error>.AsyncIterator) async throws -> JSONValue {
        let text = try #require(try await iterator.next())
        return try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
    }

    @Test("malformed frames get error frames and the connection goes on")
    func malformedFrames() async throws {
        try await ChipsProvider.with { provider in
            let socket = try await Self.rawSocket(provider, user: "frank")
            var replies = socket.messages.makeAsyncIterator()
            let cases: [(String, String)] = [
                ("not json at all", "!wm.lang:badJSON"),
                (#"[1,2,3]"#, "!wm.lang:badRequest"),
                (#"{"view":"mychips.users_v_me","action":"select"}"#, "!wm.lang:badID"),
                (#"{"id":1,"action":"select"}"#, "!wm.lang:badView"),
                (#"{"id":2,"view":"mychips.secret_v","action":"select"}"#, "42P01"),
                (#"{"id":3,"view":"mychips.users_v_me","action":"explode"}"#, "!wm.lang:badAction"),
                (#"{"id":4,"view":"mychips.users_v_me","action":"select","where":["username ; drop table"]}"#, "!wm.lang:badOperator"),
                (#"{"id":5,"view":"mychips.users_v_me","action":"select","fields":["password"]}"#, "42703"),
                (#"{"id":6,"view":"mychips.users_v_me","action":"delete","where":{"id":"p1000"}}"#, "42501"),
                (#"{"id":7,"view":"mychips.users_v_me","action":"update","fields":{"ent_name":"X"}}"#, "!wm.lang:badWhere"),
                (#"{"id":8,"view":"mychips.users_v_me","action":"tuple","where":{"username":"nobody"}}"#, "!wm.lang:badTuples"),
                ("{\"id\":9,\"view\":\"x\",\"action\":\"select\",\"pad\":\"" + String(repeating: "a", count: 800_000) + "\"}", "!wm.lang:tooLarge"),
            ]
            for (frame, code) in cases {
                try await socket.send(frame)
                let reply = try await Self.next(&replies)
                #expect(reply["error"]?["code"]?.stringValue == code, "\(frame.prefix(60)) → \(JavaScriptJSON.stringify(reply).prefix(200))")
            }
            try await socket.send(#"{"id":"last","view":"base.language_v","action":"select","fields":["code"]}"#)
            let reply = try await Self.next(&replies)
            #expect(reply["id"] == "last" && reply["data"]?.arrayValue?.count == 2)
            // `fields: ["*"]`, as the real app asks: every column.
            try await socket.send(#"{"id":"all","view":"base.language_v","action":"select","fields":["*"]}"#)
            let all = try await Self.next(&replies)
            let row = all["data"]?.arrayValue?.first
            #expect(all["id"] == "all" && row?["code"] != nil && (row?.objectValue?.count ?? 0) > 1, "\(JavaScriptJSON.stringify(all).prefix(200))")
            await socket.close()
        }
    }

    /// Numbers past bigint in a where form (1e19 and 1e400 are whole doubles; Int64(1e19) traps)
    /// and in a text column's refusal message, answered as PostgreSQL would; the socket goes on.
    @Test("numbers past bigint and deep nesting in where forms: error frames, no crash", arguments: TestEngines.all)
    func hostileNumbers(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let socket = try await Self.rawSocket(provider, user: "hank")
            var replies = socket.messages.makeAsyncIterator()
            let deep = String(repeating: #"{"items":["#, count: 400) + #""code = eng""# + String(repeating: "]}", count: 400)
            let frames: [(String, String?)] = [
                (#"{"id":1,"view":"mychips.tallies_v_me","action":"select","where":{"tally_seq":1e19}}"#, "22003"),
                (#"{"id":2,"view":"mychips.tallies_v_me","action":"select","where":{"tally_seq":1e400}}"#, "22003"),
                (#"{"id":3,"view":"mychips.tallies_v_me","action":"select","where":{"tally_seq":-1e400}}"#, "22003"),
                (#"{"id":4,"view":"mychips.tallies_v_me","action":"select","where":{"tally_seq":2.5}}"#, "22P02"),
                (#"{"id":5,"view":"mychips.tallies_v_me","action":"select","where":{"tally_seq":9223372036854775808}}"#, nil),
                (#"{"id":6,"view":"mychips.tallies_v_me","action":"select","where":{"comment":1e20}}"#, nil),
                (#"{"id":7,"view":"mychips.tallies_v_me","action":"select","where":[["tally_seq","=",-9223372036854775809]]}"#, nil),
                (#"{"id":8,"view":"base.language_v","action":"select","where":"# + deep + "}", nil),
                (#"{"id":9,"view":"mychips.chits_v_me","action":"insert","fields":{"chit_uuid":"7b1f1c1e-3f61-4d5e-9e1a-2b2c3d4e5f60","units":1e400,"request":"good"}}"#, nil),
                (#"{"id":10,"view":"mychips.chits_v_me","action":"insert","fields":{"chit_uuid":"7b1f1c1e-3f61-4d5e-9e1a-2b2c3d4e5f61","units":5,"request":"good","chit_date":"2025-11-24T16:00:00.1234567890123456789012345Z"}}"#, nil),
            ]
            for (frame, code) in frames {
                try await socket.send(frame)
                let reply = try await Self.next(&replies)
                let error = reply["error"]?["code"]?.stringValue
                if let code {
                    #expect(error == code, "\(frame.prefix(100)) → \(JavaScriptJSON.stringify(reply).prefix(200))")
                } else {
                    #expect(reply["data"] != nil || error != nil, "\(frame.prefix(100)) → \(JavaScriptJSON.stringify(reply).prefix(200))")
                }
            }
            try await socket.send(#"{"id":"last","view":"base.language_v","action":"select","fields":["code"]}"#)
            let reply = try await Self.next(&replies)
            #expect(reply["id"] == "last" && reply["data"]?.arrayValue?.count == 2)
            // `fields: ["*"]`, as the real app asks: every column.
            try await socket.send(#"{"id":"all","view":"base.language_v","action":"select","fields":["*"]}"#)
            let all = try await Self.next(&replies)
            let row = all["data"]?.arrayValue?.first
            #expect(all["id"] == "all" && row?["code"] != nil && (row?.objectValue?.count ?? 0) > 1, "\(JavaScriptJSON.stringify(all).prefix(200))")
            await socket.close()
        }
    }

    @Test("where in all its forms, order, limit, fields, and a table function with params", arguments: TestEngines.all)
    func whereForms(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let session = provider.client()
            try await session.connection.connect(ticket: try await provider.ticket(for: "gina"))
            let forms: [JSONValue] = [
                ["code = spa"],
                [["code", "=", "spa"]],
                ["left": "code", "oper": "=", "entry": "spa"],
                ["code": "spa"],
                ["items": [["left": "code", "oper": "=", "entry": "spa"], ["left": "iso_2", "oper": "~", "entry": "^e"]], "and": true],
            ]
            for form in forms {
                let rows = try await session.select("base.language_v", fields: ["code"], where: form)
                #expect(rows == [["code": "spa"]], "\(JavaScriptJSON.stringify(form))")
            }
            let either = try await session.select("base.language_v", fields: ["code"],
                                                  where: ["items": [["code = eng"], ["code = spa"]], "and": false], order: [["field": "code", "asc": false]])
            #expect(either == [["code": "spa"], ["code": "eng"]])
            #expect(try await session.select("base.language_v", fields: ["code"], order: ["code"], limit: 1) == [["code": "eng"]])
            #expect(try await session.select("base.language_v", where: ["tables >= 3"]).count == 2)
            await #expect(throws: ChipsError.self) { _ = try await session.select("base.language_v", where: ["tables > many"]) }

            let messages = try await session.select("wm.messages", order: ["code"], table: "wm.messages(text,text)", params: ["mychips.users_v_me", "spa"])
            #expect(messages.first?["code"] == "BDT" && messages.first?["title"] == "Fecha incorrecta")
            await connectionDone(session)
        }
    }

    @Test("profile edits are checked as the real schema checks them, and notify the user's other connections", arguments: TestEngines.all)
    func profileEdits(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let store = InMemorySecureStore()
            let phone = provider.client(store: store)
            try await phone.connection.connect(ticket: try await provider.ticket(for: "hank", name: "Hill"))
            // The tablet uses the phone's key, exported and imported (one key per user, as in MyCHIPs).
            let tabletStore = InMemorySecureStore()
            let phoneKeychain = ChipsKeychain(store: store)
            try await ChipsKeychain(store: tabletStore).importKey(jwk: try #require(try await phoneKeychain.key()).privateJWK,
                                                                  account: try #require(try await phoneKeychain.account()))
            let tablet = provider.client(store: tabletStore)
            try await tablet.connection.connect()
            let notices = await tablet.connection.notifications()

            let updated = try await phone.updateProfile([
                "fir_name": "Hank", "born_date": "1960-02-29", "country": "US",
                "connect": [["media": "email", "address": "hank@example.com"]],
                "place": [["type": "mail", "address": "84 Rainey St", "city": "Arlen", "state": "TX"]],
            ])
            #expect(updated.displayName == "Hank Hill" && updated.birthDate == "1960-02-29" && updated.connect.first?["address"] == "hank@example.com")
            #expect(updated.certificate["identity"]?["birth"]?["date"] == "1960-02-29")
            var iterator = notices.makeAsyncIterator()
            let notice = await iterator.next()
            // On the channel the login named (`db=["mu_<user>"]`).
            #expect(notice?.channel == "mu_\(updated.username)" && notice?.data["target"] == "users")

            let refusals: [([String: JSONValue], String)] = [
                (["born_date": "1961-02-29"], "22007"),
                (["country": "usa"], "!mychips.users_v_me:CTY"),
                (["ent_name": .null], "!mychips.users_v_me:NAM"),
                (["connect": [["media": "pigeon", "address": "roof"]]], "!mychips.users_v_me:CON"),
                (["peer_cuid": "someone-else"], "42501"),
                (["language": "xyz"], "23503"),
                (["no_such": 1], "42703"),
            ]
            for (fields, code) in refusals {
                do {
                    _ = try await phone.updateProfile(fields)
                    Issue.record("\(fields) was accepted")
                } catch let error as ChipsError {
                    #expect(error.code == code, "\(fields): \(error)")
                }
            }
            // Nothing of the refused edits stuck.
            #expect(try await phone.me() == updated)
            await connectionDone(phone)
            await connectionDone(tablet)
        }
    }

    @Test("a new ticket moves the user to a new device: its key replaces the old device's")
    func newDevice() async throws {
        try await ChipsProvider.with { provider in
            let oldStore = InMemorySecureStore()
            let old = provider.client(store: oldStore)
            try await old.connection.connect(ticket: try await provider.ticket(for: "ivan"))
            let ticket = try await old.ticketForNewDevice()
            #expect(ticket.user == "ivan" && ticket.port == provider.port + 1)
            await old.connection.disconnect()
            let new = provider.client()
            try await new.connection.connect(ticket: ticket)
            #expect(try await new.me().username == "ivan")
            await #expect(throws: ChipsError.self) { try await provider.client(store: oldStore).connection.connect() }
            await connectionDone(new)
        }
    }

    @Test("labels by language with English where a translation is missing; a language added on the provider needs no client change", arguments: TestEngines.all)
    func languages(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let session = provider.client()
            try await session.connection.connect(ticket: try await provider.ticket(for: "ida"))
            let english = try await session.texts(ChipsSession.usersView)
            #expect(english.title == "My Profile" && english.label("born_date") == "Birth Date")
            let meta = try await session.meta(ChipsSession.usersView)
            #expect(meta.primaryKey == ["id"] && meta.column("born_date")?.type == "date" && meta.column("ent_name")?.required == true)
            #expect(meta.column("peer_cuid")?.writable == false && meta.column("country")?.writable == true)

            let loaded = try await session.setLanguage("spa")
            #expect(loaded[ChipsSession.usersView]?.label("born_date") == "Nacido el")
            #expect(try await session.me().language == "spa")

            // An operator adds Finnish with one translated label.
            let database = try #require(provider.environment?.database)
            try await database.transaction { db in
                try await db.raw("INSERT INTO chips_languages (code, iso_2, eng_name, name) VALUES ('fin', 'fi', 'Finnish', 'Suomi')").run()
                try await db.raw("""
                    INSERT INTO chips_lang (obj, language, title, help, columns, messages)
                    VALUES ('mychips.users_v_me', 'fin', 'Oma profiili', 'Oma käyttäjätietueesi', '[{"col":"ent_name","title":"Sukunimi","help":""}]', '[]')
                    """).run()
            }
            #expect(try await session.languages().map(\.code) == ["eng", "fin", "spa"])
            let finnish = try await session.texts(ChipsSession.usersView, language: "fin")
            #expect(finnish.title == "Oma profiili" && finnish.label("ent_name") == "Sukunimi" && finnish.label("born_date") == "Birth Date")
            await connectionDone(session)
        }
    }

    @Test("the provider restarts under a connected client: pending requests fail, the client logs in again by signature")
    func providerRestart() async throws {
        try await ChipsProvider.with { provider in
            let session = provider.client()
            try await session.connection.connect(ticket: try await provider.ticket(for: "jill"))
            #expect(try await session.me().username == "jill")
            let states = await session.connection.states()
            let stopping = Task { await provider.stop() }
            // Requests in flight when the provider goes away end in errors, never hang.
            let pending = Task { try await session.connection.request(view: ChipsSession.usersView, action: "select") }
            if case .success = await pending.result {} // answered before the stop: also fine
            await stopping.value
            #expect(try await eventually { await session.connection.state != .connected })
            await #expect(throws: ChipsError.disconnected) { _ = try await session.me() }
            try await provider.start()
            #expect(try await eventually(10) { await session.connection.state == .connected })
            #expect(try await session.me().username == "jill")
            var seen: [ChipsConnectionState] = []
            for await state in states {
                seen.append(state)
                if state == .connected && seen.count > 1 { break }
            }
            #expect(seen.contains(.disconnected))
            await connectionDone(session)
        }
    }
}

func connectionDone(_ session: ChipsSession) async {
    await session.connection.disconnect()
}

@Suite("MyCHIPs notices across replicas")
struct ChipsReplicaTests {
    @Test("on PostgreSQL a notice reaches the user's connection on another replica (LISTEN/NOTIFY), once", arguments: TestEngines.all.filter { $0 == .postgres })
    func crossReplicas(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { first in
            let second = try ChipsProvider(replicaOf: first)
            try await second.start()
            do {
                let phone = first.client()
                try await phone.connection.connect(ticket: try await first.ticket(for: "olga"))
                let tablet = second.client()
                try await tablet.connection.connect(ticket: try await second.ticket(for: "olga"))
                let onTablet = await tablet.connection.notifications()
                let onPhone = await phone.connection.notifications()
                _ = try await phone.updateProfile(["fir_name": "Olga"])
                var tabletNotices = onTablet.makeAsyncIterator()
                var phoneNotices = onPhone.makeAsyncIterator()
                #expect(await tabletNotices.next()?.data["fields"] == ["fir_name"])
                #expect(await phoneNotices.next()?.data["fields"] == ["fir_name"])
                // Exactly once: the next notice each side sees is the next edit's.
                _ = try await tablet.updateProfile(["fir_name": "Olga B."])
                #expect(await tabletNotices.next()?.data["time"] != nil)
                #expect(await phoneNotices.next()?.data["fields"] == ["fir_name"])
                await connectionDone(phone)
                await connectionDone(tablet)
            } catch {
                await second.dispose()
                throw error
            }
            await second.dispose()
        }
    }
}

@Suite("MyCHIPs rendered rows")
struct ChipsRenderedRowTests {
    @Test("an edit made through another server on the same database shows at the next read")
    func editsThroughAnotherServer() async throws {
        try await ChipsProvider.with { first in
            let second = try ChipsProvider(replicaOf: first)
            try await second.start()
            do {
                let store = InMemorySecureStore()
                let here = first.client(store: store)
                try await here.connection.connect(ticket: try await first.ticket(for: "pia", name: "Old"))
                #expect(try await here.me().surname == "Old")
                let there = second.client(store: store)
                try await there.connection.connect()
                _ = try await there.updateProfile(["ent_name": "New"])
                #expect(try await here.me().surname == "New")
                await connectionDone(here)
                await connectionDone(there)
            } catch {
                await second.dispose()
                throw error
            }
            await second.dispose()
        }
    }
}

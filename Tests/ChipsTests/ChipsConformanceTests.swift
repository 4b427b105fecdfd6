import ChipsProtocol
import Crypto
import Foundation
import HTTPTypes
import MyCHIPs
import PurseDatabase
import PurseTestSupport
import PurseFormats
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import PurseServer
import SQLKit
import Synchronization
import Testing

/// `Fixtures/chark-journey.log`: the real MyCHIPs provider (gotchoices/MyCHIPs with wyseman)
/// answering the requests the real MyCHIPs app sends, for two users from publishing their
/// signing keys to a settled chain. Lines are `[A] >> request`, `[A] << answer`,
/// `[A] NOTIFY notice` and `[A] connect URL`.
struct JourneyLog {
    enum Kind: Equatable { case connect, request, answer, notice }

    struct Line {
        var user: String
        var kind: Kind
        var json: JSONValue
    }

    var lines: [Line]

    static func load() throws -> JourneyLog {
        let url = try #require(Bundle.module.url(forResource: "chark-journey", withExtension: "log", subdirectory: "Fixtures"))
        var lines: [Line] = []
        for text in try String(contentsOf: url, encoding: .utf8).split(separator: "\n") where text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { continue }
            let user = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(close, offsetBy: 2)...]
            let kind: Kind
            let body: Substring
            if rest.hasPrefix(">> ") { kind = .request; body = rest.dropFirst(3) }
            else if rest.hasPrefix("<< ") { kind = .answer; body = rest.dropFirst(3) }
            else if rest.hasPrefix("NOTIFY ") { kind = .notice; body = rest.dropFirst(7) }
            else if rest.hasPrefix("connect ") { lines.append(Line(user: user, kind: .connect, json: .string(String(rest.dropFirst(8))))); continue }
            else { continue }
            lines.append(Line(user: user, kind: kind, json: try StrictJSON.parse(Array(body.utf8))))
        }
        return JourneyLog(lines: lines)
    }

    /// Each request with the answer that followed it for the same user.
    var exchanges: [(request: Line, answer: Line)] {
        var result: [(Line, Line)] = []
        for (index, line) in lines.enumerated() where line.kind == .request {
            if let answer = lines[(index + 1)...].first(where: { $0.user == line.user && $0.kind == .answer }) { result.append((line, answer)) }
        }
        return result
    }

    func notices(of user: String) -> [JSONValue] { lines.filter { $0.user == user && $0.kind == .notice }.map(\.json) }

    /// Where `ours` does not have the recorded shape: every member the recording has, with the
    /// same JSON type where both are not null, at every depth — except inside certificates and
    /// the users' own data, whose members depend on what each user entered.
    static func shapeDifferences(recorded: JSONValue, ours: JSONValue, path: String = "") -> [String] {
        func kind(_ value: JSONValue) -> String { value.typeName }
        if recorded.isNull || ours.isNull { return [] }
        guard kind(recorded) == kind(ours) else { return ["\(path): \(kind(ours)) where the real provider has \(kind(recorded))"] }
        let userData: Set<String> = ["cert", "hold_cert", "part_cert", "identity", "place", "connect", "conn_pub", "user_psig", "reference", "ref",
                                     "hold_terms", "part_terms", "hold_sets", "part_sets"]
        switch (recorded, ours) {
        case (.object(let expected), .object(let actual)):
            var problems: [String] = []
            for (key, value) in expected {
                guard let mine = actual[key] else { problems.append("\(path).\(key): missing"); continue }
                if userData.contains(key) {
                    if kind(value) != kind(mine), !value.isNull, !mine.isNull { problems.append("\(path).\(key): \(kind(mine)) where the real provider has \(kind(value))") }
                    continue
                }
                problems += shapeDifferences(recorded: value, ours: mine, path: path + "." + key)
            }
            return problems
        case (.array(let expected), .array(let actual)):
            guard let first = expected.first, let mine = actual.first else { return [] }
            return shapeDifferences(recorded: first, ours: mine, path: path + "[0]")
        default:
            return []
        }
    }
}

@Suite("MyCHIPs conformance: the real app's journey, recorded from a real provider")
struct ChipsConformanceTests {
    /// The recording's tally and chain, reproduced here: the same digests and chain hashes from
    /// our code, both partners' tally signatures and the chits' signatures verified.
    @Test("the recorded chain: tally digest, signatures and chain hashes as the real provider made them")
    func recordedChain() throws {
        let log = try JourneyLog.load()
        let exchanges = log.exchanges
        func answer(_ id: String) throws -> JSONValue { try #require(exchanges.first { $0.request.json["id"] == .string(id) }?.answer.json["data"]) }
        func request(_ id: String) throws -> JSONValue { try #require(exchanges.first { $0.request.json["id"] == .string(id) }?.request.json) }
        let tallyRow = try #require(try answer("A9").arrayValue?.first)
        let coreJSON = try #require(tallyRow["json_core"])
        let core = try #require(TallyCore(json: coreJSON), "the real json_core reads as our record, member for member")
        #expect(core.memo == "Garden work" && core.revision == 1 && core.agree == ["source": "byZENT6Lqdub9ew8tQnvyTGgVduELz-j6zfjHM-tgs8"])
        let digest = try #require(ChipsDigest.text(tallyRow["digest"]))
        #expect(core.digest == digest)
        // A (stock) signed the record it read (A6), B (foil) the same record (B4).
        #expect(core.isSigned(by: .stock, signature: try request("A6")["fields"]?["hold_sig"]?.stringValue))
        #expect(core.isSigned(by: .foil, signature: try request("B4")["fields"]?["hold_sig"]?.stringValue))
        #expect(!core.isSigned(by: .stock, signature: try request("B4")["fields"]?["hold_sig"]?.stringValue))
        let tally = try ChipsTally(row: tallyRow)
        #expect(tally.net == 15_500 && tally.netPending == 15_500 && tally.signatures == (true, true))

        let chits = try #require(try answer("A10").arrayValue).map(ChipsChit.init(row:))
        #expect(chits.count == 2)
        for chit in chits {
            #expect(chit.core.isSigned(by: core.half(chit.core.by).cert["public"], signature: chit.signature), "chit \(chit.index) signed by its issuer")
        }
        let links = chits.compactMap(\.link)
        #expect(links.count == 2)
        let end = try ChipsChain.verify(links, tallyDigest: digest)
        #expect(end == chits.last?.chainHash)
        #expect(end == "h-tGbU4E3J0QSblr9Gb0YY7nSG4vKH6l_d2LVs7Epxc")
        // B's copy of the chain is the same chain.
        let theirs = try #require(try answer("B10").arrayValue).map(ChipsChit.init(row:))
        #expect(try ChipsChain.verify(theirs.compactMap(\.link), tallyDigest: digest) == end)
    }

    /// Every request of the recording, in order, sent to our provider by two fresh users: each
    /// succeeds and answers in the recorded shape. Ids, keys, tokens and signatures are the
    /// replay's own (signatures made over what our provider answered, as the app makes them);
    /// everything else is sent as recorded. The notices each user receives follow the recorded
    /// ones, state for state, in the recorded shapes.
    @Test("the real app's requests, replayed against our provider: every one answers in the recorded shape; the notices follow",
          arguments: TestEngines.all)
    func replay(engine: DatabaseEngine) async throws {
        let log = try JourneyLog.load()
        try await ChipsProvider.with(engine: engine) { provider in
            let clients = ["A": provider.client(), "B": provider.client()]
            let keys = ["A": SigningKey(), "B": SigningKey()]
            try await clients["A"]!.connection.connect(ticket: try await provider.ticket(for: "james", name: "Madison"))
            try await clients["B"]!.connection.connect(ticket: try await provider.ticket(for: "fran", name: "Lee"))
            let received = ReceivedNotices()
            var listeners: [Task<Void, Never>] = []
            for (user, client) in clients {
                let stream = await client.connection.notifications()
                listeners.append(Task {
                    for await notice in stream where ["tally", "chit"].contains(notice.data["target"]?.stringValue ?? "") {
                        received.append(notice.data, for: user)
                    }
                })
            }
            // Recorded values → the replay's own.
            var ours: [String: String] = ["p1001": try await clients["A"]!.me().id, "p1002": try await clients["B"]!.me().id]
            var answers: [String: JSONValue] = [:]
            func substituted(_ value: JSONValue) -> JSONValue {
                switch value {
                case .string(let text): return .string(ours[text] ?? text)
                case .array(let items): return .array(items.map(substituted))
                case .object(let members): return .object(members.mapValues(substituted))
                default: return value
                }
            }
            func coreSigned(by user: String, from answer: String) throws -> String {
                let row = try #require(answers[answer]?.arrayValue?.first)
                let json = try #require(row["json_core"])
                let core = try #require(TallyCore(json: json))
                return try keys[user]!.sign(core.signingText)
            }

            for (request, recorded) in log.exchanges {
                guard case .object(var frame) = substituted(request.json), case .string(let id)? = frame["id"],
                      case .string(let view)? = frame["view"], case .string(let action)? = frame["action"] else { Issue.record("a request without id"); continue }
                for member in ["id", "view", "action"] { frame[member] = nil }
                var fields = frame["fields"]?.objectValue ?? [:]
                switch id {
                case "A1", "B1":
                    fields["user_psig"] = try StrictJSON.parse(Array(keys[request.user]!.publicJWK.utf8))
                case "B2":
                    let invite = try #require(answers["A4"]?.arrayValue?.first?["invite"])
                    frame["params"] = [invite]
                case "A6":
                    fields["hold_sig"] = .string(try coreSigned(by: "A", from: "A5"))
                case "B4":
                    fields["hold_sig"] = .string(try coreSigned(by: "B", from: "B3"))
                case "B6":
                    let uuid = UUID().uuidString.lowercased()
                    ours[fields["chit_uuid"]?.stringValue ?? ""] = uuid
                    fields["chit_uuid"] = .string(uuid)
                    let tally = try #require(answers["B5"]?.arrayValue?.first?["tally_uuid"]?.stringValue)
                    let core = ChitCore(tally: TallyID(tally), by: .foil, type: .tran, uuid: ChitID(uuid),
                                        date: try #require(fields["chit_date"]?.stringValue.flatMap(JavaScriptDate.epochMillis)),
                                        units: fields["units"]?.int64Value, reference: fields["reference"], memo: fields["memo"]?.stringValue)
                    fields["signature"] = .string(try keys["B"]!.sign(core.signingText))
                case "B8":
                    let row = try #require(answers["B7"]?.arrayValue?.first)
                    let stored = try #require(row["json_core"])
                    let core = try #require(ChitCore(json: stored))
                    fields["signature"] = .string(try keys["B"]!.sign(core.signingText))
                default:
                    break
                }
                if !fields.isEmpty { frame["fields"] = .object(fields) }
                let answer: JSONValue
                do {
                    answer = try await clients[request.user]!.connection.request(view: view, action: action, frame)
                } catch {
                    Issue.record("\(id) \(action) \(view): \(error)")
                    continue
                }
                answers[id] = answer
                let differences = JourneyLog.shapeDifferences(recorded: recorded.json["data"] ?? .null, ours: answer)
                #expect(differences.isEmpty, "\(id) \(action) \(view): \(differences.joined(separator: "; "))")
                // Values the recording goes on to use.
                switch id {
                case "A2":
                    for (index, row) in (recorded.json["data"]?.arrayValue ?? []).enumerated() {
                        let mine = answer.arrayValue?.first { $0["name"] == row["name"] } ?? answer.arrayValue?[min(index, (answer.arrayValue?.count ?? 1) - 1)]
                        if let real = row["rid"]?.stringValue, let rid = mine?["rid"]?.stringValue { ours[real] = rid }
                    }
                case "A3":
                    if let real = recorded.json["data"]?["tally_uuid"]?.stringValue, let uuid = answer["tally_uuid"]?.stringValue { ours[real] = uuid }
                case "A8":
                    if let real = recorded.json["data"]?["chit_uuid"]?.stringValue, let uuid = answer["chit_uuid"]?.stringValue { ours[real] = uuid }
                default:
                    break
                }
            }

            for user in ["A", "B"] {
                let expected = log.notices(of: user).map { $0["data"] ?? .null }
                _ = try await eventually { received.of(user).count >= expected.count }
                let got = received.of(user)
                #expect(got.map { $0["state"] } == expected.map { $0["state"] }, "\(user)'s notices, state for state")
                for (real, mine) in zip(expected, got) {
                    let differences = JourneyLog.shapeDifferences(recorded: real, ours: mine)
                    #expect(differences.isEmpty, "\(user)'s notice \(real["state"]?.stringValue ?? ""): \(differences.joined(separator: "; "))")
                }
            }
            // The chain both users hold is one chain, and our client verifies it.
            let report = try await clients["A"]!.verifyChain(1)
            #expect(report.links == 2 && report.unsignedChits.isEmpty)
            for listener in listeners { listener.cancel() }
            for client in clients.values { await connectionDone(client) }
        }
    }
}

/// Notices by user, as the replay's listeners receive them.
final class ReceivedNotices: Sendable {
    private let notices = Mutex<[String: [JSONValue]]>([:])

    func append(_ notice: JSONValue, for user: String) { notices.withLock { $0[user, default: []].append(notice) } }
    func of(_ user: String) -> [JSONValue] { notices.withLock { $0[user] ?? [] } }
}

/// A provider that answers from the recording: each request frame gets the recorded answer its
/// view and action (and action name) route to, with the frame's own id.
final class PlaybackProvider: WebSocketTransport, HTTPTransport, Sendable {
    final class Socket: WebSocketConnection, Sendable {
        let messages: AsyncThrowingStream<String, any Error>
        let incoming: AsyncThrowingStream<String, any Error>.Continuation
        let routes: Mutex<[String: JSONValue]>
        let sent = Mutex<[JSONValue]>([])

        init(routes: [String: JSONValue]) {
            self.routes = Mutex(routes)
            (messages, incoming) = AsyncThrowingStream<String, any Error>.makeStream()
        }

        func send(_ text: String) async throws {
            guard case .object(let frame) = try StrictJSON.parse(Array(text.utf8)) else { return }
            sent.withLock { $0.append(.object(frame)) }
            let key = PlaybackProvider.route(frame)
            let id = frame["id"] ?? .null
            if let data = routes.withLock({ $0[key] }) {
                incoming.yield(JavaScriptJSON.object([("id", id), ("data", data)]))
            } else {
                incoming.yield(JavaScriptJSON.object([("id", id), ("error", ["message": .string("no recorded answer for \(key)"), "code": "!wm.lang:badAction"])]))
            }
        }

        func close() async { incoming.finish() }
    }

    static func route(_ frame: [String: JSONValue]) -> String {
        let name = frame["name"]?.stringValue.map { " " + $0 } ?? ""
        return "\(frame["action"]?.stringValue ?? "") \(frame["view"]?.stringValue ?? "")\(name)"
    }

    let socket: Socket

    init(routes: [String: JSONValue]) { socket = Socket(routes: routes) }

    func answer(_ route: String, with data: JSONValue) { socket.routes.withLock { $0[route] = data } }

    func connect(to url: URL, headerFields: HTTPFields) async throws -> any WebSocketConnection { socket }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        TransportResponse(status: 200, body: Data(#"{"ip":"127.0.0.1","date":"2026-11-26T12:03:53.000Z"}"#.utf8))
    }

    var requests: [JSONValue] { socket.sent.withLock { $0 } }
}

extension ChipsConformanceTests {
    static func playback(_ routes: [String: JSONValue]) async throws -> (ChipsSession, PlaybackProvider) {
        let provider = PlaybackProvider(routes: routes)
        let keychain = ChipsKeychain(store: InMemorySecureStore())
        try await keychain.save(ConnectionKey())
        try await keychain.save(ChipsKeychain.Account(host: "127.0.0.1", port: 1025, user: "p1001", secure: false))
        let connection = ChipsConnection(keychain: keychain, transport: provider, http: provider, options: ChipsConnection.Options())
        try await connection.connect()
        return (ChipsSession(connection: connection, preferences: InMemoryPreferences()), provider)
    }

    /// The client core fed the real provider's answers: it reads every recorded answer of the
    /// journey (contracts, the new draft, the invitation, the ticket, each tally copy, the
    /// request, the chits), finds the partner's real signature valid, and verifies the recorded
    /// chain from both partners' copies. The requests it sends take the app's forms.
    @Test("our client core reads the real provider's answers and verifies the recorded chain")
    func clientPlayback() async throws {
        let log = try JourneyLog.load()
        var answers: [String: JSONValue] = [:]
        for (request, answer) in log.exchanges { answers[request.json["id"]?.stringValue ?? ""] = answer.json["data"] ?? .null }
        func row(_ id: String) -> JSONValue { answers[id]?.arrayValue?.first ?? answers[id] ?? .null }

        // A: publishes the signing key (reading the user's record first), contracts, a draft, its invitation.
        let (a, aProvider) = try await Self.playback([
            "select mychips.users_v_me": [answers["A1"] ?? .null], "update mychips.users_v_me": answers["A1"] ?? .null,
            "select mychips.contracts_v": answers["A2"] ?? .null, "insert mychips.tallies_v_me": answers["A3"] ?? .null,
            "action mychips.tallies_v_me invite": answers["A4"] ?? .null, "tuple mychips.tallies_v_me": row("A5"),
        ])
        try await a.publish(signingKey: SigningKey())
        let published = try #require(aProvider.requests.last)
        #expect(published["action"] == "update" && published["where"] == ["user_ent": "p1001"] && published["fields"]?["user_psig"]?["crv"] == "P-521")
        let me = try await a.me()
        #expect(me.id == "p1001" && me.address.cuid == "james_madison" && me.connect.count == 3 && me.place.first?["city"] == "Mytown")
        let contracts = try await a.select(ChipsSession.contractsView, fields: ["top", "name", "title", "language", "host", "rid", "clean"], where: ["top": true])
        #expect(contracts.count == 2 && contracts.allSatisfy { $0["clean"] == true })
        let draft = try await a.createTally(type: .stock, holdTerms: ["call": 30, "limit": 50], partTerms: ["call": 30, "limit": 20], comment: "Garden work")
        #expect(draft.state == "draft" && draft.core.memo == "Garden work" && draft.contract == ["source": "byZENT6Lqdub9ew8tQnvyTGgVduELz-j6zfjHM-tgs8"])
        #expect(draft.net == 0 && draft.partner == nil)
        let invite = try await a.invite(draft.seq)
        #expect(invite.token == "f7c55855ba1a11bd5fed6e26fea364f6" && invite.chad.cuid == "james_madison")
        // The request had the app's form.
        let sent = try #require(aProvider.requests.last)
        #expect(sent["action"] == "action" && sent["name"] == "invite" && sent["data"]?["keys"] == [["tally_seq": 1]])
        // A reads the draft B joined: it is A's to sign, B's certificate in it.
        let joined = try await a.tally(1)
        #expect(joined.state == "P.draft" && joined.needsAction && joined.partner?.cuid == "fran_lee" && joined.partnerName == "Lee, Francis")

        // B: presents the ticket, reads A's offer and finds A's real signature valid.
        let (b, _) = try await Self.playback(["select mychips.ticket_process": answers["B2"] ?? .null, "tuple mychips.tallies_v_me": row("B3")])
        try await b.accept(invite)
        let offer = try await b.tally(1)
        #expect(offer.state == "P.offer" && offer.type == .foil && offer.signatures == (false, true))
        #expect(offer.creditFromPartner == 50_000 && offer.creditToPartner == 20_000)

        // A asks B for 3 CHIPs: the request names the payer's end and the tally, as the app's does.
        aProvider.answer("tuple mychips.tallies_v_me", with: row("A7"))
        aProvider.answer("insert mychips.chits_v_me", with: answers["A8"] ?? .null)
        let request = try await a.request(1, units: 3000, memo: "Mulch")
        #expect(request.net == 3000 && request.core.by == .foil && request.status == .draft)
        let fields = try #require(aProvider.requests.last?["fields"])
        #expect(fields["issuer"] == "foil" && fields["request"] == "pend" && fields["tally_uuid"] == "44e62dc0-c908-40bb-a6b2-6aff97fc0d8f")

        // The end: both copies' chains verify to the same last link; A's balance sheet shows B's debt.
        aProvider.answer("tuple mychips.tallies_v_me", with: row("A9"))
        aProvider.answer("select mychips.tallies_v_me", with: answers["A9"] ?? .null)
        aProvider.answer("select mychips.chits_v_me", with: answers["A10"] ?? .null)
        let report = try await a.verifyChain(1)
        #expect(report.links == 2 && report.unsignedChits.isEmpty && report.checksum == "h-tGbU4E3J0QSblr9Gb0YY7nSG4vKH6l_d2LVs7Epxc")
        let sheet = try await a.balanceSheet()
        #expect(sheet.entries.map(\.net) == [15_500])
        let (bEnd, bProvider) = try await Self.playback(["tuple mychips.tallies_v_me": row("B9"), "select mychips.chits_v_me": answers["B10"] ?? .null])
        #expect(try await bEnd.verifyChain(1).checksum == report.checksum)
        #expect(bProvider.requests.allSatisfy { $0["action"] != "select" || $0["fields"] != nil }, "every select names its fields")
        for session in [a, b, bEnd] { await session.connection.disconnect() }
    }
}

extension ChipsConformanceTests {
    /// What the real app asks at start-up and on its profile and wallet pages (read from
    /// `client/chark/src`: `query_user`, `queryAvailableLanguages`, `useLanguage`, `getPersonal`,
    /// `getComm`, `getAddresses`, `getCountry`, `getUserCert`, `fetchContracts`, `getFile`), each answered
    /// with data in the shape the app reads.
    @Test("the real app's start-up requests all answer", arguments: TestEngines.all)
    func appStartUp(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let app = provider.client()
            try await app.connection.connect(ticket: try await provider.ticket(for: "james", name: "Madison"))
            let entity = try await app.me().id
            _ = try await app.updateProfile(["country": "US", "connect": [["media": "email", "address": "jim@example.com"], ["media": "phone", "address": "901-234-5678"]],
                                             "place": [["type": "mail", "address": "PO Box 3456", "city": "Mytown", "post": "12345", "country": "US"]]])
            func ask(_ action: String, _ view: String, _ members: [String: JSONValue]) async throws -> JSONValue {
                do { return try await app.connection.request(view: view, action: action, members) } catch {
                    Issue.record("\(action) \(view): \(error)")
                    return .null
                }
            }
            #expect(try await ask("select", "base.ent_v", ["table": "base.curr_eid", "params": []]) == [["curr_eid": .string(entity)]])
            let languages = try await ask("select", "base.language_v", ["fields": ["code", "iso_2", "eng_name", "tables"], "where": ["oper": "notnull", "left": "tables"]])
            #expect(languages.arrayValue?.map { $0["code"] } == ["eng", "spa"])
            for view in ["mychips.chark", "mychips.tallies", "mychips.users_v_me", "mychips.tallies_v_me", "mychips.chits_v_me"] {
                let texts = try await ask("lang", view, ["language": "eng"])
                #expect(texts["title"]?.stringValue?.isEmpty == false && texts["columns"]?.arrayValue != nil && texts["messages"]?.arrayValue != nil, "\(view)")
            }
            let personal = try await ask("select", "mychips.users_v_me", ["fields": ["user_ent", "tax_id", "born_date", "country", "cas_name", "peer_cuid", "cert", "ent_type", "ent_name"],
                                                                          "where": ["user_ent": .string(entity)]])
            #expect(personal.arrayValue?.first?["user_ent"] == .string(entity) && personal.arrayValue?.first?["cas_name"]?.stringValue?.isEmpty == false)
            let comm = try await ask("select", "mychips.comm_v_me", ["fields": ["comm_type", "comm_spec", "comm_seq", "comm_prim"], "where": ["comm_ent": .string(entity)],
                                                                      "order": ["field": "crt_date", "asc": false]])
            #expect(comm.arrayValue?.map { $0["comm_spec"] } == ["jim@example.com", "901-234-5678"])
            let addresses = try await ask("select", "mychips.addr_v_me", ["fields": ["addr_ent", "addr_spec", "addr_seq", "addr_type", "city", "state", "country", "pcode"],
                                                                          "where": ["addr_ent": .string(entity)], "order": ["field": "crt_date", "asc": true]])
            #expect(addresses.arrayValue?.first?["city"] == "Mytown" && addresses.arrayValue?.first?["pcode"] == "12345")
            let country = try await ask("select", "base.country_v", ["fields": ["cur_code", "co_name", "co_code"], "where": ["co_code": "US"]])
            #expect(country.arrayValue?.first?["cur_code"] == "USD")
            let cert = try await ask("select", "mychips.user_cert", ["params": [.string(entity)]])
            #expect(cert.arrayValue?.first?["user_cert"]?["chad"]?["cuid"]?.stringValue?.isEmpty == false)
            let contracts = try await ask("select", "mychips.contracts_v", ["fields": ["top", "name", "title", "language", "host", "rid", "clean"], "where": ["top": true]])
            #expect(contracts.arrayValue?.isEmpty == false && contracts.arrayValue?.allSatisfy { $0["clean"] == true } == true)
            // The views and tables the app registers for their labels.
            for view in ["base.comm_v_flat", "base.addr_v", "base.addr_v_flat", "base.exchange", "mychips.users_v_tallies", "base.currency", "base.country_v",
                         "mychips.lifts_v_pay_me"] {
                let texts = try await ask("lang", view, ["language": "spa"])
                #expect(texts["columns"]?.arrayValue?.isEmpty == false, "\(view)")
            }
            // getFile: the avatar, none yet.
            let avatar = try await ask("select", "mychips.file_v_me", ["fields": ["file_ent", "file_fmt", "file_data64"], "where": ["file_ent": .string(entity), "file_prim": true]])
            #expect(avatar == [])
            let fileTexts = try await ask("lang", "mychips.file_v_me", ["language": "eng"])
            #expect(fileTexts["columns"]?.arrayValue?.first { $0["col"] == "file_type" }?["values"]?.arrayValue?.count == 5)
            let currencies = try await ask("select", "base.currency", ["fields": ["cur_code", "cur_name"], "order": ["field": "cur_name", "asc": true]])
            #expect(currencies.arrayValue?.contains { $0["cur_code"] == "EUR" } == true)
            // getCurrencyRate at start-up: the chip action. Without rates, the real query's empty row.
            let unknown = try await ask("action", "mychips.users_v_me", ["name": "chip", "data": ["options": ["curr": "USD", "format": "json"]]])
            #expect(unknown == .object([:]))
            let database = try #require(provider.environment?.database)
            try await database.transaction { db in
                try await db.raw("INSERT INTO chips_exchange (curr, base, rate, sample) VALUES ('XCH', 'USD', '2.47', '2026-11-25'), ('USD', 'USD', '1', '2026-11-25'), ('EUR', 'USD', '0.9212', '2026-11-25')").run()
            }
            let euro = try await ask("action", "mychips.users_v_me", ["name": "chip", "data": ["options": ["curr": "EUR", "format": "json"]]])
            #expect(euro["rate"] == "2.2753" && euro["chip"] == "XCH" && euro["fiat"] == "EUR" && euro["base"] == "USD")
            // A language the provider does not have is an error, as on the real provider.
            await #expect(throws: ChipsError.self) { _ = try await app.connection.request(view: "mychips.chark", action: "lang", ["language": "xyz"]) }
            await connectionDone(app)
        }
    }
}

extension ChipsConformanceTests {
    /// A raw websocket as Wyseman's client opens it: to the ticket's port, `db` naming channels.
    static func wysemanSocket(_ provider: ChipsProvider, user: String, db: [String]?) async throws -> any WebSocketConnection {
        let ticket = try await provider.ticket(for: user)
        var query = "user=\(user)&token=\(ticket.token)&pub=\(ConnectionKey().loginPub)"
        if let db { query += "&db=" + Base64URL.encode(Data(JavaScriptJSON.stringify(.array(db.map(JSONValue.string))).utf8)) }
        return try await NIOWebSocketTransport().connect(to: URL(string: "ws://127.0.0.1:\(ticket.port)/?\(query)")!, headerFields: [:])
    }

    /// Where real clients look: the ticket names the websocket's own port, and `/clientinfo`
    /// answers one port below it (Wyseman's default). Notices go only to the channels the
    /// login's `db` names, under that name, and only the user's own.
    @Test("the websocket has its own port with /clientinfo one below; notices follow the login's db channels")
    func portsAndChannels() async throws {
        try await ChipsProvider.with { provider in
            let ticket = try await provider.ticket(for: "nora")
            #expect(ticket.port == provider.port + 1)
            let info = try await LiveHTTPClient(base: URL(string: "http://127.0.0.1:\(ticket.port - 1)")!).execute(uri: "/clientinfo", method: .get)
            #expect(info.status == .ok)

            let listening = try await Self.wysemanSocket(provider, user: "nora", db: ["mu_nora"])
            let deaf = try await Self.wysemanSocket(provider, user: "nora", db: nil)
            let nosy = try await Self.wysemanSocket(provider, user: "otto", db: ["mu_nora", "mu_p1000"])
            let edit = #"{"id":1,"view":"mychips.users_v_me","action":"update","fields":{"fir_name":"Nora"},"where":{"username":"nora"}}"#
            try await listening.send(edit)
            var heard = listening.messages.makeAsyncIterator()
            var notice: JSONValue?
            for _ in 0..<3 {
                let frame = try StrictJSON.parse(Array(try #require(try await heard.next()).utf8))
                if frame["action"] == "notify" { notice = frame; break }
            }
            #expect(notice?["channel"] == "mu_nora" && notice?["data"]?["target"] == "users")
            // The other two hear nothing: a request of their own is the next frame they get.
            for socket in [deaf, nosy] {
                try await socket.send(#"{"id":2,"view":"base.language_v","action":"select","fields":["code"]}"#)
                var frames = socket.messages.makeAsyncIterator()
                let next = try StrictJSON.parse(Array(try #require(try await frames.next()).utf8))
                #expect(next["id"] == 2 && next["action"] == "select")
            }
            for socket in [listening, deaf, nosy] { await socket.close() }
        }
    }
}

extension ChipsConformanceTests {
    /// `meta` as `wm.table_meta` answers it, which Wyseman's client caches per view.
    @Test("meta has wm.table_meta's shape: cols a count, styles an object, columns with ordinals and values")
    func metaShape() async throws {
        try await ChipsProvider.with { provider in
            let session = provider.client()
            try await session.connection.connect(ticket: try await provider.ticket(for: "mia"))
            let meta = try await session.connection.request(view: ChipsSession.talliesView, action: "meta")
            #expect(meta["obj"] == "mychips.tallies_v_me" && meta["pkey"] == ["tally_ent", "tally_seq"])
            let columns = try #require(meta["columns"]?.arrayValue)
            #expect(meta["cols"] == .int(Int64(columns.count)))
            #expect(meta["styles"]?["display"]?.arrayValue?.contains("state") == true)
            let type = try #require(columns.first { $0["col"] == "tally_type" })
            #expect(type["field"]?.int64Value ?? 0 >= 1 && type["values"] == ["stock", "foil"] && type["nonull"] == true)
            let parsed = try await session.meta(ChipsSession.talliesView)
            #expect(parsed.column("tally_type")?.values == ["stock", "foil"] && parsed.column("comment")?.writable == true)
            #expect(parsed.defaultColumns.contains("net") && parsed.column("net")?.writable == false)
            await connectionDone(session)
        }
    }
}

extension ChipsConformanceTests {
    /// The app's profile pages edit connections and addresses row by row, all at once
    /// (`Promise.all` of inserts, updates and deletes by `seq`); each reaches the entry it names.
    @Test("the app's profile edits: inserts, updates and deletes by seq at once, a new primary", arguments: TestEngines.all)
    func profileEdits(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let app = provider.client()
            try await app.connection.connect(ticket: try await provider.ticket(for: "jim", name: "Madison"))
            let ent = try await app.me().id
            _ = try await app.updateProfile(["connect": [["media": "email", "address": "a@example.com"], ["media": "phone", "address": "555-0100"],
                                                         ["media": "email", "address": "b@example.com"]]])
            let comm = "mychips.comm_v_me"
            let fields: JSONValue = ["comm_type", "comm_spec", "comm_seq", "comm_prim"]
            let before = try await app.connection.request(view: comm, action: "select", ["fields": fields, "where": ["comm_ent": .string(ent)]])
            #expect(before.arrayValue?.map { $0["comm_seq"] } == [1, 2, 3] && before.arrayValue?.map { $0["comm_prim"] } == [true, true, false])
            // As Comm.jsx saves: all at once.
            async let inserted = app.connection.request(view: comm, action: "insert", ["fields": ["comm_ent": .string(ent), "comm_type": "cell", "comm_spec": "555-0199"]])
            async let updated = app.connection.request(view: comm, action: "update", ["fields": ["comm_spec": "555-0111"], "where": ["comm_seq": 2, "comm_ent": .string(ent)]])
            async let deleted = app.connection.request(view: comm, action: "delete", ["where": ["comm_seq": 1, "comm_ent": .string(ent)]])
            let (new, changed, gone) = try await (inserted, updated, deleted)
            #expect(new["comm_seq"] == 4 && changed["comm_spec"] == "555-0111" && gone == .null)
            // changePrimary: b@ becomes the first email.
            _ = try await app.connection.request(view: comm, action: "update", ["fields": ["comm_prim": true], "where": ["comm_seq": 3, "comm_ent": .string(ent)]])
            let after = try #require(try await app.connection.request(view: comm, action: "select", ["fields": fields, "where": ["comm_ent": .string(ent)]]).arrayValue)
            #expect(after.map { $0["comm_seq"] } == [2, 3, 4] && after.map { $0["comm_spec"] } == ["555-0111", "b@example.com", "555-0199"])
            #expect(after.allSatisfy { $0["comm_prim"] == true })
            let me = try await app.me()
            #expect(me.certificate["connect"]?.arrayValue?.count == 3 && me.certificate["connect"]?.arrayValue?.allSatisfy { $0["seq"] == nil } == true)

            let addr = "mychips.addr_v_me"
            let home = try await app.connection.request(view: addr, action: "insert", ["fields": ["addr_ent": .string(ent), "addr_type": "phys", "addr_spec": "1234 My Street",
                                                                                              "city": "Mytown", "state": "MS", "pcode": "12345", "country": "US"]])
            #expect(home["addr_seq"] == 1 && home["pcode"] == "12345")
            let moved = try await app.connection.request(view: addr, action: "update", ["fields": ["city": "Othertown"], "where": ["addr_seq": 1, "addr_ent": .string(ent)]])
            #expect(moved["city"] == "Othertown")
            #expect(try await app.me().certificate["place"]?.arrayValue?.first?["city"] == "Othertown")
            // Refused as the real schema refuses, nothing changed: an unknown medium, another user's entity.
            await #expect(throws: ChipsError.self) {
                _ = try await app.connection.request(view: comm, action: "insert", ["fields": ["comm_ent": .string(ent), "comm_type": "pigeon", "comm_spec": "x"]])
            }
            await #expect(throws: ChipsError.self) {
                _ = try await app.connection.request(view: comm, action: "insert", ["fields": ["comm_ent": "p9999", "comm_type": "email", "comm_spec": "x@example.com"]])
            }
            #expect(try await app.connection.request(view: comm, action: "select", ["fields": fields]).arrayValue?.count == 3)
            await connectionDone(app)
        }
    }
}

extension ChipsConformanceTests {
    /// A 1×1 PNG, and the start of a 320×240 baseline JPEG (its header, as `ImageHeader` reads it).
    static let png = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")!
    static let jpeg = Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,
                            0xFF, 0xC0, 0x00, 0x11, 0x08, 0x00, 0xF0, 0x01, 0x40, 0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01,
                            0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3F, 0x00, 0xD2, 0xCF, 0x20, 0xFF, 0xD9])

    /// Bytes as the app sends them: a node Buffer through JSON.
    static func buffer(_ data: Data) -> JSONValue { ["type": "Buffer", "data": .array(data.map { .int(Int64($0)) })] }

    /// The app's avatar (read from `client/chark/src`: `uploadImage`, `getFile`, `fetchTallyFile`,
    /// `getHolderImage`): the `photo` action stores a picture as the user's main photo, the
    /// start-up select of `file_v_me` finds it, the certificate lists it by digest, and a tally
    /// partner's `file` action fetches it.
    @Test("the avatar: photo action, start-up select, the certificate's file list, a partner's file action", arguments: TestEngines.all)
    func profilePhoto(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let pair = try await WalletPair.make(provider)
            let app = pair.alice
            let ent = try await app.me().id
            let files = "mychips.file_v_me"
            func upload(_ data: Data, format: String) async throws -> JSONValue {
                try await app.connection.request(view: files, action: "action", ["name": "photo", "data": ["fields": ["file_fmt": .string(format), "file_data": Self.buffer(data), "file_cmt": "Profile"]]])
            }
            let first = try await upload(Self.png, format: "image/png")
            #expect(first["file_ent"] == .string(ent) && first["file_seq"] == 1 && first["file_fmt"] == "image/png" && first["file_type"] == "photo")
            #expect(first["file_data64"]?.stringValue.flatMap { Data(base64Encoded: $0, options: .ignoreUnknownCharacters) } == Self.png)
            // getFile, at start-up.
            let avatar = try await app.connection.request(view: files, action: "select", ["fields": ["file_ent", "file_fmt", "file_data64"], "where": ["file_ent": .string(ent), "file_prim": true]])
            #expect(avatar.arrayValue?.count == 1 && avatar.arrayValue?.first?["file_fmt"] == "image/png")
            let digest = Base64URL.encode(Data(SHA256.hash(data: Self.png)))
            #expect(try await app.me().certificate["file"] == [["media": "photo", "format": "image/png", "digest": .string(digest), "comment": "Profile"]])

            // A new picture takes over; the same picture twice, a picture sent as another format
            // and bytes that are no picture are refused, and nothing changes.
            let second = try await upload(Self.jpeg, format: "image/jpeg")
            #expect(second["file_seq"] == 2)
            let main = try await app.connection.request(view: files, action: "select", ["fields": ["file_seq", "file_prim", "file_size", "digest"], "order": ["field": "file_seq", "asc": true]])
            #expect(main.arrayValue?.map { $0["file_prim"] } == [false, true] && main.arrayValue?.first?["digest"] == .string(digest), "\(main)")
            await expectRefusal("!base.file:USP") { _ = try await upload(Self.jpeg, format: "image/jpeg") }
            await expectRefusal("!mychips.file_v_me:IMG") { _ = try await upload(Self.png, format: "image/jpeg") }
            await expectRefusal("!mychips.file_v_me:IMG") { _ = try await upload(Data("not a picture".utf8), format: "image/png") }
            await expectRefusal("42501") {
                _ = try await app.connection.request(view: files, action: "insert", ["fields": ["file_ent": "p9999", "file_type": "bio", "file_fmt": "text/plain", "file_data": Self.buffer(Data("x".utf8))]])
            }
            #expect(try await app.connection.request(view: files, action: "select", ["fields": ["file_seq"]]).arrayValue?.count == 2)
            let jpegDigest = Base64URL.encode(Data(SHA256.hash(data: Self.jpeg)))
            #expect(try await app.me().certificate["file"]?.arrayValue?.first?["digest"] == .string(jpegDigest))

            // A document, private: stored, kept out of the certificate.
            let document = try await app.connection.request(view: files, action: "insert", ["fields": ["file_type": "bio", "file_fmt": "text/plain", "file_priv": true,
                                                                                                   "file_data": Self.buffer(Data("About me".utf8))]])
            #expect(document["file_prim"] == true && document["file_name"] == "bio" && document["file_ext"] == "plain")
            #expect(try await app.me().certificate["file"]?.arrayValue?.count == 1)

            // Bob, on a tally with Alice, fetches her photo by the digest in her certificate.
            let (_, bobTally) = try await pair.openTally()
            let partnerFiles = try await pair.bob.connection.request(view: "mychips.tallies_v_me", action: "action",
                                                                     ["name": "file", "data": ["key": ["tally_seq": .int(bobTally.seq)], "options": ["digest": .string(jpegDigest), "format": "json"]]])
            let fetched = try #require(partnerFiles.arrayValue?.first)
            #expect(partnerFiles.arrayValue?.count == 1 && fetched["media"] == "photo" && fetched["file_fmt"] == "image/jpeg" && fetched["file_ext"] == "jpeg")
            #expect(fetched["file_data"] == Self.buffer(Self.jpeg))
            // Deleting the main photo makes the earlier one main again.
            _ = try await app.connection.request(view: files, action: "delete", ["where": ["file_seq": 2]])
            #expect(try await app.me().certificate["file"]?.arrayValue?.first?["digest"] == .string(digest))
            await pair.done()
        }
    }

    @Test("image headers: JPEG, PNG and GIF sizes; anything else, or a truncated header, is nil")
    func imageHeaders() {
        #expect(ImageHeader.read([UInt8](Self.png)) == ImageHeader(format: .png, width: 1, height: 1))
        #expect(ImageHeader.read([UInt8](Self.jpeg)) == ImageHeader(format: .jpeg, width: 320, height: 240))
        #expect(ImageHeader.read(Array("GIF89a".utf8) + [0x10, 0x00, 0x20, 0x00]) == ImageHeader(format: .gif, width: 16, height: 32))
        for length in 0..<Self.jpeg.count - 26 { #expect(ImageHeader.read(Array(Self.jpeg.prefix(length))) == nil, "\(length)") }
        for length in 0..<24 { #expect(ImageHeader.read(Array(Self.png.prefix(length))) == nil) }
        #expect(ImageHeader.read(Array("%PDF-1.4".utf8)) == nil)
        #expect(ImageHeader.read([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x00]) == nil)
    }
}

extension ChipsConformanceTests {
    /// The app's contract and visual balance sheet screens (read from `client/chark/src`:
    /// `getContract`, `getTallyReport`): the `agree` and `graph` actions answer a link the app
    /// opens in a web view — the agreement as a PDF, the balance sheet as a page whose bubbles
    /// link to `click?seq=N`. Links are unguessable and expire; an unknown one is a 404.
    @Test("agree and graph: a PDF of the tally agreement and the balance sheet page, by links that expire", arguments: TestEngines.all)
    func reports(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let pair = try await WalletPair.make(provider)
            let (aliceTally, _) = try await pair.openTally(limit: 40)
            _ = try await pair.alice.pay(aliceTally.seq, units: 1_500, memo: "Bread", signingKey: pair.aliceKey)
            let app = pair.alice.connection
            let http = LiveHTTPClient(base: URL(string: "http://127.0.0.1:\(provider.port)")!)
            func fetch(_ link: String) async throws -> (status: Int, type: String?, body: [UInt8]) {
                let url = try #require(URL(string: link))
                #expect(url.host == "127.0.0.1" && url.path.hasPrefix("/report/"), "\(link)")
                let response = try await http.execute(uri: url.path + (url.query.map { "?" + $0 } ?? ""), method: .get)
                return (response.status.code, response.headers[.contentType], [UInt8](response.data))
            }

            let agree = try await app.request(view: "mychips.tallies_v_me", action: "action",
                                              ["name": "agree", "data": ["key": ["tally_seq": .int(aliceTally.seq)], "options": ["format": "url"]]])
            let pdfLink = try #require(agree.stringValue)
            #expect(pdfLink.hasSuffix("/agree.pdf"))
            let pdf = try await fetch(pdfLink)
            #expect(pdf.status == 200 && pdf.type == "application/pdf" && pdf.body.starts(with: Array("%PDF-1.4".utf8)))
            let text = String(decoding: pdf.body, as: UTF8.self)
            for expected in ["Tally Agreement", "Anders", "Baker", "Credit terms", "Pledges", aliceTally.uuid.rawValue] {
                #expect(text.contains(expected), "\(expected)")
            }
            if let path = ProcessInfo.processInfo.environment["CHIPS_PDF_OUT"] {
                try Data(pdf.body).write(to: URL(fileURLWithPath: path))
            }
            // A list of formats is answered as a list; a tally that is not the user's has no contract here.
            let both = try await app.request(view: "mychips.tallies_v_me", action: "action",
                                             ["name": "agree", "data": ["key": ["tally_seq": .int(aliceTally.seq)], "options": ["format": ["url", "html"]]]])
            #expect(both.arrayValue?.count == 2 && both.arrayValue?.last?.stringValue?.contains("<object data=") == true)
            await expectRefusal("!mychips.tallies_v_me:CNF") {
                _ = try await app.request(view: "mychips.tallies_v_me", action: "action", ["name": "agree", "data": ["key": ["tally_seq": 999], "options": ["format": "url"]]])
            }

            let graph = try await app.request(view: "mychips.users_v_me", action: "action", ["name": "graph", "data": ["options": ["format": "url"]]])
            let pageLink = try #require(graph.stringValue)
            let page = try await fetch(pageLink)
            let html = String(decoding: page.body, as: UTF8.self)
            #expect(page.status == 200 && page.type?.hasPrefix("text/html") == true)
            #expect(html.contains("<svg") && html.contains("href=\"click?seq=\(aliceTally.seq)\"") && html.contains("Baker"))
            #expect(try await fetch(pageLink.replacingOccurrences(of: "graph.html", with: "click?seq=\(aliceTally.seq)")).status == 204)

            // Another resource of the report, an unknown token, an expired link: 404.
            #expect(try await fetch(pageLink.replacingOccurrences(of: "graph.html", with: "agree.pdf")).status == 404)
            let forged = "http://127.0.0.1:\(provider.port)/report/\(Base64URL.encode(Data(repeating: 7, count: 32)))/graph.html"
            #expect(try await fetch(forged).status == 404)
            let database = try #require(provider.environment?.database)
            try await database.transaction { db in try await db.raw("UPDATE chips_reports SET expires_at = 0").run() }
            #expect(try await fetch(pdfLink).status == 404)
            await pair.done()
        }
    }
}

extension ChipsConformanceTests {
    /// Every image a user stores passes the picture check, whichever way it is stored; a
    /// partner's `file` action embeds only what the bytes show to be an image.
    @Test("no script as a picture: a plain insert is checked like the photo action; a partner's file embeds images only", arguments: TestEngines.all)
    func filesAreWhatTheyClaim(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let pair = try await WalletPair.make(provider)
            let files = "mychips.file_v_me"
            func insert(type: String, format: String, _ data: Data) async throws -> JSONValue {
                try await pair.alice.connection.request(view: files, action: "insert",
                                                        ["fields": ["file_type": .string(type), "file_fmt": .string(format), "file_data": Self.buffer(data)]])
            }
            let html = Data("<html><script>alert(document.cookie)</script></html>".utf8)
            let svg = Data(#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#.utf8)
            await expectRefusal("!mychips.file_v_me:IMG") { _ = try await insert(type: "photo", format: "text/html", html) }
            await expectRefusal("!mychips.file_v_me:IMG") { _ = try await insert(type: "photo", format: "image/svg+xml", svg) }
            await expectRefusal("!mychips.file_v_me:IMG") { _ = try await insert(type: "bio", format: "image/svg+xml", svg) }
            await expectRefusal("!mychips.file_v_me:IMG") { _ = try await insert(type: "photo", format: "image/jpeg", Self.png) }
            // A document may be HTML; it is stored, public and main, so it is in the certificate.
            _ = try await insert(type: "bio", format: "text/html", html)
            // A stored picture cannot be relabelled as something else.
            let photo = try await insert(type: "photo", format: "image/png", Self.png)
            await expectRefusal("!mychips.file_v_me:IMG") {
                _ = try await pair.alice.connection.request(view: files, action: "update",
                                                            ["fields": ["file_fmt": "text/html"], "where": ["file_seq": photo["file_seq"] ?? .null]])
            }
            let (_, bobTally) = try await pair.openTally()
            let page = try await pair.bob.connection.request(view: "mychips.tallies_v_me", action: "action",
                                                             ["name": "file", "data": ["key": ["tally_seq": .int(bobTally.seq)], "options": ["format": "html"]]])
            let text = try #require(page.stringValue)
            #expect(text.contains("<img src=\"data:image/png;base64,"))
            #expect(!text.contains("data:text/html") && !text.contains("<object"))
            #expect(text.contains("download=") && text.contains("data:application/octet-stream;base64,"))
            await pair.done()
        }
    }

    /// `invoice` notifies a partner and pushes to their devices: bounded per user, and an
    /// amount that is not a whole number above zero within a bigint is refused, never dropped.
    @Test("invoice: bad amounts are BVL like zero and negative ones; a user's requests are bounded", arguments: TestEngines.all)
    func invoiceBounds(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let pair = try await WalletPair.make(provider)
            let (_, bobTally) = try await pair.openTally(limit: 50)
            func invoice(_ units: JSONValue) async throws {
                _ = try await pair.bob.connection.request(view: "mychips.tallies_v_me", action: "action",
                                                          ["name": "invoice", "data": ["keys": [["tally_seq": .int(bobTally.seq)]], "options": ["units": units]]])
            }
            for bad: JSONValue in [.double(1e19), .uint(9_223_372_036_854_775_808), .string("12"), .int(0), .int(-5), .double(1.5), .bool(true)] {
                await expectRefusal("!mychips.chits:BVL", "\(bad)") { try await invoice(bad) }
            }
            var accepted = 0, refused = 0
            for _ in 0..<15 {
                do {
                    try await invoice(.int(1_000))
                    accepted += 1
                } catch let error as ChipsError {
                    #expect(error.code == "!mychips.tallies:ISR")
                    refused += 1
                }
            }
            #expect(accepted == 10 && refused == 5, "\(accepted) accepted")
            await pair.done()
        }
    }
}

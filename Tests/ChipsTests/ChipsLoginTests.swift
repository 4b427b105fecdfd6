import Crypto
import Foundation
import HTTPTypes
import MyCHIPs
import NIOCore
import PurseFormats
import PurseKit
import PurseDatabase
import PurseHTTPNIO
import PurseTestSupport
import Testing

@Suite("MyCHIPs logins against the provider")
struct ChipsLoginTests {
    @Test("a ticket logs in once and stores the key; later logins are by signature", arguments: TestEngines.all)
    func ticketThenSignature(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let store = InMemorySecureStore()
            let session = provider.client(store: store)
            let ticket = try await provider.ticket(for: "alice", name: "Smith")
            try await session.connection.connect(ticket: ticket)
            #expect(await session.connection.state == .connected)
            let me = try await session.me()
            #expect(me.username == "alice" && me.surname == "Smith" && me.id == "p1000")
            // Certificates and tickets name the websocket's own port, one above /clientinfo's.
            #expect(me.address.cuid == "alice" && me.address.port == provider.port + 1)
            let account = try #require(try await ChipsKeychain(store: store).account())
            #expect(account.user == "alice" && account.port == provider.port + 1 && account.httpPort == nil && !account.secure)

            // The stored key is the one the provider has: a new install with the same store logs in by signature.
            await session.connection.disconnect()
            let again = provider.client(store: store)
            try await again.connection.connect()
            #expect(try await again.me().username == "alice")
            await again.connection.disconnect()
        }
    }

    @Test("refused: a spent ticket, an expired one, another user's, a signature by another key, a stale date, a replayed URL")
    func refusals() async throws {
        try await ChipsProvider.with { provider in
            let ticket = try await provider.ticket(for: "bob")
            let first = provider.client()
            try await first.connection.connect(ticket: ticket)
            await first.connection.disconnect()

            // Spent.
            let second = provider.client()
            await #expect(throws: ChipsError.loginRefused("the provider refused the login")) { try await second.connection.connect(ticket: ticket) }
            if case .failed = await second.connection.state {} else { Issue.record("a refused login shows as failed") }

            // Expired: the client refuses it before connecting; the provider refuses it too.
            var expired = try await provider.ticket(for: "bob")
            provider.clock.advance(by: 31 * 60)
            await #expect(throws: ChipsError.ticketExpired) { try await provider.client().connection.connect(ticket: expired) }
            expired.expires = nil
            await #expect(throws: ChipsError.self) { try await provider.client().connection.connect(ticket: expired) }

            // An earlier ticket, once a newer one is issued: only the newest holds.
            let older = try await provider.ticket(for: "dave")
            let newer = try await provider.ticket(for: "dave")
            await #expect(throws: ChipsError.loginRefused("the provider refused the login")) { try await provider.client().connection.connect(ticket: older) }
            let dave = provider.client()
            try await dave.connection.connect(ticket: newer)
            await dave.connection.disconnect()

            // Another user's ticket, presented as bob's.
            var carol = try await provider.ticket(for: "carol")
            carol.user = "bob"
            await #expect(throws: ChipsError.self) { try await provider.client().connection.connect(ticket: carol) }

            // A signature by another key: an install whose stored key the provider never saw.
            let stranger = InMemorySecureStore()
            let keychain = ChipsKeychain(store: stranger)
            try await keychain.save(ConnectionKey())
            try await keychain.save(ChipsKeychain.Account(host: "127.0.0.1", port: provider.port, user: "bob", secure: false))
            await #expect(throws: ChipsError.self) { try await provider.client(store: stranger).connection.connect() }
        }
    }

    @Test("the upgrade's refusals carry the real provider's statuses and texts")
    func refusalStatuses() async throws {
        try await ChipsProvider.with { provider in
            let http = LiveHTTPClient(base: URL(string: "http://127.0.0.1:\(provider.port)")!)
            func upgrade(_ query: String) async throws -> (HTTPResponse.Status, String) {
                let response = try await RawUpgrade.send(port: provider.port, target: "/?" + query)
                return (response.status, response.body)
            }
            let key = ConnectionKey()
            let answer1 = try await upgrade("")
            #expect(answer1 == (.unauthorized, "No login credentials"))
            let answer2 = try await upgrade("user=dave&token=00&pub=\(key.loginPub)")
            #expect(answer2 == (.forbidden, "Invalid Login"))
            let stale = "2020-01-01T00:00:00.000Z"
            let answer3 = try await upgrade("user=dave&sign=AAAA&date=\(stale)")
            #expect(answer3 == (.badRequest, "Invalid Date Stamp"))
            let now = JavaScriptDate.string(provider.clock.now)
            let answer4 = try await upgrade("user=dave&sign=\(try key.sign("x"))&date=\(now)")
            #expect(answer4 == (.forbidden, "Invalid Login"))
            // A plain GET / is still the server's index.
            #expect(try await http.execute(uri: "/", method: .get).status == .ok)
        }
    }

    @Test("a captured signature login cannot be replayed, even with the signature's s negated", arguments: TestEngines.all)
    func replayedSignature(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let store = InMemorySecureStore()
            try await provider.client(store: store).connection.connect(ticket: try await provider.ticket(for: "erin"))
            let key = try #require(try await ChipsKeychain(store: store).key())
            let http = LiveHTTPClient(base: URL(string: "http://127.0.0.1:\(provider.port)")!)
            let info = try await http.execute(uri: "/clientinfo", method: .get, headers: [.userAgent: "replay-test"])
            let date = try #require(info.object["date"] as? String)
            let ip = try #require(info.object["ip"] as? String)
            let message = JavaScriptJSON.object([("ip", .string(ip)), ("userAgent", "replay-test"), ("date", .string(date))])
            let sign = try key.sign(message)
            func upgrade(_ sign: String) async throws -> HTTPResponse.Status {
                let query = "user=erin&sign=\(sign)&date=\(date.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? date)"
                return try await RawUpgrade.send(port: provider.port, target: "/?" + query, userAgent: "replay-test").status
            }
            #expect(try await upgrade(sign) == .switchingProtocols)
            #expect(try await upgrade(sign) == .forbidden)
            // (r, n − s) verifies too: the signature's r, not its bytes, marks a login as used.
            let raw = try #require(Base64URL.decode(sign))
            let negated = Base64URL.encode(raw.prefix(66) + Self.negate(raw.suffix(66)))
            #expect(try await upgrade(negated) == .forbidden)
        }
    }

    /// n − s for P-521's order n.
    static func negate(_ s: Data) -> Data {
        let order: [UInt8] = Hex.decode("01ff" + String(repeating: "ffffffff", count: 7) + "fffffffa" + "51868783bf2f966b7fcc0148f709a5d03bb5c9b8899c47aebb6fb71e91386409")!
        var result = [UInt8](repeating: 0, count: 66)
        var borrow = 0
        let bytes = [UInt8](s)
        for index in stride(from: 65, through: 0, by: -1) {
            var value = Int(order[index]) - Int(bytes[index]) - borrow
            borrow = value < 0 ? 1 : 0
            if value < 0 { value += 256 }
            result[index] = UInt8(value)
        }
        return Data(result)
    }
}

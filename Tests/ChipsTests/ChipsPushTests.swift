import ChipsProtocol
@testable import ChipsService
import MyCHIPs
import Foundation
import PurseFormats
import Testing

/// The push's route members, one form on both ends: the provider's (`ChipsPushRoute` from a
/// notice, as `ChipsPushes` queues it) and the app's (`ChipsRouter`), each against
/// `Fixtures/push_routes.json`. `ChipsWalletTests.pushes` sends them through the APNs sandbox.
@Suite("MyCHIPs push routes")
struct ChipsPushTests {
    static func cases() throws -> [JSONValue] {
        let url = try #require(Bundle.module.url(forResource: "push_routes", withExtension: "json", subdirectory: "Fixtures"))
        return try #require(try StrictJSON.parse(Array(Data(contentsOf: url)))["cases"]?.arrayValue)
    }

    static func expected(_ route: JSONValue?) -> ChipsRoute? {
        guard let route, let seq = route["seq"]?.int64Value else { return nil }
        switch route["page"]?.stringValue {
        case "tally": return .tally(seq: seq)
        case "chits": return .chits(seq: seq)
        case "answerRequest": return route["chit"]?.stringValue.map { .answerRequest(seq: seq, chit: ChitID($0)) }
        default: return nil
        }
    }

    @Test("the provider's push carries the fixture's members, numbers and booleans typed")
    func providerSide() throws {
        for item in try Self.cases() {
            let members = ChipsPushRoute(try #require(item["notice"]))?.members
            #expect(members.map(JSONValue.object) == (item["push"]?.isNull == false ? item["push"] : nil), "\(item["notice"]?["state"] ?? .null)")
        }
    }

    @Test("the app routes the fixture's push, and the same notice over the websocket, to the same page")
    func appSide() throws {
        for item in try Self.cases() {
            let expected = Self.expected(item["route"])
            if let push = item["push"], !push.isNull {
                #expect(ChipsRouter.route(ChipsNotification(channel: nil, data: push)) == expected)
            }
            #expect(ChipsRouter.route(ChipsNotification(channel: "mu_p1001", data: try #require(item["notice"]))) == expected)
        }
    }

    @Test("the provider picks each push's message by the route's typed state")
    func messages() {
        func code(_ data: JSONValue) -> String? { ChipsPushRoute(data).flatMap(ChipsPushes.messageCode(of:)) }
        let tallies: [(String, String?)] = [("P.offer", "pshoffer"), ("P.draft", "pshjoined"), ("open", "pshopen"), ("void", "pshvoid"),
                                            ("C.open", "pshclose"), ("close", "pshclose"), ("H.offer", nil), ("draft", nil)]
        for (state, expected) in tallies {
            #expect(code(["target": "tally", "sequence": 1, "state": .string(state)]) == expected, "\(state)")
        }
        #expect(code(["target": "tally", "sequence": 1, "state": "open", "reason": "invoice"]) == "pshinvoice")
        let chits: [(String, String?)] = [("L.pend", "pshreq"), ("A.good", "pshpaid"), ("A.void", "pshrefused"), ("L.void", "pshrefused"),
                                          ("L.good", "pshreqpaid"), ("A.pend", nil), ("L.draft", nil)]
        for (state, expected) in chits {
            #expect(code(["target": "chit", "sequence": 1, "state": .string(state), "uuid": "6179c2e0-0000-4000-8000-000000000001"]) == expected, "\(state)")
        }
        // The same text under the other target is the other kind's state, not this one's.
        #expect(ChipsPushRoute(["target": "chit", "sequence": 2, "state": "open"])?.state == .chit(ChitState(rawValue: "open")))
        #expect(code(["target": "chit", "sequence": 2, "state": "open"]) == nil)
    }

    @Test("a push with the sequence as a string, or none, routes nowhere rather than to a wrong page")
    func malformed() {
        #expect(ChipsRouter.route(ChipsNotification(channel: nil, data: ["target": "chit", "sequence": "1", "action": "false"])) == nil)
        #expect(ChipsRouter.route(ChipsNotification(channel: nil, data: ["target": "tally", "sequence": 0])) == nil)
        #expect(ChipsRouter.route(ChipsNotification(channel: nil, data: ["target": "tally"])) == nil)
    }
}

import ChipsProtocol
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

    @Test("a push with the sequence as a string, or none, routes nowhere rather than to a wrong page")
    func malformed() {
        #expect(ChipsRouter.route(ChipsNotification(channel: nil, data: ["target": "chit", "sequence": "1", "action": "false"])) == nil)
        #expect(ChipsRouter.route(ChipsNotification(channel: nil, data: ["target": "tally", "sequence": 0])) == nil)
        #expect(ChipsRouter.route(ChipsNotification(channel: nil, data: ["target": "tally"])) == nil)
    }
}

@testable import ChipsService
import PurseFormats
import Testing

/// Request frames read as bytes and answers written as bytes: the same JSON as the text they
/// stand for, and text that is not UTF-8 refused as bad JSON.
@Suite("Wyseman frames as bytes")
struct WysemanFrameTests {
    @Test("a message that is not UTF-8 is refused as bad JSON; a good one parses from its bytes")
    func requestBytes() throws {
        let bad: [UInt8] = Array(#"{"id":1,"view":"mychips.users_v_me","action":"select","x":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        guard case .failure(let refusal) = WysemanRequest.parse(bad) else { Issue.record("invalid UTF-8 was parsed"); return }
        #expect(refusal.error.json["code"] == "!wm.lang:badJSON")
        guard case .success(let request) = WysemanRequest.parse(Array(#"{"id":"é1","view":"mychips.users_v_me","action":"select"}"#.utf8)) else {
            Issue.record("a good request was refused"); return
        }
        #expect(request.id == "é1" && request.view == "mychips.users_v_me" && request.action == "select")
    }

    @Test("answers are the UTF-8 of the JSON text they used to be sent as")
    func answerBytes() throws {
        guard case .success(let request) = WysemanRequest.parse(Array(#"{"id":7,"view":"v","action":"action","name":"n"}"#.utf8)) else {
            Issue.record("a good request was refused"); return
        }
        let data: JSONValue = ["text": "é€😀\u{01}", "rows": [1, .double(2.5), .null]]
        let members: [(key: String, value: JSONValue)] = [("id", 7), ("view", "v"), ("action", "action"), ("name", "n"), ("data", data)]
        #expect(WysemanResponse.data(data, to: request) == Array(JavaScriptJSON.object(members).utf8))
        #expect(String(decoding: WysemanResponse.notify(channel: "mu_p1000", data: 1), as: UTF8.self) == #"{"action":"notify","channel":"mu_p1000","data":1}"#)
    }
}

import Foundation
import PurseFormats
import Testing

@Suite("Strict JSON")
struct StrictJSONTests {
    func refusal(_ text: String) -> StrictJSON.Failure? {
        do {
            try StrictJSON.validate(Array(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        #"{}"#, #"[]"#, #" {"a": 1, "b": [true, false, null, -0.5e+3, "x\u00e9\ud83d\ude00"], "c": {"d": ""}} "#,
        #""text""#, "0", "-12", "1.25E-2", #"{"a":1,"A":2}"#, #"{"\u0061b": 1, "ab\u0000": 2}"#,
    ])
    func acceptsRFC8259(_ text: String) {
        #expect(refusal(text) == nil, "\(text)")
    }

    @Test func refusesWhatLenientDecodersForgive() {
        #expect(refusal(#"{"amount":1,}"#)?.reason == "trailing comma")
        #expect(refusal(#"[1,]"#)?.reason == "trailing comma")
        #expect(refusal(#"{"amount":1,"amount":2}"#) == StrictJSON.Failure(reason: #"repeated key "amount""#, offset: 12))
        #expect(refusal(#"{"ab":1,"\u0061b":2}"#)?.reason == #"repeated key "ab""#, "keys compare after unescaping")
        #expect(refusal("{\"a\": 01}")?.reason == "leading zero in number")
        #expect(refusal("{\"a\": 1.}")?.reason == "invalid number")
        #expect(refusal("{\"a\": .5}")?.reason == "expected a value")
        #expect(refusal("{'a': 1}")?.reason == "expected a key")
        #expect(refusal("{\"a\": NaN}")?.reason == "expected a value")
        #expect(refusal("{\"a\": \"\u{01}\"}")?.reason == "control character in string")
        #expect(refusal(#"{"a": "\ud800"}"#)?.reason == "unpaired surrogate")
        #expect(refusal(#"{"a": "\x"}"#)?.reason == "invalid escape")
        #expect(refusal("{} {}")?.reason == "text after the JSON value")
        #expect(refusal("")?.reason == "expected a value")
        #expect(refusal(String(repeating: "[", count: 65) + String(repeating: "]", count: 65))?.reason == "nested too deeply")
        #expect(refusal(String(repeating: "[", count: 64) + String(repeating: "]", count: 64)) == nil)
    }

    @Test func refusesBytesThatAreNotUTF8() {
        #expect(throws: StrictJSON.Failure(reason: "string is not UTF-8", offset: 6)) {
            try StrictJSON.validate([UInt8](#"{"a": ""#.utf8) + [0xC3, 0x28] + [UInt8](#""}"#.utf8))
        }
    }

    /// `parse` takes an all-ASCII string as it stands and validates any other, in keys as in
    /// values: bytes that are not UTF-8 are refused where `validate` refuses them.
    @Test func parseRefusesBytesThatAreNotUTF8() throws {
        let invalid: [[UInt8]] = [[0xC3, 0x28], [0xFF], [0xF0, 0x9F, 0x98], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0x41, 0x80]]
        for bytes in invalid {
            let asValue = [UInt8](#"{"a": ""#.utf8) + bytes + [UInt8](#""}"#.utf8)
            #expect(throws: StrictJSON.Failure(reason: "string is not UTF-8", offset: 6)) { try StrictJSON.parse(asValue) }
            #expect(throws: StrictJSON.Failure(reason: "string is not UTF-8", offset: 6)) { try StrictJSON.validate(asValue) }
            let asKey = [UInt8](#"{"#.utf8) + [0x22] + bytes + [UInt8](#"": 1}"#.utf8)
            #expect(throws: StrictJSON.Failure(reason: "string is not UTF-8", offset: 1)) { try StrictJSON.parse(asKey) }
        }
        let mixed = [UInt8](#"{"caf\#u{e9}": "na\#u{ef}ve \#u{1F600}", "plain": "ascii"}"#.utf8)
        #expect(try StrictJSON.parse(mixed) == .object(["caf\u{e9}": .string("na\u{ef}ve \u{1F600}"), "plain": .string("ascii")]))
    }

    @Test("parse builds the value JSONDecoder builds, in one strict pass", arguments: [
        #" {"a": 1, "b": [true, false, null, -0.5e+3, "x\u00e9\ud83d\ude00"], "c": {"d": ""}, "e": 18446744073709551615, "f": -9223372036854775808} "#,
        #"[0, 1.5, "s", {"k": [[]]}, {}]"#, "42", #""text""#, "null",
        // Rows of different sizes one after another, nested ones among them.
        #"[{"a": 1, "b": 2, "c": {"x": 1, "y": 2}}, {"d": 4}, {"e": 5, "f": 6, "g": 7, "h": {"z": []}}, {}, {"i": {"j": {"k": 0}}}]"#,
    ])
    func parseMatchesFoundation(_ text: String) throws {
        let parsed = try StrictJSON.parse(Array(text.utf8))
        #expect(parsed == (try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))))
    }

    @Test func parseRefusesAsValidateDoes() throws {
        for text in [#"{"a":1,"a":2}"#, "[1,]", "{\"a\": 01}", ""] {
            #expect(throws: StrictJSON.Failure.self) { try StrictJSON.parse(Array(text.utf8)) }
        }
        #expect(try StrictJSON.parse(Array("1e2".utf8)) == .int(100))
        #expect(try StrictJSON.parse(Array("2.5".utf8)) == .double(2.5))
    }
}

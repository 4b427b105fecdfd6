import Foundation
import PurseFormats
import Testing

@Suite("Wire choices")
struct WireChoiceTests {
    enum Priority: String, WireChoice { case low, normal, high }
    struct Body: Codable, Equatable { var priority: Priority; var other: Priority? }

    @Test func readsAndWritesItsRawValue() throws {
        let body = try JSONDecoder().decode(Body.self, from: Data(#"{"priority":"high"}"#.utf8))
        #expect(body == Body(priority: .high, other: nil))
        #expect(String(decoding: try JSONEncoder().encode(Priority.low), as: UTF8.self) == #""low""#)
    }

    @Test func anUnknownValueNamesTheFieldAndTheSet() throws {
        do {
            _ = try JSONDecoder().decode(Body.self, from: Data(#"{"priority":"urgent"}"#.utf8))
            Issue.record("decoded an unknown priority")
        } catch DecodingError.dataCorrupted(let context) {
            let unknown = try #require(context.underlyingError as? UnknownChoice)
            #expect(unknown == UnknownChoice(field: "priority", value: "urgent", allowed: ["low", "normal", "high"]))
            #expect(unknown.description == "priority must be one of low, normal, high")
        }
        #expect(throws: UnknownChoice(field: "level", value: "x", allowed: Priority.rawValues)) { try Priority.parse("x", field: "level") }
        #expect(try Priority.parse("normal", field: "level") == .normal)
    }
}

import Foundation
import PurseFormats
import Testing

@Suite("Tagged")
struct TaggedTests {
    enum OrderTag {}
    enum RefundTag {}
    typealias OrderID = Tagged<OrderTag, String>
    typealias RefundID = Tagged<RefundTag, String>

    struct Wire: Codable, Equatable {
        var orderId: OrderID
        var refundId: RefundID?
    }

    @Test func encodesAsItsRawValueAlone() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(Wire(orderId: "ord_1", refundId: nil)), as: UTF8.self)
        #expect(json == #"{"orderId":"ord_1"}"#)
        let decoded = try JSONDecoder().decode(Wire.self, from: Data(#"{"orderId":"ord_2","refundId":"re_9"}"#.utf8))
        #expect(decoded == Wire(orderId: OrderID("ord_2"), refundId: "re_9"))
    }

    @Test func aWrongTypeIsADecodingError() {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(Wire.self, from: Data(#"{"orderId":7}"#.utf8))
        }
    }

    @Test func comparesAndHashesByItsRawValue() {
        let ids: Set<OrderID> = ["a", "b", "a"]
        #expect(ids.count == 2)
        #expect(OrderID("a") < OrderID("b"))
        #expect("\(OrderID("ord_3"))" == "ord_3")
    }
}

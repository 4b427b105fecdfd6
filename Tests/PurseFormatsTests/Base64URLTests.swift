import Foundation
import PurseFormats
import Testing

@Suite("Formats: base64url")
struct Base64URLTests {
    func foundationBase64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test func roundTripsAndMatchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        for count in 0..<80 {
            let data = Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let encoded = Base64URL.encode(data)
            #expect(encoded == foundationBase64URL(data))
            #expect(Base64URL.decode(encoded) == data)
            // Padded and standard-alphabet forms decode too.
            #expect(Base64URL.decode(data.base64EncodedString()) == data)
        }
    }

    @Test func refusesWhatNoEncoderProduces() {
        #expect(Base64URL.decode("") == Data())
        for bad in ["a", "abcde", "ab$d", "ab d", "ab\u{00e9}d", "é", "ab=c", "====a"] {
            #expect(Base64URL.decode(bad) == nil, "\(bad)")
        }
        #expect(Base64URL.decode(String(repeating: "A", count: (1 << 20) + 4)) == nil)
    }
}

@Suite("Formats: hex")
struct HexTests {
    @Test func encodesLowercaseFromEveryKindOfSequence() {
        let bytes: [UInt8] = [0x00, 0x01, 0x7f, 0x80, 0xab, 0xff]
        #expect(Hex.encode(bytes) == "00017f80abff")
        #expect(Hex.encode(bytes.lazy.map { $0 }) == "00017f80abff")  // no contiguous storage
        #expect(Hex.encode(Data(bytes)) == "00017f80abff")
        #expect(Hex.encode([UInt8]()) == "")
    }
}

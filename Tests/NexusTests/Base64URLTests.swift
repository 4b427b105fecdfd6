import Foundation
import NexusPay
import NexusService
import Testing

@Suite("Nexus: base64url")
struct Base64URLTests {
    func foundationBase64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test func roundTripsAndMatchesFoundation() {
        var generator = SystemRandomNumberGenerator()
        for count in 0..<80 {
            let data = Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let encoded = NexusService.Base64URL.encode(data)
            #expect(encoded == foundationBase64URL(data))
            #expect(NexusService.Base64URL.decode(encoded) == data)
            // Padded and standard-alphabet forms decode too.
            #expect(NexusService.Base64URL.decode(data.base64EncodedString()) == data)
        }
    }

    @Test func refusesWhatNoEncoderProduces() {
        #expect(NexusService.Base64URL.decode("") == Data())
        for bad in ["a", "abcde", "ab$d", "ab d", "ab\u{00e9}d", "é", "ab=c", "====a"] {
            #expect(NexusService.Base64URL.decode(bad) == nil, "\(bad)")
        }
        #expect(NexusService.Base64URL.decode(String(repeating: "A", count: (1 << 20) + 4)) == nil)
    }

    /// The client core's encoder (what the phone sends) and the service's decoder agree.
    @Test func clientAndServiceAgree() {
        var generator = SystemRandomNumberGenerator()
        for count in 0..<70 {
            let data = Data((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let client = NexusPay.Base64URL.encode(data)
            #expect(client == NexusService.Base64URL.encode(data))
            #expect(NexusService.Base64URL.decode(client) == data)
            #expect(NexusPay.Base64URL.decode(client) == data)
        }
        #expect(NexusPay.Base64URL.decode("a") == nil)
    }
}

import Foundation
@testable import NexusService
import PurseServer
import Testing

@Suite("Nexus: wire")
struct NexusWireTests {
    /// The top-up response written by hand is what the shared encoder writes.
    @Test func topupResponseJSONIsTheEncoders() throws {
        for (amount, balance, used, earned) in [(500, 9_500, 0, 10), (50_000, 0, 1_000, 0), (1, Int.max, 0, 0)] {
            let response = NexusWire.TopupResponse(data: .init(
                transactionId: RandomID.make("tx"), status: "completed", amount: amount, balance: balance,
                timestamp: Timestamp.iso(Date()), cashbackUsed: used, cashbackEarned: earned
            ))
            #expect(response.json == (try JSONCoding.encoder.encode(response)))
        }
    }
}

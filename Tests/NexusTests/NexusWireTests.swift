import Foundation
import HTTPTypes
import NexusVocabulary
@testable import NexusService
import PurseDatabase
import PurseServer
import Testing

@Suite("Nexus: wire")
struct NexusWireTests {
    /// The top-up response written by hand is what the shared encoder writes.
    @Test func topupResponseJSONIsTheEncoders() throws {
        for (amount, balance, used, earned) in [(500, 9_500, 0, 10), (50_000, 0, 1_000, 0), (1, Int.max, 0, 0)] {
            let response = NexusWire.TopupResponse(data: .init(
                transactionId: TransactionID(RandomID.make("tx")), status: .completed, amount: amount, balance: balance,
                timestamp: Timestamp.iso(Date()), cashbackUsed: used, cashbackEarned: earned
            ))
            #expect(response.json == (try JSONCoding.encoder.encode(response)))
        }
    }
}

@Suite("Nexus: recipient phone")
struct NexusPhoneTests {
    /// A foundation refusal that names its own code keeps it in the Nexus shape, with its
    /// headers: a client waits on `idempotency_key_in_use` by that code and `Retry-After`.
    @Test func aFoundationCodeSurvivesTheNexusShape() throws {
        let shaped = NexusErrorShape.reshape(ServerEnvironment.keyInUse, path: "/user/topup")
        let body = try #require(try JSONSerialization.jsonObject(with: shaped.body) as? [String: Any])
        #expect(shaped.status == .conflict)
        #expect(body["code"] as? String == "idempotency_key_in_use")
        #expect(body["success"] as? Bool == false)
        #expect(shaped.headers[.retryAfter] == "1")
        let plain = NexusErrorShape.reshape(APIError(.conflict, "taken"), path: "/user/topup")
        let plainBody = try #require(try JSONSerialization.jsonObject(with: plain.body) as? [String: Any])
        #expect(plainBody["code"] as? String == "conflict")
    }

    @Test func nigerianNumbersInBothForms() {
        for phone in ["08012345678", "09087654321", "+2348012345678", "+2349087654321"] {
            #expect(NexusController.isNigerianPhone(phone), "\(phone)")
        }
        let refused = [
            "", "0", "+234", "0801234567", "080123456789", "8012345678", "+2340801234567", "+23480123456789",
            "0801234567a", "00012345678", "+2340012345678", "234801234567", "+2438012345678", " 08012345678",
            // Digits of other scripts are numbers to Unicode, not to a phone network.
            "0٨٠١٢٣٤٥٦٧٨", "0８０１２３４５６７８", "080123456７8", "0801234567\u{0301}8",
        ]
        for phone in refused {
            #expect(!NexusController.isNigerianPhone(phone), "\(phone.debugDescription)")
        }
    }

    @Test func spacesAreDroppedAndNothingElse() {
        #expect(NexusController.phoneWithoutSpaces("0801 234 5678") == "08012345678")
        #expect(NexusController.phoneWithoutSpaces(" +234 801 234 5678 ") == "+2348012345678")
        #expect(NexusController.phoneWithoutSpaces("08012345678") == "08012345678")
        #expect(NexusController.phoneWithoutSpaces("0801\t234-5678") == "0801\t234-5678")
        #expect(NexusController.phoneWithoutSpaces("٠ ٨") == "٠٨")
    }
}

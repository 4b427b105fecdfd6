@testable import CutiEService
import Crypto
import Foundation
import Testing

/// Apple's published sample attestation (the App Attest attestation object validation guide):
/// app id `0352187391.com.apple.example_app_attest`, challenge `test_server_challenge` (passed as
/// the client data as is), production environment, certificates valid 2024-04-17 to 2024-04-20.
@Suite("Cuti-E: App Attest attestations")
struct AppAttestTests {
    static let appID = "0352187391.com.apple.example_app_attest"
    static let challenge = Data("test_server_challenge".utf8)
    static let keyID = Data(base64Encoded: "bSrEhF8TIzIvWSPwvZ0i2+UOBre4ASH84rK15m6emNY=")!
    static let valid = ISO8601DateFormatter().date(from: "2024-04-18T12:00:00Z")!

    static func sample() throws -> Data {
        let url = try #require(Bundle.module.url(forResource: "apple_sample_attestation", withExtension: "b64", subdirectory: "Fixtures"))
        return try #require(Data(base64Encoded: String(decoding: try Data(contentsOf: url), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    func verify(_ attestation: Data, appID: String = appID, challenge: Data = challenge, keyID: Data = keyID,
                environment: AppAttestVerifier.Environment = .production, at date: Date = valid) async throws -> Result<AppAttestVerifier.Attested, AppAttestVerifier.Failure> {
        let verifier = try AppAttestVerifier.apple()
        do {
            return .success(try await verifier.verify(attestation: attestation, appID: appID, clientDataHash: challenge, keyID: keyID, environment: environment, at: date))
        } catch {
            return .failure(error)
        }
    }

    @Test("Apple's sample verifies at a date inside its certificates' validity")
    func appleSampleVerifies() async throws {
        let attested = try await verify(try Self.sample()).get()
        #expect(attested.keyID == Self.keyID && attested.counter == 0 && !attested.receipt.isEmpty)
        #expect(Data(SHA256.hash(data: attested.publicKey.x963Representation)) == Self.keyID)
    }

    @Test("refused: after the certificates expired, another app id, another challenge, another environment, another key id")
    func appleSampleRefusals() async throws {
        let sample = try Self.sample()
        func failure(_ result: Result<AppAttestVerifier.Attested, AppAttestVerifier.Failure>) -> String? {
            if case .failure(let error) = result { return error.description }
            return nil
        }
        #expect(failure(try await verify(sample, at: ISO8601DateFormatter().date(from: "2024-04-21T12:00:00Z")!))?.contains("certificate chain") == true)
        #expect(failure(try await verify(sample, appID: "0352187391.com.apple.different_app_attest"))?.contains("RP id hash") == true)
        #expect(failure(try await verify(sample, challenge: Data("invalid_server_challenge".utf8)))?.contains("nonce") == true)
        #expect(failure(try await verify(sample, environment: .development))?.contains("AAGUID") == true)
        #expect(failure(try await verify(sample, keyID: Data(repeating: 1, count: 32)))?.contains("key id") == true)
        #expect(failure(try await verify(Data("not cbor".utf8)))?.contains("CBOR") == true)
    }

    @Test("one changed byte anywhere outside Apple's opaque receipt is refused")
    func changedBytesAreRefused() async throws {
        let sample = try Self.sample()
        // The receipt is carried for later fraud-risk checks with Apple, not verified here.
        let receipt = try Self.receiptRange(in: sample)
        var checked = 0
        for position in stride(from: 0, to: sample.count, by: 41) where !receipt.contains(position) {
            var changed = sample
            changed[position] ^= 0x01
            guard case .failure = try await verify(changed) else {
                Issue.record("a change at byte \(position) was accepted")
                continue
            }
            checked += 1
        }
        #expect(checked > 40)
    }

    /// Where the receipt's bytes lie in the object.
    static func receiptRange(in sample: Data) throws -> Range<Int> {
        let marker = Data("receipt".utf8)
        let start = try #require(sample.range(of: marker)).upperBound
        let marker2 = Data("authData".utf8)
        let end = try #require(sample.range(of: marker2)).lowerBound
        return start..<end
    }
}

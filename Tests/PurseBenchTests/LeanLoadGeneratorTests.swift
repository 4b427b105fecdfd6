import Crypto
import Foundation
import NIOCore
import NexusPay
import NexusService
import PurseHTTP
import Testing

@testable import PurseBench

/// The lean load generator must send what a browser sends and read what the server answers, or
/// `purse bench nexus` would measure something else.
@Suite("Bench: lean load generator")
struct LeanLoadGeneratorTests {
    static func response(_ status: Int, _ body: String, lengthHeader: String = "content-length", extra: String = "") -> String {
        "HTTP/1.1 \(status) OK\r\ncontent-type: application/json\r\n\(extra)\(lengthHeader): \(body.utf8.count)\r\n\r\n\(body)"
    }

    @Test func itsAssertionsVerifyWithTheRelyingParty() throws {
        let key = P256.Signing.PrivateKey()
        let origin = "http://127.0.0.1:8080"
        let rp = RelyingParty(id: "localhost", name: "Nexus", allowedOrigins: [origin])
        let raw = key.publicKey.rawRepresentation
        let cose = Data([0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]) + raw.prefix(32) + Data([0x22, 0x58, 0x20]) + raw.suffix(32)
        let signer = AssertionSigner(key: key, credentialID: "Y3JlZGVudGlhbA", origin: origin, rpID: "localhost", signCount: 7)
        var lastCount: UInt32 = 7
        for challenge in ["Q2hhbGxlbmdlQ2hhbGxlbmdlQ2hhbGxlbmdlMTIzNA", "YW5vdGhlcg"] {
            let body = try signer.assertion(for: challenge)
            let assertion = try JSONDecoder().decode(AuthenticationResponseJSON.self, from: Data(body.utf8))
            #expect(assertion.id == "Y3JlZGVudGlhbA" && assertion.rawId == assertion.id && assertion.type == "public-key")
            let (clientData, clientDataRaw) = try rp.clientData(assertion.response.clientDataJSON, expectedType: "webauthn.get")
            #expect(clientData.challenge == challenge)
            let count = try rp.verifyAssertion(
                assertion, clientDataRaw: clientDataRaw, credentialKey: try COSEKey(cose: cose), storedSignCount: lastCount, requireUserVerification: true
            )
            #expect(count == lastCount + 1)
            lastCount = count
        }
    }

    @Test func topUpBodiesAreTheOrderWithItsToken() throws {
        let order = TopupOrder(amount: 50, productCode: "AIRTIME_MTN", recipientPhone: "08012345678", supplierSlug: "mtn")
        let body = try TopupBody(order).with(token: "aGVhZA.cGF5bG9hZA.c2ln")
        struct Sent: Decodable, Equatable { var amount: Int; var productCode: String; var recipientPhone: String; var supplierSlug: String?; var useCashback: Bool; var verificationToken: String }
        #expect(try JSONDecoder().decode(Sent.self, from: Data(body.utf8)) == Sent(
            amount: 50, productCode: "AIRTIME_MTN", recipientPhone: "08012345678", supplierSlug: "mtn", useCashback: false, verificationToken: "aGVhZA.cGF5bG9hZA.c2ln"
        ))
    }

    @Test func requestsAreHTTP11WithTheirHeadersAndALength() {
        let body = #"{"a":1}"#
        let request = String(buffer: RawHTTPRequest.make("POST", "/user/topup", host: "h:1", authorization: "Bearer x", idempotencyKey: "k", body: body))
        #expect(request == "POST /user/topup HTTP/1.1\r\nHost: h:1\r\nAuthorization: Bearer x\r\nIdempotency-Key: k\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n" + body)
        #expect(String(buffer: RawHTTPRequest.make("GET", "/health", host: "h:1")) == "GET /health HTTP/1.1\r\nHost: h:1\r\n\r\n")
    }

    @Test func responsesAreFramedByTheirLengthWhateverTheReadsLookLike() throws {
        let first = Self.response(200, #"{"challenge":"abc_-1","rpId":"localhost"}"#)
        let second = Self.response(401, #"{"error":"no"}"#, lengthHeader: "Content-Length", extra: "Connection: close\r\n")
        let wire = Array((first + second).utf8)
        // Every split of the two pipelined responses into two reads gives the same two responses,
        // the second marked as the connection's last.
        for split in 0...wire.count {
            var buffer = ByteBuffer(bytes: wire[..<split])
            var parsed: [RawHTTPResponse] = []
            var closes: [Bool] = []
            while let (response, last) = try RawResponseParser.parse(&buffer) { parsed.append(response); closes.append(last) }
            buffer.writeBytes(wire[split...])
            while let (response, last) = try RawResponseParser.parse(&buffer) { parsed.append(response); closes.append(last) }
            #expect(parsed.map(\.status) == [200, 401], "split at \(split)")
            #expect(closes == [false, true])
            #expect(parsed.first?.stringValue(of: "challenge") == "abc_-1")
            #expect(parsed.last.map { String(buffer: $0.body) } == #"{"error":"no"}"#)
            #expect(buffer.readableBytes == 0)
        }
    }

    @Test func whatItCannotFrameIsAnError() {
        for bad in ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "SSH-2.0-OpenSSH_9.2\r\n\r\n", "HTTP/1.1 2x0 OK\r\ncontent-length: 0\r\n\r\n"] {
            var buffer = ByteBuffer(string: bad)
            let error = #expect(throws: PurseError.self, "\(bad)") { try RawResponseParser.parse(&buffer) }
            #expect(error?.kind == .invalidResponse)
        }
    }

    @Test func fieldsAreReadOnlyWhenTheyArePlainStrings() {
        let response = RawHTTPResponse(status: 200, body: ByteBuffer(string: #"{"verificationToken":"a.b.c","message":"say \"hi\"","n":3}"#))
        #expect(response.stringValue(of: "verificationToken") == "a.b.c")
        #expect(response.stringValue(of: "message") == nil)
        #expect(response.stringValue(of: "n") == nil)
        #expect(response.stringValue(of: "missing") == nil)
    }
}

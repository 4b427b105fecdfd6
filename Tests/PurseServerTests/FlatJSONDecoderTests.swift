import Foundation
import HTTPTypes
import JWTKit
import NIOCore
import PurseDatabase
@testable import PurseServer
import PurseTestSupport
import Testing

/// ``FlatJSONDecoder`` either gives exactly what Foundation's `JSONDecoder` gives, or nothing
/// (and Foundation decides): never a value Foundation would not give, never a document Foundation
/// refuses. And it does take the documents the hot paths receive.
@Suite("Flat JSON decoder")
struct FlatJSONDecoderTests {
    enum Network: String, Codable, Equatable { case mtn, airtel }
    enum Level: Int, Codable, Equatable { case low = 1, high = 2 }

    struct Body: Codable, Equatable {
        var amount: Int
        var code: String
        var phone: String?
        var flag: Bool?
        var ratio: Double?
        var big: Int64?
        var small: UInt8?
        var network: Network?
        var level: Level?
    }

    /// Decoded both ways; a flat answer must be Foundation's answer, and Foundation's refusals are refusals.
    func agree<T: Decodable & Equatable>(_ type: T.Type, _ text: some Collection<UInt8>, sourceLocation: SourceLocation = #_sourceLocation) -> T? {
        let data = Data(text)
        let flat = FlatJSONDecoder().decodeIfFlat(T.self, from: data)
        let foundation = try? JSONDecoder().decode(T.self, from: data)
        if let flat {
            #expect(foundation == flat, "flat decoded \(String(decoding: data, as: UTF8.self).debugDescription) where Foundation gave \(String(describing: foundation))", sourceLocation: sourceLocation)
        }
        return flat
    }

    @Test func readsTheHotPathsDocuments() throws {
        let topup = #"{"amount":500,"productCode":"AIRTIME_MTN","recipientPhone":"08012345678","verificationToken":"eyJ.x.y","supplierSlug":"mtn","useCashback":false}"#
        struct Topup: Decodable, Equatable {
            var amount: Int; var productCode: String; var recipientPhone: String
            var verificationToken: String?; var pin: String?; var supplierSlug: String?; var useCashback: Bool?
        }
        #expect(agree(Topup.self, Array(topup.utf8)) == Topup(
            amount: 500, productCode: "AIRTIME_MTN", recipientPhone: "08012345678", verificationToken: "eyJ.x.y", pin: nil, supplierSlug: "mtn", useCashback: false
        ))
        // What jwt-kit writes for our claims, and a header as jwt-kit writes it.
        let claims = PurseTokenClaims(
            sub: .init(value: "usr_1"), exp: .init(value: Date(timeIntervalSince1970: 1_795_393_674.685)), iat: .init(value: Date(timeIntervalSince1970: 1_795_393_374.685)),
            jti: .init(value: "jti_1"), purpose: "nexus.verification", intent: "transaction"
        )
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        let payload = try encoder.encode(claims)
        #expect(FlatJSONDecoder().decodeIfFlat(PurseTokenClaims.self, from: payload) == claims)
        struct Header: Decodable, Equatable { var alg: String?; var kid: String? }
        #expect(agree(Header.self, Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) == Header(alg: "HS256", kid: nil))
    }

    @Test func agreesWithFoundationOnChosenDocuments() {
        let taken: [String] = [
            #"{"amount":1,"code":""}"#,
            #" {"code" : "x" , "amount" : -0 } "#,
            "{\n\t\"amount\":\r\n9223372036854775807,\"code\":\"a\"}",
            #"{"amount":-9223372036854775808,"code":"a"}"#,
            #"{"amount":2,"code":"q\"uote\\back\/slash\b\f\n\r\t","phone":null,"flag":true}"#,
            #"{"amount":3,"code":"\u00e9\u20A6\ud83d\ude42\u0000","ratio":1.5e3}"#,
            #"{"amount":4,"code":"naïve ₦500 🙂","ratio":-0.0,"big":-12,"small":255}"#,
            #"{"amount":5,"code":"c","network":"airtel","level":2,"extra":"ignored","more":false,"n":null,"x":1e400}"#,
            #"{"amount":6,"code":"c","ratio":0.1}"#,
            #"{"amount":7,"code":"c","ratio":123456789012345678901234567890}"#,
            #"{"amount":8,"code":"c","ratio":0e10}"#,
        ]
        for text in taken {
            #expect(agree(Body.self, Array(text.utf8)) != nil, "\(text)")
        }
        let refused: [String] = [
            "", " ", "{", "}", "[]", "null", "1", #""s""#, "{}", #"{"amount":1}"#,
            #"{"amount":1,"code":"a"} x"#, #"{"amount":1,"code":"a",}"#, #"{"amount":1,,"code":"a"}"#,
            #"{"amount":01,"code":"a"}"#, #"{"amount":1.0,"code":"a"}"#, #"{"amount":1e2,"code":"a"}"#, #"{"amount":+1,"code":"a"}"#,
            #"{"amount":9223372036854775808,"code":"a"}"#, #"{"amount":"1","code":"a"}"#, #"{"amount":true,"code":"a"}"#,
            #"{"amount":1,"code":"a","small":256}"#, #"{"amount":1,"code":"a","small":-1}"#, #"{"amount":1,"code":null}"#,
            #"{"amount":1,"code":"a","ratio":1e-400}"#, #"{"amount":1,"code":"a","ratio":1e400}"#, #"{"amount":1,"code":"a","ratio":.5}"#,
            #"{"amount":1,"code":"a","ratio":1.}"#, #"{"amount":1,"code":"a","ratio":-}"#, #"{"amount":1,"code":"a","ratio":1e}"#,
            #"{"amount":1,"code":"a","network":"glo"}"#, #"{"amount":1,"code":"a","level":3}"#,
            #"{"amount":1,"code":"a","nested":{"b":1}}"#, #"{"amount":1,"code":"a","list":[1]}"#,
            #"{"amount":1,"code":"a","code":"b"}"#, #"{"amount":1,"c\u006fde":"a"}"#,
            #"{"amount":1,"code":"\ud83d"}"#, #"{"amount":1,"code":"\ude42"}"#, #"{"amount":1,"code":"\x"}"#, #"{"amount":1,"code":"\u12"}"#,
            "{\"amount\":1,\"code\":\"tab\there\"}", #"{"amount":1,"code":"unterminated}"#, #"{amount:1,"code":"a"}"#,
            #"{"amount":1,"code":"a","flag":tru}"#, #"{"amount":1,"code":"a","flag":nul}"#, #"{'amount':1}"#,
        ]
        for text in refused {
            #expect(agree(Body.self, Array(text.utf8)) == nil, "\(text)")
        }
        // Bytes that are not UTF-8, in a value that is read and in one that is not; a BOM; UTF-16.
        for bytes in [
            Array(#"{"amount":1,"code":""#.utf8) + [0xFF] + Array(#""}"#.utf8),
            Array(#"{"amount":1,"code":"a","x":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8),
            [0xEF, 0xBB, 0xBF] + Array(#"{"amount":1,"code":"a"}"#.utf8),
            Array(#"{"amount":1,"code":"a"}"#.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }),
        ] {
            #expect(agree(Body.self, bytes) == nil)
        }
    }

    /// Random documents near the grammar's edges — and random mutilations of them — never make the
    /// two disagree, and most well-formed ones take the fast path.
    @Test func agreesWithFoundationOnRandomDocuments() {
        var generator = SplitMix(seed: 0x5EED_F1A7)
        let keys = ["amount", "code", "phone", "flag", "ratio", "big", "small", "network", "level", "extra", "c\\u006fde"]
        let values = [
            "0", "-0", "7", "-7", "255", "256", "-1", "01", "1.5", "-2.25e-3", "1e2", "1E+2", "9223372036854775807", "9223372036854775808",
            "1e400", "1e-400", "true", "false", "null", #""""#, #""mtn""#, #""airtel""#, #""x\"y\\z""#, #""\u00e9\ud83d\ude42""#,
            #""\ud83d""#, #""naïve""#, "1", "2", "3", "{}", "[]", #"{"a":1}"#, "tru", "-", #""\t""#,
        ]
        var fast = 0
        var wellFormed = 0
        for round in 0..<3_000 {
            var members: [String] = []
            if round % 2 == 0 { members += [#""amount":\#(Int.random(in: -5...1_000, using: &generator))"#, #""code":"c\#(round)""#] }
            for _ in 0..<Int.random(in: 0...5, using: &generator) {
                members.append("\"\(keys.randomElement(using: &generator)!)\":\(values.randomElement(using: &generator)!)")
            }
            members.shuffle(using: &generator)
            var bytes = Array(("{" + members.joined(separator: ",") + "}").utf8)
            if round % 3 == 0, !bytes.isEmpty {
                // Mutilate: drop, duplicate or replace one byte.
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes.remove(at: index)
                case 1: bytes.insert(bytes[index], at: index)
                default: bytes[index] = [UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: ","), UInt8(ascii: "}"), 0x00, 0xFF, UInt8(ascii: "9")].randomElement(using: &generator)!
                }
            }
            if (try? JSONDecoder().decode(Body.self, from: Data(bytes))) != nil { wellFormed += 1 }
            if agree(Body.self, bytes) != nil { fast += 1 }
        }
        #expect(wellFormed > 300)
        #expect(fast > wellFormed / 2, "fast \(fast) of \(wellFormed) documents Foundation decoded")
    }

    /// Bodies through `JSONBody` (from a `ByteBuffer`, as routes get them) and tokens through the
    /// server's jwt-kit parser give the same values and errors as before.
    @Test func jsonBodyAndTokensUseIt() async throws {
        struct Topup: Decodable, Equatable { var amount: Int; var productCode: String }
        #expect(try JSONBody.decode(Topup.self, from: ByteBuffer(string: #"{"amount":5,"productCode":"A"}"#)) == Topup(amount: 5, productCode: "A"))
        for (body, message) in [
            (#"{"amount":5}"#, "Missing required field 'productCode'"),
            (#"{"amount":"5","productCode":"A"}"#, "Field 'amount' has the wrong type (expected an integer)"),
            (#"{"amount":5,"productCode":"A""#, "Malformed JSON body: expected ',' or '}' at byte 29"),
        ] {
            let error = #expect(throws: APIError.self) { try JSONBody.decode(Topup.self, from: ByteBuffer(string: body)) }
            #expect(error?.status == .badRequest)
            #expect(error?.message == message)
        }

        let decoder = FlatFirstJWTDecoder()
        // Claims with jwt-kit's own date-valued claim types go to jwt-kit's decoder (seconds since 1970).
        struct Standard: JWTPayload, Equatable {
            var sub: SubjectClaim
            var exp: ExpirationClaim
            func verify(using algorithm: some JWTAlgorithm) throws {}
        }
        let standard = try decoder.decode(Standard.self, from: Data(#"{"sub":"u","exp":1795393674}"#.utf8))
        #expect(standard.exp.value == Date(timeIntervalSince1970: 1_795_393_674))

        let service = await TokenService(secret: Array(repeating: 7, count: 32), now: { Date(timeIntervalSince1970: 1_795_393_000) })
        let (token, claims) = try await service.issue(for: UserID("usr_1"), purpose: "nexus.verification", lifetime: 300, intent: "transaction")
        #expect(try await service.verify(token, purpose: "nexus.verification") == claims)
        // The signature's first character changed (to another one whatever it was): a different signature.
        let signatureStart = token.index(after: token.lastIndex(of: ".")!)
        let tampered = token.replacingCharacters(in: signatureStart...signatureStart, with: token[signatureStart] == "A" ? "B" : "A")
        await #expect(throws: TokenError.invalid) { try await service.verify(tampered, purpose: "nexus.verification") }
    }
}

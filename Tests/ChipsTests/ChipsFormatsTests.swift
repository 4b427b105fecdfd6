import ChipsProtocol
import ChipsService
import Crypto
import Foundation
import MyCHIPs
import PurseFormats
import PurseKit
import Testing

@Suite("MyCHIPs formats: tickets and links, the connection key, JavaScript's JSON text")
struct ChipsFormatsTests {
    @Test("a ticket reads from its JSON, a bare object, its link and the app's scheme, and writes back the same")
    func tickets() throws {
        let json = #"{"ticket":{"token":"a1b2c3","expires":"2026-11-25T14:00:00.000Z","host":"mychips.example","port":1025,"user":"admin"}}"#
        let ticket = try ChipsTicket.parse(json)
        #expect(ticket.token == "a1b2c3" && ticket.host == "mychips.example" && ticket.port == 1025 && ticket.user == "admin")
        #expect(ticket.expires == Date(timeIntervalSince1970: 1_795_615_200))
        #expect(try ChipsTicket.parse(ticket.json) == ticket)
        #expect(try ChipsTicket.parse(#"{"token":"a1b2c3","host":"mychips.example","port":"1025"}"#).user == nil)

        let link = "https://mychips.org/ticket?host=mychips.example&port=1025&user=admin&token=a1b2c3"
        let fromLink = try ChipsTicket.parse(link)
        #expect(fromLink.token == "a1b2c3" && fromLink.user == "admin" && fromLink.expires == nil)
        #expect(fromLink.link == link)
        #expect(try ChipsTicket.parse("mychips://ticket?host=h&port=1&token=t").host == "h")

        #expect(ticket.isExpired(at: Date(timeIntervalSince1970: 1_795_615_200)))
        #expect(!ticket.isExpired(at: Date(timeIntervalSince1970: 1_795_615_199)))
    }

    @Test("what is not a ticket is refused with the reason")
    func badTickets() {
        for text in ["", "hello", "{", #"{"ticket":{"host":"h","port":1}}"#, #"{"ticket":{"token":"t","port":1}}"#,
                     #"{"ticket":{"token":"t","host":"h","port":70000}}"#, #"{"ticket":{"token":"t","host":"h","port":1,"expires":"soon"}}"#,
                     "https://example.com/ticket?token=t&host=h&port=1", "https://mychips.org/pay?chad=a:b"] {
            #expect(throws: ChipsError.self, "\(text)") { try ChipsTicket.parse(text) }
        }
    }

    @Test("the connection key exports and imports as a JWK and signs as WebCrypto does (P-521, SHA-384, raw r‖s)")
    func connectionKey() throws {
        let key = ConnectionKey()
        let copy = try ConnectionKey(jwk: key.privateJWK)
        #expect(copy.publicJWK == key.publicJWK)
        let jwk = try #require(EllipticCurveJWK.parse(key.publicJWK))
        #expect(jwk.kty == "EC" && jwk.crv == "P-521" && jwk.d == nil && jwk.rawPublicKey?.count == 132)
        #expect(String(decoding: try #require(Base64URL.decode(key.loginPub)), as: UTF8.self) == key.publicJWK)

        let message = #"{"ip":"127.0.0.1","userAgent":"x","date":"2026-11-25T12:00:00.000Z"}"#
        let signature = try #require(Base64URL.decode(try copy.sign(message)))
        #expect(signature.count == 132)
        let publicKey = try P521.Signing.PublicKey(rawRepresentation: try #require(jwk.rawPublicKey))
        #expect(publicKey.isValidSignature(try P521.Signing.ECDSASignature(rawRepresentation: signature), for: SHA384.hash(data: Data(message.utf8))))

        #expect(throws: ChipsError.self) { try ConnectionKey(jwk: key.publicJWK) }
        var mismatched = try #require(EllipticCurveJWK.parse(key.privateJWK))
        mismatched.x = try #require(EllipticCurveJWK.parse(ConnectionKey().publicJWK)).x
        #expect(throws: ChipsError.self) { try ConnectionKey(jwk: mismatched.jsonText) }
    }

    @Test("a JWK read from a JSON object's members is the JWK its JSON text decodes to, refusals included")
    func jwkFromMembers() throws {
        let key = SigningKey()
        let objects: [JSONValue] = [
            try StrictJSON.parse(Array(key.publicJWK.utf8)), try StrictJSON.parse(Array(key.privateJWK.utf8)),
            ["kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"], ["kty": "EC", "crv": "P-521", "x": "AA", "y": "AA", "d": .null, "ext": .null],
            ["kty": "EC", "crv": "P-521", "x": "AA"], ["kty": "EC", "crv": "P-521", "x": 1, "y": "AA"],
            ["kty": "EC", "crv": "P-521", "x": "AA", "y": "AA", "ext": 1], ["kty": "EC", "crv": "P-521", "x": "AA", "y": "AA", "ext": "true"],
            ["kty": "EC", "crv": "P-521", "x": "AA", "y": "AA", "key_ops": ["verify", 1]], ["kty": "EC", "crv": "P-521", "x": "AA", "y": "AA", "key_ops": "verify"],
            ["kty": "EC", "crv": "P-521", "x": "AA", "y": "AA", "d": 5], ["kty": "EC", "crv": "P-521", "x": "AA", "y": "AA", "other": [1, 2]],
        ]
        for object in objects {
            guard case .object(let members) = object else { throw ChipsError.keyStore("not an object") }
            #expect(EllipticCurveJWK(members: members) == EllipticCurveJWK.parse(JavaScriptJSON.stringify(object)), "\(object)")
        }
        // The signature check reads a certificate's key either way.
        let text = "a chit's signing text"
        let signature = try key.sign(text)
        let object = try StrictJSON.parse(Array(key.publicJWK.utf8))
        for verifier in [ChipsSignatureVerifier.swiftCrypto, .purseP521] {
            #expect(ChipsSignature.isValid(signature, over: text, publicKey: object, verifier: verifier))
            #expect(ChipsSignature.isValid(signature, over: text, publicKey: .string(key.publicJWK), verifier: verifier))
            #expect(!ChipsSignature.isValid(signature, over: text + ".", publicKey: object, verifier: verifier))
            #expect(!ChipsSignature.isValid(signature, over: text, publicKey: try StrictJSON.parse(Array(key.privateJWK.utf8)), verifier: verifier))
        }
    }

    @Test("a key imported from another device logs in as that device")
    func importKey() async throws {
        let original = ConnectionKey()
        let keychain = ChipsKeychain(store: InMemorySecureStore())
        let account = ChipsKeychain.Account(host: "h", port: 1025, user: "u", httpPort: 1024, secure: true)
        try await keychain.importKey(jwk: original.privateJWK, account: account)
        #expect(try await keychain.key()?.publicJWK == original.publicJWK)
        #expect(try await keychain.account() == account)
        try await keychain.forget()
        #expect(try await keychain.key() == nil)
    }

    @Test("JSON text as JavaScript's JSON.stringify writes it")
    func javaScriptJSON() {
        #expect(JavaScriptJSON.object([("ip", "::1"), ("cookie", "a=b; c=d"), ("userAgent", "Mozilla/5.0 (X)"), ("date", "2026-11-25T12:00:00.000Z")])
            == #"{"ip":"::1","cookie":"a=b; c=d","userAgent":"Mozilla/5.0 (X)","date":"2026-11-25T12:00:00.000Z"}"#)
        #expect(JavaScriptJSON.quoted("a\"b\\c/d\n\t\u{01}é€😀") == #""a\"b\\c/d\n\t\u0001é€😀""#)
        #expect(JavaScriptJSON.stringify(["b": 1, "a": [true, .null, .double(2.5), .double(3.0)], "c": ["z": "y"]]) == #"{"a":[true,null,2.5,3],"b":1,"c":{"z":"y"}}"#)
        // The stable JSON chits are signed over: sorted, nulls dropped from objects.
        #expect(JavaScriptJSON.stable(["uuid": "u", "memo": .null, "units": 12500, "ref": ["inv": 7, "note": .null], "list": [.null, 1]])
            == #"{"list":[null,1],"ref":{"inv":7},"units":12500,"uuid":"u"}"#)
    }

    /// Writes signatures our client made, for `scripts/oracles/chips_wyseman.py verify`
    /// (`CHIPS_VECTORS_OUT=FILE`); without the variable it checks they are well-formed.
    @Test("our client makes login signatures other implementations verify")
    func writesSignatureVectors() throws {
        var vectors: [JSONValue] = []
        for index in 0..<8 {
            let key = ConnectionKey()
            let message = JavaScriptJSON.object([("ip", "127.0.0.1"), ("userAgent", .string("purse/\(index) é")), ("date", .string("2026-11-25T12:00:0\(index).000Z"))])
            vectors.append(["jwk": .string(key.publicJWK), "message": .string(message), "sign": .string(try key.sign(message))])
        }
        #expect(vectors.count == 8)
        if let path = ProcessInfo.processInfo.environment["CHIPS_VECTORS_OUT"] {
            try Data(JavaScriptJSON.stringify(.array(vectors)).utf8).write(to: URL(fileURLWithPath: path))
        }
    }
}

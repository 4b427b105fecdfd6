import HTTPTypes
import Hummingbird
import PurseDatabase
@testable import PurseServer
import Testing

/// `Authorization: Bearer <token>`: the scheme in any case, one field, blanks around the token.
@Suite("Session authenticator: bearer token")
struct SessionAuthenticatorTests {
    @Test func readsTheTokenOfABearerField() {
        let cases: [(String, String?)] = [
            ("Bearer abc.def.ghi", "abc.def.ghi"),
            ("bearer abc", "abc"),
            ("BEARER abc", "abc"),
            ("bEaReR abc", "abc"),
            ("Bearer    abc \t ", "abc"),
            ("Bearer \tabc", "abc"),
            ("Bearer", nil),
            ("Bearer ", nil),
            ("Bearer  \t ", nil),
            ("Bearerabc", nil),
            ("Bearer\tabc", nil),
            ("Basic dXNlcjpwYXNz", nil),
            ("Bearex abc", nil),
            ("Bearer! abc", nil),
            ("", nil),
            ("Béarer abc", nil),
        ]
        for (header, token) in cases {
            #expect(SessionAuthenticator.bearerToken(fromAuthorization: header) == token, "\(header.debugDescription)")
        }
    }

    @Test func oneAuthorizationFieldOnly() {
        func request(_ values: [String]) -> Request {
            var fields = HTTPFields()
            for value in values { fields.append(HTTPField(name: .authorization, value: value)) }
            fields.append(HTTPField(name: .accept, value: "application/json"))
            let head = HTTPRequest(method: .get, scheme: "http", authority: "localhost", path: "/user/balance", headerFields: fields)
            return Request(head: head, body: .init(buffer: .init()))
        }
        #expect(SessionAuthenticator.bearerToken(request([])) == nil)
        #expect(SessionAuthenticator.bearerToken(request(["Bearer abc"])) == "abc")
        #expect(SessionAuthenticator.bearerToken(request(["Bearer abc", "Bearer def"])) == nil)
        #expect(SessionAuthenticator.bearerToken(request(["Bearer abc", "Bearer abc"])) == nil)
    }
}

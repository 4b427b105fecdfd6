import ConnectService
import Foundation
import HTTPTypes
import PurseHTTP
import PurseServer
import Testing

/// Our Stripe client and webhook verification against what PyPI's `stripe` library does
/// (fixtures made by scripts/oracles/stripe_connect.py).
@Suite("Maly: Stripe protocol vs stripe-python")
struct StripeProtocolTests {
    struct Webhooks: Decodable {
        struct Case: Decodable { var name: String; var header: String; var payload: String; var now: Int; var accepted: Bool }
        var secret: String
        var cases: [Case]
    }

    struct Requests: Decodable {
        struct Recorded: Decodable { var method: String; var path: String; var body: String; var headers: [String: String] }
        var requests: [Recorded]
    }

    static func fixture<T: Decodable>(_ name: String, as type: T.Type) throws -> T {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"))
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }

    @Test func webhookVerdictsMatchStripePython() throws {
        let fixture = try Self.fixture("stripe_webhooks", as: Webhooks.self)
        #expect(fixture.cases.count >= 7)
        for testCase in fixture.cases {
            let verdict: Bool
            do {
                try WebhookSignature.verify(header: testCase.header, payload: Data(testCase.payload.utf8), secret: fixture.secret,
                                            now: Date(timeIntervalSince1970: TimeInterval(testCase.now)))
                verdict = true
            } catch {
                verdict = false
            }
            #expect(verdict == testCase.accepted, "\(testCase.name)")
        }
    }

    @Test func weSignExactlyAsStripePythonDoes() throws {
        let fixture = try Self.fixture("stripe_webhooks", as: Webhooks.self)
        let valid = try #require(fixture.cases.first { $0.name == "valid" })
        let timestamp = try #require(Int(valid.header.split(separator: ",")[0].dropFirst(2)))
        #expect(WebhookSignature.header(payload: Data(valid.payload.utf8), secret: fixture.secret, timestamp: timestamp) == valid.header)
    }

    @Test func ourRequestsMatchStripePythons() throws {
        let recorded = try Self.fixture("stripe_requests", as: Requests.self).requests
        #expect(recorded.count == 3)
        let client = StripeClient(baseURL: "http://capture", secretKey: "sk_test_fixture")
        let ours = [
            try client.makeRequest(.post, "/v1/accounts", params: [
                ("type", "express"), ("country", "US"), ("email", "host@example.com"),
                ("capabilities", ["card_payments": ["requested": true], "transfers": ["requested": true]]),
                ("metadata", ["purse_user_id": "usr_fixture"]),
            ], idempotencyKey: "key-create"),
            try client.makeRequest(.post, "/v1/account_links", params: [
                ("account", "acct_1Capture"), ("refresh_url", "https://app.example/stripe/connect/reauth"),
                ("return_url", "https://app.example/stripe/connect/success"), ("type", "account_onboarding"),
            ], idempotencyKey: "key-link"),
            try client.makeRequest(.get, "/v1/accounts/acct_1Capture", params: [], idempotencyKey: nil),
        ]
        for (theirs, mine) in zip(recorded, ours) {
            #expect(mine.method.rawValue == theirs.method)
            #expect(mine.url.absoluteString == "http://capture" + theirs.path)
            #expect(String(decoding: mine.body ?? Data(), as: UTF8.self) == theirs.body, "\(theirs.path)")
            for (name, value) in theirs.headers {
                let field = try #require(HTTPField.Name(name))
                #expect(mine.headerFields[field] == value, "\(theirs.path) \(name)")
            }
        }
    }

    actor Recorder {
        var request: TransportRequest?
        func record(_ request: TransportRequest) { self.request = request }
    }

    @Test func createAccountSendsWhatStripeExpects() async throws {
        // The parameters createAccount builds, in order, encode to stripe-python's body.
        let recorded = try Self.fixture("stripe_requests", as: Requests.self).requests[0]
        let recorder = Recorder()
        let probe = StripeClient(baseURL: "http://capture", secretKey: "sk_test_fixture") { request in
            await recorder.record(request)
            throw StripeClient.Failure(status: 500, type: "api_error", code: nil, message: "probe", param: nil, requestID: nil)
        }
        _ = try? await probe.createAccount(email: "host@example.com", userID: "usr_fixture", idempotencyKey: "key-create")
        #expect(await recorder.request?.body == Data(recorded.body.utf8))
        #expect(await recorder.request?.headerFields[.idempotencyKey] == "key-create")
    }
}

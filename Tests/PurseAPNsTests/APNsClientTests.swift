import Crypto
import Foundation
import HTTPTypes
import PurseAPNs
import PurseFormats
import PurseHTTP
import PurseServer
import PurseTestSupport
import Synchronization
import Testing

@Suite("APNs: the provider API client")
struct APNsClientTests {
    static let key = P256.Signing.PrivateKey()
    static let credentials = APNsCredentials(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", privateKey: key)
    static let token = String(repeating: "ab", count: 32)

    func notification() -> APNsNotification {
        APNsNotification(deviceToken: Self.token, topic: "com.example.app", expiration: Date(timeIntervalSince1970: 1_900_000_000), collapseID: "c1",
                         payload: APNsNotification.alertPayload(title: "Support", body: "Hi", badge: 2, extra: ["conversation_id": .string("conv_1")]))
    }

    @Test("the request: path, headers, ES256 provider token, payload")
    func request() async throws {
        let transport = ScriptedAPNs([TransportResponse(status: 200, headerFields: [.apnsID: "11111111-2222-3333-4444-555555555555"])])
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let client = APNsClient(baseURL: APNsClient.development, transport: transport, credentials: Self.credentials, now: clock.closure)
        #expect(await client.send(notification()) == .sent(apnsID: "11111111-2222-3333-4444-555555555555"))
        let request = try #require(transport.sent.withLock { $0.first })
        #expect(request.url.absoluteString == "https://api.sandbox.push.apple.com/3/device/\(Self.token)")
        #expect(request.headerFields[.apnsTopic] == "com.example.app" && request.headerFields[.apnsPushType] == "alert")
        #expect(request.headerFields[.apnsPriority] == "10" && request.headerFields[.apnsExpiration] == "1900000000" && request.headerFields[.apnsCollapseID] == "c1")
        let bearer = try #require(request.headerFields[.authorization]?.dropFirst("bearer ".count))
        let claims = try #require(APNsProviderToken.verify(String(bearer), publicKey: Self.key.publicKey))
        #expect(claims == APNsProviderToken.Claims(keyID: "ABC123DEFG", teamID: "DEF123GHIJ", issuedAt: clock.now))
        #expect(APNsProviderToken.verify(String(bearer), publicKey: P256.Signing.PrivateKey().publicKey) == nil)
        let payload = try JSONDecoder().decode(JSONValue.self, from: try #require(request.body))
        #expect(payload["aps"]?["alert"]?["title"] == .string("Support") && payload["aps"]?["badge"]?.int64Value == 2)
        #expect(payload["aps"]?["sound"] == .string("default") && payload["conversation_id"] == .string("conv_1"))
    }

    @Test("one provider token for 50 minutes, then a new one; ExpiredProviderToken signs again at once")
    func tokenLifetime() async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let transport = ScriptedAPNs([])
        let client = APNsClient(baseURL: APNsClient.production, transport: transport, credentials: Self.credentials, now: clock.closure)
        _ = await client.send(notification())
        clock.advance(by: 49 * 60)
        _ = await client.send(notification())
        clock.advance(by: 2 * 60)
        _ = await client.send(notification())
        let tokens = transport.sent.withLock { $0.map { $0.headerFields[.authorization]! } }
        #expect(tokens[0] == tokens[1] && tokens[1] != tokens[2])

        let expired = ScriptedAPNs([TransportResponse(status: 403, body: Data(#"{"reason":"ExpiredProviderToken"}"#.utf8))])
        let again = APNsClient(baseURL: APNsClient.production, transport: expired, credentials: Self.credentials, now: clock.closure)
        #expect(await again.send(notification()) == .sent(apnsID: notification().id) || expired.sent.withLock { $0.count } == 2)
        #expect(expired.sent.withLock { $0.count } == 2)
    }

    @Test("Apple's answers: 410 unregistered, 429 and 5xx retry, other 4xx fail with the reason")
    func outcomes() async throws {
        func outcome(_ status: HTTPResponse.Status, _ reason: String) async -> APNsOutcome {
            let transport = ScriptedAPNs([TransportResponse(status: status, body: Data(#"{"reason":"\#(reason)"}"#.utf8))])
            return await APNsClient(baseURL: APNsClient.production, transport: transport, credentials: Self.credentials).send(notification())
        }
        #expect(await outcome(410, "Unregistered") == .unregistered(reason: "Unregistered"))
        #expect(await outcome(400, "BadDeviceToken") == .unregistered(reason: "BadDeviceToken"))
        #expect(await outcome(429, "TooManyRequests") == .retry(reason: "TooManyRequests"))
        #expect(await outcome(503, "ServiceUnavailable") == .retry(reason: "ServiceUnavailable"))
        #expect(await outcome(400, "TopicDisallowed") == .failed(status: 400, reason: "TopicDisallowed"))
        #expect(await outcome(413, "PayloadTooLarge") == .failed(status: 413, reason: "PayloadTooLarge"))
    }
}

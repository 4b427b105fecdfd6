@testable import CutiE
@testable import CutiEService
import Crypto
import Foundation
import HTTPTypes
import HummingbirdTesting
import PurseDatabase
import PurseFormats
import PurseHTTP
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// Subscriptions verified server-side: StoreKit transactions and App Store Server Notifications
/// signed by the sandbox's development signer go through the same checks as Apple's.
@Suite("Cuti-E: subscriptions")
struct SubscriptionTests {
    static let bundle = "com.purse.cutie.sandbox"

    @Test("the embedded Apple Root CA – G3 is Apple's (its published SHA-256 fingerprint)")
    func appleRoot() throws {
        #expect(Hex.encode(SHA256.hash(data: StoreKitVerifier.appleRootG3DER)) == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
    }

    @Test("the manager buys through the store, the backend verifies, the tier and limit follow")
    func managerJourney() async throws {
        try await CutiEHarness.withServer { h in try await Self.journey(h) }
    }

    @MainActor
    static func journey(_ h: CutiEHarness) async throws {
        let device = h.device()
        let store = SandboxSubscriptionStore(baseURL: URL(string: "http://localhost")!, transport: RouterTransport(client: h.client), bundleID: Self.bundle)
        let manager = CutiESubscriptionManager(cutie: device.cutie, store: store)
        await manager.updateSubscriptionStatus()
        #expect(manager.currentTier == .free && manager.feedbackLimit == 50 && manager.subscriptionStatus == .none)
        await manager.loadProducts()
        #expect(manager.products.count == 6)
        let pro = manager.products.first { $0.id == "com.cutie.pro.monthly" }
        guard let pro else { Issue.record("no pro product"); return }
        await manager.purchase(pro)
        #expect(manager.errorMessage == nil)
        #expect(manager.currentTier == .pro && manager.feedbackLimit == 10_000)
        guard case .active(let expires) = manager.subscriptionStatus else { Issue.record("not active"); return }
        #expect((expires ?? .distantPast) > h.server.clock.now.addingTimeInterval(29 * 86_400))
        await manager.restorePurchases()
        #expect(manager.currentTier == .pro && manager.errorMessage == nil)
    }

    @Test("the free tier's 50 conversations a month hold under 100 parallel requests; existing ones keep working")
    func limitUnderLoad() async throws {
        // One device sends them all: its own daily limit is off here (DeviceLimitTests has it).
        try await CutiEHarness.withServer(adjust: { $0.conversationsPerDeviceDay = 0 }) { h in
            let device = try await h.register()
            let statuses = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for n in 0..<100 {
                    group.addTask {
                        let (status, body, _) = try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"crash \#(n)"}"#, device: device)
                        return (Int(status.code), body["conversation_id"]?.stringValue ?? body["error"]?.stringValue)
                    }
                }
                return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0.0 == 201 }.count == 50, "\(Set(statuses.map(\.0)))")
            let refused = statuses.filter { $0.0 == 403 }
            #expect(refused.count == 50 && refused.allSatisfy { $0.1?.contains("free tier") == true }, "\(refused.first.map { "\($0)" } ?? "")")
            let (_, usage, _) = try await h.signed(.get, "/v1/usage", device: device)
            #expect(usage["feedback_received"]?.int64Value == 50 && usage["remaining"]?.int64Value == 0 && usage["tier"]?.stringValue == "free")
            let open = try #require(statuses.first { $0.0 == 201 }?.1)
            #expect(try await h.signed(.post, "/v1/conversations/\(open)/messages", body: #"{"message":"more"}"#, device: device).0 == .created)
        }
    }

    func sandboxTransaction(_ h: CutiEHarness, product: String = "com.cutie.starter.monthly", bundle: String = bundle) async throws -> (jws: String, original: String) {
        let (status, body, _) = try await h.raw(.post, "/sandbox/storekit/transactions", body: #"{"bundle_id":"\#(bundle)","product_id":"\#(product)"}"#)
        #expect(status == .ok)
        return (try #require(body["signed_transaction"]?.stringValue), try #require(body["original_transaction_id"]?.stringValue))
    }

    func notify(_ h: CutiEHarness, type: String, subtype: String? = nil, original: String, graceDays: Int? = nil) async throws -> (HTTPResponse.Status, JSONValue, String) {
        let subtypeField = subtype.map { #","subtype":"\#($0)""# } ?? ""
        let grace = graceDays.map { #","grace_days":\#($0)"# } ?? ""
        let (_, signed, _) = try await h.raw(.post, "/sandbox/storekit/notifications", body: """
            {"notification_type":"\(type)"\(subtypeField)\(grace),"bundle_id":"\(Self.bundle)","product_id":"com.cutie.starter.monthly","original_transaction_id":"\(original)"}
            """)
        let payload = try #require(signed["signedPayload"]?.stringValue)
        let (status, body, _) = try await h.raw(.post, "/v1/appstore/notifications", body: #"{"signedPayload":"\#(payload)"}"#)
        return (status, body, payload)
    }

    @Test("notifications: grace period keeps the tier, expiry and refund end it, a redelivery changes nothing")
    func notifications() async throws {
        try await CutiEHarness.withServer { h in
            let device = try await h.register()
            let (jws, original) = try await sandboxTransaction(h)
            let verify = #"{"platform":"ios","signed_transaction":"\#(jws)","product_id":"com.cutie.starter.monthly"}"#
            let (verified, subscription, _) = try await h.signed(.post, "/v1/subscription/verify", body: verify, device: device)
            #expect(verified == .ok && subscription["tier"]?.stringValue == "starter" && subscription["status"]?.stringValue == "active")
            func usage() async throws -> (String?, String?) {
                let (_, body, _) = try await h.signed(.get, "/v1/usage", device: device)
                return (body["tier"]?.stringValue, body["status"]?.stringValue)
            }
            let (graceStatus, _, gracePayload) = try await notify(h, type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", original: original, graceDays: 16)
            #expect(graceStatus == .ok)
            #expect(try await usage() == ("starter", "grace_period"))
            // The App Store retries deliveries: the same notification is taken once.
            let (again, duplicate, _) = try await h.raw(.post, "/v1/appstore/notifications", body: #"{"signedPayload":"\#(gracePayload)"}"#)
            #expect(again == .ok && duplicate["duplicate"] == .bool(true))
            _ = try await notify(h, type: "EXPIRED", subtype: "VOLUNTARY", original: original)
            #expect(try await usage() == ("free", "expired"))
            _ = try await notify(h, type: "DID_RENEW", original: original)
            #expect(try await usage() == ("starter", "active"))
            _ = try await notify(h, type: "REFUND", original: original)
            #expect(try await usage() == ("free", "revoked"))
        }
    }

    @Test("bad JWS: alg none, another key, no x5c, a foreign chain, another bundle or product — each a 400 naming the check, nothing recorded")
    func badTransactions() async throws {
        try await CutiEHarness.withServer { h in
            let device = try await h.register()
            let (jws, _) = try await sandboxTransaction(h)
            let parts = jws.split(separator: ".").map(String.init)
            func verify(_ token: String, product: String = "com.cutie.starter.monthly") async throws -> (Int, String) {
                let (status, body, _) = try await h.signed(.post, "/v1/subscription/verify",
                                                           body: #"{"platform":"ios","signed_transaction":"\#(token)","product_id":"\#(product)"}"#, device: device)
                return (Int(status.code), body["error"]?.stringValue ?? "")
            }
            let headerBytes = try #require(Base64URL.decode(parts[0]))
            let header = try #require(try JSONSerialization.jsonObject(with: headerBytes) as? [String: Any])
            func withHeader(_ change: ([String: Any]) -> [String: Any], signature: String? = nil) throws -> String {
                let data = try JSONSerialization.data(withJSONObject: change(header))
                return Base64URL.encode(data) + "." + parts[1] + "." + (signature ?? parts[2])
            }
            let none = try withHeader { var h = $0; h["alg"] = "none"; return h }
            #expect(try await verify(none).1.contains("ES256"))
            let otherKey = P256.Signing.PrivateKey()
            let forged = parts[0] + "." + parts[1] + "." + Base64URL.encode(try otherKey.signature(for: Data((parts[0] + "." + parts[1]).utf8)).rawRepresentation)
            #expect(try await verify(forged).1.contains("signature"))
            let noX5C = try withHeader { var h = $0; h["x5c"] = nil; return h }
            #expect(try await verify(noX5C).1.contains("x5c"))
            let foreignSigner = try StoreKitDevelopmentSigner(rootKey: .init(), intermediateKey: .init(), leafKey: .init(), now: Date())
            let payloadBytes = try #require(Base64URL.decode(parts[1]))
            let payload = try JSONDecoder().decode(StoreKitTransaction.self, from: payloadBytes)
            #expect(try await verify(try foreignSigner.sign(payload)).1.contains("trusted App Store root"))
            #expect(try await verify(jws, product: "com.cutie.pro.monthly").1.contains("not com.cutie.pro.monthly"))
            #expect(try await verify(jws, product: "com.other.pro").1.contains("product_id"))
            let (otherBundle, _) = try await sandboxTransaction(h, bundle: "com.example.elsewhere")
            #expect(try await verify(otherBundle).1.contains("bundle"))
            #expect(try await verify("not.a.jws").0 == 400)
            let rows = try await h.environment.database.read { db in try await db.raw("SELECT COUNT(*) AS n FROM cutie_subscriptions").first()?.decode(column: "n", as: Int.self) }
            #expect(rows == 0)
            // A notification signed by a foreign chain.
            let foreign = AppStoreNotification(notificationType: "REFUND", subtype: nil, notificationUUID: UUID().uuidString, data: nil, version: "2.0", signedDate: 0)
            let (status, body, _) = try await h.raw(.post, "/v1/appstore/notifications", body: #"{"signedPayload":"\#(try foreignSigner.sign(foreign))"}"#)
            #expect(status == .badRequest && body["error"]?.stringValue?.contains("trusted App Store root") == true)
        }
    }
}

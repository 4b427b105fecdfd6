@testable import CutiEService
import Foundation
import HTTPTypes
import PurseDatabase
import PurseFormats
import PurseTestSupport
import PurseServer
import SQLKit
import Testing

/// The app id is public: anyone can register devices with it and open conversations. These are
/// the limits that keep a script from spending an app's feedback (``DeviceLimits``), over a
/// live socket behind a trusted proxy, so each request has the client address nginx names.
@Suite("Cuti-E: limits on fresh devices", .serialized)
struct DeviceLimitTests {
    static let attacker = ["X-Forwarded-For": "203.0.113.7"]
    static let customer = ["X-Forwarded-For": "198.51.100.20"]

    /// Once, 120 conversations from 20 fresh devices at one address left the free tier's
    /// `remaining` at 0, and the app's real users got 403.
    @Test("120 conversations from 20 fresh devices at one address spend a fifth of the free tier; a real user still gets in", arguments: TestEngines.all)
    func freshDevicesCannotSpendTheQuota(engine: DatabaseEngine) async throws {
        try await CutiEHarness.withServer(engine: engine, live: true, trustedProxies: ["127.0.0.1"]) { h in
            var devices: [(id: String, token: String, secret: String)] = []
            for _ in 0..<20 { devices.append(try await h.register(headers: Self.attacker)) }
            var statuses: [Int: Int] = [:]
            for device in devices {
                for n in 0..<6 {
                    let (status, _, _) = try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"spam \#(n)"}"#,
                                                            device: device, headers: Self.attacker)
                    statuses[Int(status.code), default: 0] += 1
                }
            }
            #expect(statuses == [201: 10, 403: 110], "\(statuses)")
            let (_, refused, _) = try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"more"}"#,
                                                     device: devices[0], headers: Self.attacker)
            #expect(refused["error"]?.stringValue?.contains("share (10)") == true, "\(refused)")

            let customer = try await h.register(headers: Self.customer)
            let (status, _, _) = try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"the real one"}"#,
                                                    device: customer, headers: Self.customer)
            #expect(status == .created)
            let (_, usage, _) = try await h.signed(.get, "/v1/usage", device: customer, headers: Self.customer)
            #expect(usage["feedback_received"]?.int64Value == 11 && usage["remaining"]?.int64Value == 39, "\(usage)")
        }
    }

    /// Five networks spend a free app's month (10 each, their share). Support sees who, blocks
    /// one network and gives its month back, blocks one device; the real customer gets in, the
    /// blocked ones get 403 (never 401, which would make an SDK register afresh).
    @Test("the admin sees who spent the month, blocks a network or a device, and gives the quota back", arguments: TestEngines.all)
    func quotaSpentShownBlockedAndGivenBack(engine: DatabaseEngine) async throws {
        try await CutiEHarness.withServer(engine: engine, live: true, trustedProxies: ["127.0.0.1"]) { h in
            let networks = (1...5).map { ["X-Forwarded-For": "203.0.\($0).7"] }
            var spenders: [(id: String, token: String, secret: String)] = []
            for network in networks {
                let device = try await h.register(headers: network)
                spenders.append(device)
                for n in 0..<10 {
                    let (status, _, _) = try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"spam \#(n)"}"#,
                                                            device: device, headers: network)
                    #expect(status == .created)
                }
            }
            let customer = try await h.register(headers: Self.customer)
            let (spent, _, _) = try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"help"}"#, device: customer, headers: Self.customer)
            #expect(spent == .forbidden)

            let owner = try await h.adminSession(role: "owner")
            let (seen, usage, _) = try await h.raw(.get, "/v1/admin/apps/app_sandbox/usage", headers: ["Cookie": owner.cookie])
            #expect(seen == .ok && usage["received"]?.int64Value == 50 && usage["limit"]?.int64Value == 50 && usage["address_share"]?.int64Value == 10, "\(usage)")
            let addresses = usage["addresses"]?.arrayValue ?? [], devices = usage["devices"]?.arrayValue ?? []
            #expect(addresses.count == 5 && addresses.allSatisfy { $0["conversations"]?.int64Value == 10 && $0["blocked"] == .bool(false) })
            #expect(devices.count == 5 && !devices.contains { $0["id"]?.stringValue == spenders[0].id }, "identities, not the ids devices send")
            // Networks are shown hashed, never as addresses.
            #expect(!addresses.contains { $0["id"]?.stringValue?.contains("203.0.") == true })

            // A viewer sees, but does not block.
            let viewer = try await h.adminSession(role: "viewer")
            let network = try #require(addresses.first?["id"]?.stringValue)
            #expect(try await h.raw(.post, "/v1/admin/apps/app_sandbox/blocks", body: #"{"kind":"address","id":"\#(network)"}"#,
                                    headers: ["Cookie": viewer.cookie, "X-CSRF-Token": viewer.csrf]).0 == .forbidden)
            let (blocked, answer, _) = try await h.raw(.post, "/v1/admin/apps/app_sandbox/blocks", body: #"{"kind":"address","id":"\#(network)","give_back":true}"#,
                                                       headers: ["Cookie": owner.cookie, "X-CSRF-Token": owner.csrf])
            #expect(blocked == .created && answer["given_back"]?.int64Value == 10, "\(answer)")
            // The customer gets in now; the blocked network's device and new devices do not.
            #expect(try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"help"}"#, device: customer,
                                       headers: Self.customer).0 == .created)
            let blockedIndex = try #require(networks.indices.first { index in
                DeviceLimits.addressKey(networks[index]["X-Forwarded-For"]!, app: "app_sandbox") == network
            })
            #expect(try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"again"}"#, device: spenders[blockedIndex],
                                       headers: networks[blockedIndex]).0 == .forbidden)
            let (fresh, _, _) = try await h.raw(.post, "/v1/device/register", headers: networks[blockedIndex].merging(["X-App-ID": "app_sandbox",
                                                                                                                   "X-Device-ID": "device_" + UUID().uuidString]) { $1 })
            #expect(fresh == .forbidden)
            // A device block: its every request is 403, its token intact.
            let other = (blockedIndex + 1) % spenders.count
            let (_, list, _) = try await h.signed(.get, "/v1/conversations", device: spenders[other], headers: networks[other])
            let ownIdentity = try await h.environment.database.read { db in
                try await db.raw("SELECT device_id FROM cutie_conversations WHERE id = \(bind: list["conversations"]?.arrayValue?.first?["conversation_id"]?.stringValue ?? "")").first()?
                    .decode(column: "device_id", as: String.self)
            }
            let target = try #require(ownIdentity)
            #expect(try await h.raw(.post, "/v1/admin/apps/app_sandbox/blocks", body: #"{"kind":"device","id":"\#(target)"}"#,
                                    headers: ["Cookie": owner.cookie, "X-CSRF-Token": owner.csrf]).0 == .created)
            #expect(try await h.signed(.get, "/v1/conversations", device: spenders[other], headers: networks[other]).0 == .forbidden)
            // Lifted, it works again; quota can be given back by hand too.
            #expect(try await h.raw(.delete, "/v1/admin/apps/app_sandbox/blocks/device/\(target)", headers: ["Cookie": owner.cookie, "X-CSRF-Token": owner.csrf]).0 == .ok)
            #expect(try await h.signed(.get, "/v1/conversations", device: spenders[other], headers: networks[other]).0 == .ok)
            let (_, given, _) = try await h.raw(.post, "/v1/admin/apps/app_sandbox/usage/give-back", body: #"{"conversations":5}"#,
                                                headers: ["Cookie": owner.cookie, "X-CSRF-Token": owner.csrf])
            #expect(given["given_back"]?.int64Value == 5 && given["received"]?.int64Value == 36, "\(given)")
        }
    }

    /// A device that cannot attest, on an app that requires App Attest, registers again after
    /// every 401 (as the Cuti-E SDK does): that spends its own bucket, not its network's
    /// new-device budget, so a new install behind the same address still registers.
    @Test("a device registering again and again spends its own bucket, never its network's new devices")
    func reregistrationsSpareTheNetwork() async throws {
        try await CutiEHarness.withServer(live: true, trustedProxies: ["127.0.0.1"], adjust: { $0.newDevicesPerAddressHour = 3 }) { h in
            try await h.environment.database.transaction { db in
                _ = try await CutiEApp.updateAttest("app_sandbox", teamID: nil, requireAppAttest: true, attestEnvironment: nil, in: db)
            }
            let stuck = "device_" + UUID().uuidString.lowercased()
            let headers = Self.attacker.merging(["X-App-ID": "app_sandbox", "X-Device-ID": stuck]) { $1 }
            var answers: [Int] = []
            for _ in 0..<8 {
                let (status, body, _) = try await h.raw(.post, "/v1/device/register", headers: headers)
                answers.append(Int(status.code))
                guard status == .ok, let token = body["device_token"]?.stringValue else { continue }
                // Unattested: refused, and the SDK drops the token and registers again.
                let (refused, _, _) = try await h.raw(.get, "/v1/conversations", headers: headers.merging(["X-Device-Token": token]) { $1 })
                #expect(refused == .unauthorized)
            }
            #expect(answers.prefix(4) == [200, 200, 200, 200] && answers.suffix(4).allSatisfy { $0 == 429 }, "\(answers)")
            // Its network's budget lost one, for the stuck device's first registration only: new
            // installs there take the other two.
            for _ in 0..<2 {
                let (fresh, _, _) = try await h.raw(.post, "/v1/device/register",
                                                    headers: Self.attacker.merging(["X-App-ID": "app_sandbox", "X-Device-ID": "device_" + UUID().uuidString.lowercased()]) { $1 })
                #expect(fresh == .ok)
            }
            // From another network the stuck id has a bucket of its own: nobody elsewhere spends it.
            #expect(try await h.raw(.post, "/v1/device/register", headers: Self.customer.merging(["X-App-ID": "app_sandbox", "X-Device-ID": stuck]) { $1 }).0 == .ok)
        }
    }

    @Test("the 31st new device from one address in an hour is 429 with Retry-After; another address and a known device go on")
    func newDevicesPerAddress() async throws {
        try await CutiEHarness.withServer(live: true, trustedProxies: ["127.0.0.1"]) { h in
            var first: (id: String, token: String, secret: String)?
            for _ in 0..<30 {
                let device = try await h.register(headers: Self.attacker)
                if first == nil { first = device }
            }
            let (status, body, headers) = try await h.raw(.post, "/v1/device/register",
                                                         headers: Self.attacker.merging(["X-App-ID": "app_sandbox", "X-Device-ID": "device_" + UUID().uuidString.lowercased()]) { $1 })
            #expect(status == .tooManyRequests && body["error"]?.stringValue?.contains("new devices") == true, "\(status) \(body)")
            #expect(Int(headers[.retryAfter] ?? "") ?? 0 >= 1)
            _ = try await h.register(headers: Self.customer)
            // A known device renewing its token, signed with the current one, is not new.
            let known = try #require(first)
            let (renewed, _, _) = try await h.signed(.post, "/v1/device/register", device: known, headers: Self.attacker)
            #expect(renewed == .ok)
        }
    }

    @Test("a device's 21st new conversation in a day is 429; its retries cost nothing; its messages go on", arguments: TestEngines.all)
    func conversationsPerDevice(engine: DatabaseEngine) async throws {
        try await CutiEHarness.withServer(engine: engine, adjust: { $0.addressQuotaPercent = 0 }) { h in
            let device = try await h.register()
            var last = ""
            for n in 0..<20 {
                let body = #"{"category":"bug","initial_message":"report \#(n)"}"#
                let (status, created, _) = try await h.signed(.post, "/v1/conversations", body: body, device: device,
                                                              headers: ["Idempotency-Key": "report-\(n)"])
                #expect(status == .created)
                last = created["conversation_id"]?.stringValue ?? ""
                // The same request again (a retry after a lost answer) is the first one's answer.
                let (again, replayed, _) = try await h.signed(.post, "/v1/conversations", body: body, device: device,
                                                              headers: ["Idempotency-Key": "report-\(n)"])
                #expect(again == .created && replayed["conversation_id"]?.stringValue == last)
            }
            let (status, body, headers) = try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"one more"}"#, device: device)
            #expect(status == .tooManyRequests && headers[.retryAfter] != nil, "\(status) \(body)")
            #expect(try await h.signed(.post, "/v1/conversations/\(last)/messages", body: #"{"message":"still here"}"#, device: device).0 == .created)
            let other = try await h.register()
            #expect(try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"mine"}"#, device: other).0 == .created)

            // A hundred at once from a fresh device: its 20, not one more.
            let burst = try await h.register()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 0..<100 {
                    group.addTask {
                        Int(try await h.signed(.post, "/v1/conversations", body: #"{"category":"bug","initial_message":"burst \#(n)"}"#, device: burst).0.code)
                    }
                }
                return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            }
            #expect(statuses == [201: 20, 429: 80], "\(statuses)")
        }
    }
}

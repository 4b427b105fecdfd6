import Foundation
import HTTPTypes
import HummingbirdTesting
import NexusPay
@testable import NexusService
import PurseDatabase
import PurseHTTP
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

/// Airtime delivered through the VTpass sandbox: completed, pending then settled, failed and
/// refunded exactly once — also with two servers settling the same top-up at once.
@Suite("Nexus: airtime delivery")
struct AirtimeDeliveryTests {
    struct Answer: Decodable {
        struct Data: Decodable { var transactionId: TransactionID; var status: String; var balance: Int; var cashbackEarned: Int }
        var success: Bool
        var message: String
        var data: Data
    }

    func buy(_ h: NexusHarness, _ user: NexusHarness.User, phone: String, amount: Int = 500) async throws -> Answer {
        let token = try await h.server.environment.tokens.issue(for: user.id, purpose: "nexus.verification", lifetime: 300, intent: "transaction").token
        let response = try await h.client.json(.post, "/user/topup", """
            {"amount": \(amount), "productCode": "AIRTIME_MTN", "recipientPhone": "\(phone)", "verificationToken": "\(token)"}
            """, token: user.token, headers: [.idempotencyKey: UUID().uuidString])
        #expect(response.status == .ok, "\(response.text)")
        return try JSONDecoder().decode(Answer.self, from: Data(response.text.utf8))
    }

    func transaction(_ h: NexusHarness, _ user: NexusHarness.User, _ id: TransactionID) async throws -> [String: Any] {
        let response = try await h.client.json(.get, "/user/transactions/\(id)", token: user.token)
        #expect(response.status == .ok, "\(response.text)")
        return try #require(response.object["data"] as? [String: Any])
    }

    func count(_ h: NexusHarness, _ sql: String) async throws -> Int {
        try await h.server.environment.database.read { db in
            try await db.raw(SQLQueryString(stringLiteral: sql)).first()?.decode(column: "n", as: Int.self) ?? -1
        }
    }

    @Test func aDeliveredTopupCompletesAtOnceAndEarnsCashback() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let answer = try await buy(h, user, phone: "08011111111", amount: 1_000)
            #expect(answer.success && answer.data.status == "completed" && answer.message == "Topup successful")
            #expect(answer.data.balance == 4_000)
            #expect(try await user.nexus.balance().cashback == 10)
            #expect(try await transaction(h, user, answer.data.transactionId)["status"] as? String == "completed")
            // The supplier has the purchase under a request id in VTpass's form.
            let requestID = try await h.server.environment.database.read { db in
                try await db.raw("SELECT request_id FROM nexus_deliveries WHERE transaction_id = \(bind: answer.data.transactionId)").first()?.decode(column: "request_id", as: String.self)
            }
            #expect(requestID.map(VTpassClient.isRequestID) == true)
            #expect(try await count(h, "SELECT COUNT(*) AS n FROM vtpass_sandbox_transactions WHERE final_status = 'delivered'") == 1)
            // The job queued as a safety net went with the settlement.
            #expect(try await count(h, "SELECT COUNT(*) AS n FROM jobs WHERE kind = 'nexus.airtime.delivery'") == 0)
            #expect(try await h.audit().isEmpty)
        }
    }

    @Test func aRefusedTopupFailsAndIsRefundedOnce() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let answer = try await buy(h, user, phone: "08012340000")
            #expect(!answer.success && answer.data.status == "failed")
            #expect(answer.message.contains("is back in your wallet"), "\(answer.message)")
            #expect(answer.data.balance == 5_000)
            let stored = try await transaction(h, user, answer.data.transactionId)
            #expect(stored["status"] as? String == "failed")
            #expect((stored["failureReason"] as? String)?.isEmpty == false)
            #expect(try await user.nexus.balance().cashback == 0, "no cashback for airtime never delivered")
            // Settling again changes nothing.
            await h.runDueJobs()
            h.server.clock.advance(by: 3600)
            await h.runDueJobs()
            #expect(try await h.balance(user) == 5_000)
            #expect(try await h.ledgerTransactionCount(kind: "nexus.topup.refund") == 1)
            #expect(try await h.audit().isEmpty)
        }
    }

    @Test(arguments: [("08012345999", "completed"), ("08012345998", "failed")])
    func aProcessingTopupIsPendingUntilTheRequerySettlesIt(phone: String, final: String) async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let answer = try await buy(h, user, phone: phone)
            #expect(answer.success && answer.data.status == "pending")
            #expect(answer.data.balance == 4_500, "the price is held while the supplier works")
            #expect(try await transaction(h, user, answer.data.transactionId)["status"] as? String == "pending")
            // Before the sandbox settles, a check finds it still pending and backs off.
            h.server.clock.advance(by: 11)
            await h.runDueJobs()
            #expect(try await transaction(h, user, answer.data.transactionId)["status"] as? String == "pending")
            h.server.clock.advance(by: 60)
            await h.runDueJobs()
            #expect(try await transaction(h, user, answer.data.transactionId)["status"] as? String == final)
            #expect(try await h.balance(user) == (final == "completed" ? 4_500 : 5_000))
            #expect(try await user.nexus.balance().cashback == (final == "completed" ? 5 : 0))
            #expect(try await count(h, "SELECT COUNT(*) AS n FROM jobs WHERE kind = 'nexus.airtime.delivery' AND state <> 'done'") == 0)
            #expect(try await h.audit().isEmpty)
        }
    }

    @Test func theClientCoreFollowsAPendingTopupToTheEnd() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let answer = try await buy(h, user, phone: "08012345999")
            h.server.clock.advance(by: 120)
            let worker = Task { await h.runDueJobs() }
            let settled = try await user.nexus.awaitDelivery(of: answer.data.transactionId, poller: Poller(interval: .milliseconds(10), maxAttempts: 50))
            await worker.value
            #expect(settled.status == .completed)
        }
    }

    @Test func anUnreachableSupplierLeavesTheTopupPendingAndTheJobRetries() async throws {
        try await NexusHarness.withServer(adjust: { $0.supplierURL = "http://localhost:8080/nowhere" }) { h in
            let user = try await h.enrolledUser()
            let answer = try await buy(h, user, phone: "08011111111")
            #expect(answer.success && answer.data.status == "pending")
            h.server.clock.advance(by: 60)
            await h.runDueJobs()
            #expect(try await transaction(h, user, answer.data.transactionId)["status"] as? String == "pending")
            #expect(try await count(h, "SELECT COUNT(*) AS n FROM jobs WHERE kind = 'nexus.airtime.delivery' AND state = 'queued' AND attempts = 1") == 1)
            #expect(try await count(h, "SELECT attempts AS n FROM nexus_deliveries") == 2)
            #expect(try await h.balance(user) == 4_500)
        }
    }

    @Test func aSupplierThatNeverSawThePurchaseIsSentItUnderTheSameRequestID() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            // Recorded as attempted (its answer lost) though it never reached the supplier.
            let answer = try await buy(h, user, phone: "08012345999")
            let id = answer.data.transactionId
            try await h.server.environment.database.transaction { db in
                try await db.raw("DELETE FROM vtpass_sandbox_transactions").run()
            }
            h.server.clock.advance(by: 60)
            await h.runDueJobs()
            #expect(try await count(h, "SELECT COUNT(*) AS n FROM vtpass_sandbox_transactions") == 1)
            h.server.clock.advance(by: 600)
            await h.runDueJobs()
            #expect(try await transaction(h, user, id)["status"] as? String == "completed")
            #expect(try await count(h, "SELECT COUNT(*) AS n FROM vtpass_sandbox_transactions") == 1, "bought once")
        }
    }

    /// Two servers on one database, each with many settlers of the same reversed top-up at once
    /// (their job workers and direct attempts): one refund.
    @Test(arguments: TestEngines.all)
    func concurrentSettlersOnTwoServersRefundOnce(engine: DatabaseEngine) async throws {
        try await NexusHarness.withServer(engine: engine) { h in
            let user = try await h.enrolledUser()
            let answer = try await buy(h, user, phone: "08012345998")
            #expect(answer.data.status == "pending")
            h.server.clock.advance(by: 120)
            let configuration = h.nexus
            let transport = RouterTransport(client: h.client)
            let replica = try await h.server.replica(modules: [NexusModule(configuration: configuration, supplierTransport: transport)])
            let first = NexusController(configuration: configuration, environment: h.server.environment, supplier: NexusModule(configuration: configuration, supplierTransport: transport).supplier(environment: h.server.environment)).delivery
            let second = NexusController(configuration: configuration, environment: replica.environment, supplier: NexusModule(configuration: configuration, supplierTransport: transport).supplier(environment: replica.environment)).delivery
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await h.server.app.jobWorker.runDue() }
                group.addTask { await replica.jobWorker.runDue() }
                for index in 0..<20 {
                    group.addTask {
                        do {
                            // Each settler reads the delivery as a job does, then attempts it.
                            let settler = index % 2 == 0 ? first : second
                            let record = try await settler.environment.database.read { db in
                                try await settler.store.delivery(of: answer.data.transactionId, in: db)
                            }
                            _ = try await settler.attempt(try #require(record))
                        } catch { print("attempt failed: \(error)") }
                    }
                }
            }
            await replica.environment.database.shutdown()
            let settled = try await transaction(h, user, answer.data.transactionId)
            let delivery = try await h.server.environment.database.read { db in
                try await db.raw("SELECT attempts, last_answer FROM nexus_deliveries").first().map { "\(try $0.decode(column: "attempts", as: Int.self)) \(try $0.decode(column: "last_answer", as: String?.self) ?? "")" }
            }
            #expect(settled["status"] as? String == "failed", "\(settled) \(delivery ?? "")")
            #expect(try await h.ledgerTransactionCount(kind: "nexus.topup.refund") == 1)
            #expect(try await h.balance(user) == 5_000)
            #expect(try await h.audit().isEmpty)
        }
    }

    /// The sandbox's purchase answers, written field by field, are VTpass' documented answer:
    /// the same object, key for key, as the dictionary it was once serialised from.
    @Test func sandboxAnswersAreVTpassShaped() throws {
        let record = VTpassSandbox.Record(requestID: "202611240030ab12", serviceID: "mtn", productName: "MTN Airtime VTU", phone: "08011111111",
                                          amount: 100, transactionID: "17952", status: .delivered, createdAt: Date(timeIntervalSince1970: 1_795_476_600))
        let transactions: [String: Any] = [
            "status": "delivered", "product_name": "MTN Airtime VTU", "unique_element": "08011111111", "unit_price": "100", "quantity": 1,
            "service_verification": NSNull(), "channel": "api", "commission": 0, "total_amount": 100, "discount": NSNull(),
            "type": "Airtime Recharge", "email": "sandbox@purse.local", "phone": "08011111111",
            "name": NSNull(), "convinience_fee": 0, "amount": "100", "platform": "api", "method": "api", "transactionId": "17952",
        ]
        func object(_ answer: VTpassSandbox.Record.Answer) throws -> NSDictionary {
            try #require(try JSONSerialization.jsonObject(with: VTpassSandbox.encoder.encode(answer)) as? NSDictionary)
        }
        let delivered = try object(record.answer(description: "TRANSACTION SUCCESSFUL"))
        #expect(delivered == [
            "code": "000", "content": ["transactions": transactions], "response_description": "TRANSACTION SUCCESSFUL", "requestId": "202611240030ab12",
            "amount": 100, "transaction_date": "2026-11-24T00:30:00.000+01:00", "purchased_code": "",
        ] as NSDictionary)
        let processing = try object(record.answer(code: "099", description: "TRANSACTION IS PROCESSING"))
        #expect(processing == ["code": "099", "response_description": "TRANSACTION IS PROCESSING", "content": ["transactions": transactions], "requestId": "202611240030ab12"] as NSDictionary)
    }

    @Test func requestIDsHaveVTpassForm() {
        // 2026-11-23 23:30 UTC is 00:30 on the 24th in Lagos.
        let date = Date(timeIntervalSince1970: 1_795_476_600)
        let id = VTpassClient.requestID(at: date, random: "ab12")
        #expect(id == "202611240030ab12")
        #expect(VTpassClient.isRequestID(id))
        #expect(!VTpassClient.isRequestID("20261124003"))
        #expect(!VTpassClient.isRequestID("202613240030ab"))
        #expect(!VTpassClient.isRequestID("202611240030ab-12"))
    }

    @Test func vtpassAnswersMapAsItsTableSays() {
        func answer(_ code: String, _ status: VTpassStatus? = nil) -> VTpassClient.PayAnswer {
            VTpassClient.PayAnswer(code: code, response_description: "x", content: .init(transactions: .init(status: status, transactionId: LenientText("17")), error: nil))
        }
        #expect(VTpassClient.outcome(answer("000", "delivered")) == .delivered(reference: "17"))
        #expect(VTpassClient.outcome(answer("000", "DELIVERED")) == .delivered(reference: "17"), "VTpass writes it in either case")
        #expect(VTpassClient.outcome(answer("000", "reversed")) == .failed(reason: "The network reversed the top-up"))
        if case .pending = VTpassClient.outcome(answer("000", "initiated")) {} else { Issue.record("initiated is pending") }
        if case .pending = VTpassClient.outcome(answer("099")) {} else { Issue.record("099 is pending") }
        if case .failed = VTpassClient.outcome(answer("016")) {} else { Issue.record("016 is failed") }
        if case .pending = VTpassClient.outcome(answer("087")) {} else { Issue.record("our credentials are our problem: pending") }
        if case .pending = VTpassClient.outcome(answer("999")) {} else { Issue.record("unknown codes are pending") }
        #expect(VTpassClient.kobo("1234.5") == 123_450)
        #expect(VTpassClient.kobo("1,000") == nil)
        #expect(VTpassClient.naira("1000.00") == 1_000)
        #expect(VTpassClient.naira("99.99") == nil)
    }

    @Test func productsSyncFollowsTheSuppliersPlans() async throws {
        try await NexusHarness.withServer { h in
            let database = h.server.environment.database
            try await database.transaction { db in
                try await db.raw("UPDATE nexus_products SET min_amount = 900, max_amount = 900 WHERE code = 'DATA_MTN_1GB'").run()
                try await db.raw("UPDATE nexus_products SET supplier_variation_code = 'glo-gone' WHERE code = 'DATA_GLO_1GB'").run()
            }
            let supplier = NexusModule(configuration: h.nexus, supplierTransport: RouterTransport(client: h.client)).supplier(environment: h.server.environment)
            let sync = NexusProductSync(supplier: supplier, database: database)
            let report = try await sync.run(addNew: true)
            #expect(report.contains("DATA_MTN_1GB: ₦900 → ₦1000"))
            #expect(report.contains("DATA_GLO_1GB: vtpass no longer sells glo-gone; deactivated"))
            #expect(report.contains("DATA_MTN_10MB_100: added (N100 100MB - 24 hrs, ₦100)"))
            #expect(report.contains("DATA_GLO500: added (Glo Data N500 - 1.35GB - 14 days, ₦500)"))
            #expect(try await sync.run(addNew: true).isEmpty, "a second run finds nothing to do")
            let codes = try await h.client.json(.get, "/products").text
            #expect(!codes.contains("DATA_GLO_1GB") && codes.contains("DATA_MTN_10MB_100"))
        }
    }

    @Test func theSandboxChecksVTpassKeysAndRequestIDs() async throws {
        try await NexusHarness.withServer { h in
            let keys = h.nexus
            func post(_ path: String, _ body: String, secret: String) async throws -> [String: Any] {
                try await h.client.json(.post, path, body, token: nil, headers: [
                    HTTPField.Name("api-key")!: keys.supplierAPIKey, HTTPField.Name("secret-key")!: secret,
                ]).object
            }
            let id = VTpassClient.requestID(at: h.server.clock.now)
            #expect(try await post("/sandbox/vtpass/api/pay", #"{"request_id":"\#(id)","serviceID":"mtn","amount":100,"phone":"08011111111"}"#, secret: "SK_wrong")["code"] as? String == "087")
            let paid = try await post("/sandbox/vtpass/api/pay", #"{"request_id":"\#(id)","serviceID":"mtn","amount":100,"phone":"08011111111"}"#, secret: keys.supplierSecretKey)
            #expect(paid["code"] as? String == "000")
            #expect(((paid["content"] as? [String: Any])?["transactions"] as? [String: Any])?["status"] as? String == "delivered")
            #expect(try await post("/sandbox/vtpass/api/pay", #"{"request_id":"\#(id)","serviceID":"mtn","amount":100,"phone":"08011111111"}"#, secret: keys.supplierSecretKey)["code"] as? String == "014")
            #expect(try await post("/sandbox/vtpass/api/pay", #"{"request_id":"199901010000x","serviceID":"mtn","amount":100,"phone":"08011111111"}"#, secret: keys.supplierSecretKey)["code"] as? String == "011")
            #expect(try await post("/sandbox/vtpass/api/requery", #"{"request_id":"202601010000nope"}"#, secret: keys.supplierSecretKey)["code"] as? String == "015")
            let balance = try await h.client.json(.get, "/sandbox/vtpass/api/balance", token: nil, headers: [
                HTTPField.Name("api-key")!: keys.supplierAPIKey, HTTPField.Name("public-key")!: keys.supplierPublicKey,
            ]).object
            #expect((balance["contents"] as? [String: Any])?["balance"] as? Int == 99_999_900)
        }
    }
}

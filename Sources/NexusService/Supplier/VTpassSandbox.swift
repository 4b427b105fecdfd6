import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PurseDatabase
import PurseServer
import SQLKit

/// A VTpass-compatible supplier inside `purse serve`, under `/sandbox/vtpass`: the same paths,
/// headers, request ids, response codes and transaction statuses as VTpass's API, so
/// ``VTpassClient`` runs the code path it runs against VTpass.
///
/// What happens to a purchase depends on the recipient's last digits (documented in
/// docs/nexus.md, shown on the sandbox's `GET /sandbox/vtpass` page):
/// - `…000`: fails at once (`016 TRANSACTION FAILED`);
/// - `…999`: processing (`099`), delivered once `pendingSeconds` have passed;
/// - `…998`: processing (`099`), then reversed (`000` with status `reversed`);
/// - anything else (VTpass's own test number `08011111111` too): delivered at once.
struct VTpassSandbox: Sendable {
    let keys: VTpassClient.Credentials
    let pendingSeconds: TimeInterval
    let environment: ServerEnvironment

    /// The sandbox's data plans by service, in VTpass's `service-variations` shape.
    static let variations: [String: (name: String, plans: [SupplierVariation])] = [
        "mtn-data": ("MTN Data", [
            SupplierVariation(code: "mtn-10mb-100", name: "N100 100MB - 24 hrs", amount: 100, fixedPrice: true),
            SupplierVariation(code: "mtn-1gb-1000", name: "N1000 1GB - 30 days", amount: 1_000, fixedPrice: true),
            SupplierVariation(code: "mtn-5gb-3500", name: "N3500 5GB - 30 days", amount: 3_500, fixedPrice: true),
        ]),
        "airtel-data": ("Airtel Data", [
            SupplierVariation(code: "airt-1000", name: "Airtel Data - 1,000 Naira - 1GB - 30 days", amount: 1_000, fixedPrice: true),
            SupplierVariation(code: "airt-3500", name: "Airtel Data - 3,500 Naira - 5GB - 30 days", amount: 3_500, fixedPrice: true),
        ]),
        "glo-data": ("GLO Data", [
            SupplierVariation(code: "glo500", name: "Glo Data N500 - 1.35GB - 14 days", amount: 500, fixedPrice: true),
            SupplierVariation(code: "glo2000", name: "Glo Data N2000 - 5.8GB - 30 days", amount: 2_000, fixedPrice: true),
        ]),
        "etisalat-data": ("9mobile Data", [
            SupplierVariation(code: "eti-1000", name: "9mobile Data - 1000 Naira - 1GB - 30 days", amount: 1_000, fixedPrice: true),
            SupplierVariation(code: "eti-4000", name: "9mobile Data - 4000 Naira - 4.5GB - 30 days", amount: 4_000, fixedPrice: true),
        ]),
    ]
    static let airtimeServices: [String: String] = ["mtn": "MTN Airtime VTU", "airtel": "Airtel Airtime VTU", "glo": "GLO Airtime VTU", "etisalat": "9mobile Airtime VTU"]
    /// The float every sandbox starts with, in naira.
    static let openingFloat: Int64 = 100_000_000

    func mount(on router: Router<PurseRequestContext>) {
        let api = router.group("sandbox/vtpass/api")
        api.post("pay") { request, context in try await pay(request, context) }
        api.post("requery") { request, context in try await requery(request, context) }
        api.get("service-variations") { request, _ in
            guard authorized(request, secret: false) else { return Self.invalidCredentials }
            let id = request.uri.queryParameters.get("serviceID") ?? ""
            guard let service = Self.variations[id] else { return Self.answer(["code": "012", "response_description": "PRODUCT DOES NOT EXIST"]) }
            let plans: [[String: Any]] = service.plans.map {
                ["variation_code": $0.code, "name": $0.name, "variation_amount": "\($0.amount).00", "fixedPrice": $0.fixedPrice ? "Yes" : "No"]
            }
            return Self.answer(["response_description": "000", "content": [
                "ServiceName": service.name, "serviceID": id, "convinience_fee": "0 %", "variations": plans,
            ] as [String: Any]])
        }
        api.get("balance") { request, _ in
            guard authorized(request, secret: false) else { return Self.invalidCredentials }
            let spent = try await environment.database.read { db in
                try await db.raw("""
                    SELECT COALESCE(SUM(amount), 0) AS spent FROM vtpass_sandbox_transactions WHERE final_status <> 'failed' AND final_status <> 'reversed'
                    """).first()?.decode(column: "spent", as: Int64.self) ?? 0
            }
            return Self.answer(["code": 1, "contents": ["balance": Self.openingFloat - spent] as [String: Any]])
        }
        router.get("sandbox/vtpass") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: Self.guide(pendingSeconds))))
        }
    }

    static func guide(_ pendingSeconds: TimeInterval) -> String {
        """
        VTpass sandbox (https://www.vtpass.com/documentation/ — same paths, headers and codes).
        The recipient's last digits decide what happens to a purchase:
          …000  fails at once (016 TRANSACTION FAILED)
          …999  processing (099), delivered after \(Int(pendingSeconds)) s
          …998  processing (099), reversed after \(Int(pendingSeconds)) s
          other delivered at once (000, status delivered)

        """
    }

    // MARK: Authentication

    /// POST needs `api-key` and `secret-key`, GET `api-key` and `public-key`.
    func authorized(_ request: Request, secret: Bool) -> Bool {
        guard let apiKey = request.headers[.vtpassAPIKey], apiKey == keys.apiKey else { return false }
        if secret { return request.headers[.vtpassSecretKey] == keys.secretKey }
        return request.headers[.vtpassPublicKey] == keys.publicKey
    }

    static let invalidCredentials = answer(["code": "087", "response_description": "INVALID CREDENTIALS"])

    // MARK: Pay and requery

    /// Fields as strings whether they came as JSON strings or numbers (VTpass accepts both).
    static func fields(_ buffer: ByteBuffer) -> [String: String]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any] else { return nil }
        var fields: [String: String] = [:]
        for (key, value) in object {
            if let text = value as? String { fields[key] = text } else if let number = value as? NSNumber { fields[key] = number.stringValue }
        }
        return fields
    }

    func pay(_ request: Request, _ context: PurseRequestContext) async throws -> Response {
        guard authorized(request, secret: true) else { return Self.invalidCredentials }
        var request = request
        let buffer = try await request.collectJSONBody(context: context)
        guard let fields = Self.fields(buffer), let requestID = fields["request_id"], let serviceID = fields["serviceID"],
              let phone = fields["phone"], let amountText = fields["amount"] else {
            return Self.answer(["code": "011", "response_description": "INVALID ARGUMENTS"])
        }
        let now = environment.now()
        guard VTpassClient.isRequestID(requestID), Self.isRecent(requestID, now: now) else {
            return Self.answer(["code": "011", "response_description": "INVALID ARGUMENTS", "content": ["errors": ["request_id must start with today's date and time in Lagos: YYYYMMDDHHII"]]])
        }
        let productName: String
        var amount = VTpassClient.naira(amountText)
        let variation = fields["variation_code"]
        if let service = Self.variations[serviceID] {
            guard let code = variation, let plan = service.plans.first(where: { $0.code == code }) else {
                return Self.answer(["code": "010", "response_description": "VARIATION CODE DOES NOT EXIST"])
            }
            productName = service.name
            amount = plan.amount
        } else if let name = Self.airtimeServices[serviceID] {
            productName = name
        } else {
            return Self.answer(["code": "012", "response_description": "PRODUCT DOES NOT EXIST"])
        }
        guard let amount else { return Self.answer(["code": "011", "response_description": "INVALID ARGUMENTS"]) }
        if amount < 50 { return Self.answer(["code": "013", "response_description": "BELOW MINIMUM AMOUNT ALLOWED"]) }
        if amount > 50_000 { return Self.answer(["code": "017", "response_description": "ABOVE MAXIMUM AMOUNT ALLOWED"]) }

        let outcome = Self.scenario(phone: phone)
        let transactionID = String(now.epochMillis) + String(Int.random(in: 100...999))
        let settlesAt = now.addingTimeInterval(outcome == .processing ? pendingSeconds : 0).epochMillis
        let inserted = try await environment.database.transaction { db in
            try await db.raw("""
                INSERT INTO vtpass_sandbox_transactions
                    (request_id, service_id, variation_code, product_name, phone, amount, transaction_id, final_status, created_at, settles_at)
                VALUES (\(bind: requestID), \(bind: serviceID), \(bind: variation), \(bind: productName), \(bind: phone), \(bind: Int64(amount)),
                        \(bind: transactionID), \(bind: outcome.finalStatus(phone: phone).rawValue), \(bind: now.epochMillis), \(bind: settlesAt))
                ON CONFLICT (request_id) DO NOTHING RETURNING request_id
                """).first() != nil
        }
        guard inserted else { return Self.answer(["code": "014", "response_description": "REQUEST ID ALREADY EXIST"]) }
        let record = Record(requestID: requestID, serviceID: serviceID, productName: productName, phone: phone, amount: amount,
                            transactionID: transactionID, status: outcome == .processing ? .pending : outcome.finalStatus(phone: phone), createdAt: now)
        switch outcome {
        case .processing: return Self.encoded(record.answer(code: "099", description: "TRANSACTION IS PROCESSING"))
        case .failed: return Self.encoded(record.answer(code: "016", description: "TRANSACTION FAILED"))
        case .delivered: return Self.encoded(record.answer(description: "TRANSACTION SUCCESSFUL"))
        }
    }

    func requery(_ request: Request, _ context: PurseRequestContext) async throws -> Response {
        guard authorized(request, secret: true) else { return Self.invalidCredentials }
        var request = request
        let buffer = try await request.collectJSONBody(context: context)
        guard let requestID = Self.fields(buffer)?["request_id"] else {
            return Self.answer(["code": "011", "response_description": "INVALID ARGUMENTS"])
        }
        let now = environment.now()
        guard let row = try await environment.database.read({ db in
            try await db.raw("SELECT * FROM vtpass_sandbox_transactions WHERE request_id = \(bind: requestID)").first()
        }) else {
            return Self.answer(["code": "015", "response_description": "INVALID REQUEST ID"])
        }
        let settled = try row.decode(column: "settles_at", as: Int64.self) <= now.epochMillis
        let finalStatus = try row.decode(column: "final_status", as: VTpassStatus.self, of: "vtpass_sandbox_transactions")
        let record = Record(
            requestID: requestID, serviceID: try row.decode(column: "service_id", as: String.self),
            productName: try row.decode(column: "product_name", as: String.self), phone: try row.decode(column: "phone", as: String.self),
            amount: Int(try row.decode(column: "amount", as: Int64.self)), transactionID: try row.decode(column: "transaction_id", as: String.self),
            status: settled ? finalStatus : .pending, createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self))
        )
        if settled && finalStatus == .failed {
            return Self.encoded(record.answer(code: "016", description: "TRANSACTION FAILED"))
        }
        return Self.encoded(record.answer(description: "TRANSACTION SUCCESSFUL"))
    }

    enum Scenario { case delivered, failed, processing
        func finalStatus(phone: String) -> VTpassStatus {
            switch self {
            case .delivered: .delivered
            case .failed: .failed
            case .processing: phone.hasSuffix("998") ? .reversed : .delivered
            }
        }
    }

    static func scenario(phone: String) -> Scenario {
        if phone.hasSuffix("000") { return .failed }
        if phone.hasSuffix("999") || phone.hasSuffix("998") { return .processing }
        return .delivered
    }

    /// The date in a request id is today's in Lagos, give or take a day for clocks and midnight.
    static func isRecent(_ requestID: String, now: Date) -> Bool {
        let today = VTpassClient.requestID(at: now, random: "")
        let yesterday = VTpassClient.requestID(at: now.addingTimeInterval(-86_400), random: "")
        let tomorrow = VTpassClient.requestID(at: now.addingTimeInterval(86_400), random: "")
        let day = requestID.prefix(8)
        return day == today.prefix(8) || day == yesterday.prefix(8) || day == tomorrow.prefix(8)
    }

    struct Record {
        var requestID: String
        var serviceID: String
        var productName: String
        var phone: String
        var amount: Int
        var transactionID: String
        var status: VTpassStatus
        var createdAt: Date

        /// `content` as VTpass writes it: the purchase under `transactions`.
        var content: Content { Content(transactions: Transaction(record: self)) }

        struct Content: Encodable {
            var transactions: Transaction
        }

        /// A purchase as VTpass reports it (keys in sorted order, as the sandbox has always
        /// written them; `null` where VTpass writes null).
        struct Transaction: Encodable {
            var record: Record

            enum CodingKeys: String, CodingKey {
                case amount, channel, commission, convinience_fee, discount, email, method, name, phone, platform, product_name, quantity
                case service_verification, status, total_amount, transactionId, type, unique_element, unit_price
            }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(String(record.amount), forKey: .amount)
                try container.encode("api", forKey: .channel)
                try container.encode(0, forKey: .commission)
                try container.encode(0, forKey: .convinience_fee)
                try container.encodeNil(forKey: .discount)
                try container.encode("sandbox@purse.local", forKey: .email)
                try container.encode("api", forKey: .method)
                try container.encodeNil(forKey: .name)
                try container.encode(record.phone, forKey: .phone)
                try container.encode("api", forKey: .platform)
                try container.encode(record.productName, forKey: .product_name)
                try container.encode(1, forKey: .quantity)
                try container.encodeNil(forKey: .service_verification)
                try container.encode(record.status.rawValue, forKey: .status)
                try container.encode(record.amount, forKey: .total_amount)
                try container.encode(record.transactionID, forKey: .transactionId)
                try container.encode(record.serviceID.hasSuffix("-data") ? "Data Services" : "Airtime Recharge", forKey: .type)
                try container.encode(record.phone, forKey: .unique_element)
                try container.encode(String(record.amount), forKey: .unit_price)
            }
        }

        /// A purchase's answer: `code`, `content`, `requestId` and `response_description`, and for a
        /// delivered one `amount`, `purchased_code` and `transaction_date` too.
        struct Answer: Encodable {
            var amount: Int?
            var code: String
            var content: Content
            var purchased_code: String?
            var requestId: String
            var response_description: String
            var transaction_date: String?
        }

        /// Lagos time as VTpass writes `transaction_date`; made once (every purchase answers with one).
        static let transactionDate: DateFormatter = {
            let formatter = DateFormatter()
            formatter.calendar = Calendar(identifier: .gregorian)
            formatter.timeZone = VTpassClient.lagos
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.dateFormat = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"
            return formatter
        }()

        /// The answer of a delivered purchase.
        func answer(description: String) -> Answer {
            Answer(amount: amount, code: "000", content: content, purchased_code: "", requestId: requestID,
                   response_description: description, transaction_date: Self.transactionDate.string(from: createdAt))
        }

        /// The answer of a purchase still processing (`099`) or failed (`016`).
        func answer(code: String, description: String) -> Answer {
            Answer(code: code, content: content, requestId: requestID, response_description: description)
        }
    }

    /// The purchases' answers are written field by field in a fixed order (the sandbox answers
    /// every top-up, so not through `JSONSerialization`, whose sorting compared keys through ICU).
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return encoder
    }()

    static func encoded(_ answer: some Encodable) -> Response {
        .jsonData((try? encoder.encode(answer)) ?? Data("{}".utf8))
    }

    static func answer(_ object: [String: Any]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return .jsonData(data)
    }
}

import Foundation
import HTTPTypes
import PurseFormats
import PurseHTTP
import PurseHTTPNIO
import PurseServer

/// A client of VTpass's RESTful API (https://www.vtpass.com/documentation/), the Nigerian
/// aggregator for MTN, Airtel, Glo and 9mobile airtime and data.
///
/// As VTpass documents it: `api-key` and `secret-key` headers on POST, `api-key` and `public-key`
/// on GET; `POST /api/pay` with a `request_id` whose first 12 characters are the Lagos date and
/// time (`YYYYMMDDHHII`); `POST /api/requery`; `GET /api/service-variations`; `GET /api/balance`.
/// The `code` of an answer is read as VTpass's table says: `000` defers to
/// `content.transactions.status` (`delivered`, `pending`, `initiated`, `failed`, `reversed`),
/// `099` is processing, `016` failed, refusals such as `011`–`018` mean nothing was charged, and
/// any other answer — or none — is pending, to be requeried.
struct VTpassClient: AirtimeSupplier {
    struct Credentials: Sendable {
        var apiKey: String
        var secretKey: String
        var publicKey: String
    }

    let name = "vtpass"
    /// `https://vtpass.com` (live), `https://sandbox.vtpass.com`, or the built-in sandbox's
    /// `http://HOST:PORT/sandbox/vtpass`. Paths start with `/api`.
    let baseURL: URL
    let credentials: Credentials
    let transport: any HTTPTransport
    /// How long one call may take; past it the purchase is pending and requeried later.
    let timeout: Duration

    init(baseURL: URL, credentials: Credentials, transport: any HTTPTransport = AsyncHTTPClientTransport(), timeout: Duration = .seconds(5)) {
        self.baseURL = baseURL
        self.credentials = credentials
        self.transport = transport
        self.timeout = timeout
    }

    // MARK: Request ids

    /// Lagos is UTC+1 all year (no daylight saving).
    static let lagos = TimeZone(secondsFromGMT: 3600)!

    /// `YYYYMMDDHHII` in Lagos time followed by `random` (hex: alphanumeric): VTpass requires at least
    /// 12 characters, the first 12 numeric and today's date and time.
    static func requestID(at date: Date, random: String = RandomID.hex(bytes: 8)) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = lagos
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        func two(_ value: Int?) -> String { let v = value ?? 0; return v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.year ?? 0)\(two(parts.month))\(two(parts.day))\(two(parts.hour))\(two(parts.minute))\(random)"
    }

    /// Whether `id` has VTpass's form (12+ characters, the first 12 digits of a real date, the
    /// rest alphanumeric).
    static func isRequestID(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard bytes.count >= 12, bytes.count <= 64,
              bytes.prefix(12).allSatisfy({ (48...57).contains($0) }),
              bytes.dropFirst(12).allSatisfy({ (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) }) else { return false }
        let digits = bytes.prefix(12).map { Int($0) - 48 }
        func number(_ range: Range<Int>) -> Int { range.reduce(0) { $0 * 10 + digits[$1] } }
        let (month, day, hour, minute) = (number(4..<6), number(6..<8), number(8..<10), number(10..<12))
        return (1...12).contains(month) && (1...31).contains(day) && hour < 24 && minute < 60
    }

    // MARK: AirtimeSupplier

    func purchase(_ order: SupplierOrder) async throws -> SupplierOutcome {
        var body: [String: String] = [
            "request_id": order.requestID, "serviceID": order.serviceID, "amount": String(order.amount), "phone": order.phone,
        ]
        if let variation = order.variationCode {
            body["variation_code"] = variation
            body["billersCode"] = order.phone
        }
        let answer = try await post("/api/pay", body)
        if answer.code == "014" {
            // REQUEST ID ALREADY EXIST: an earlier attempt reached VTpass; its verdict stands.
            return try await status(of: order.requestID)
        }
        return Self.outcome(answer)
    }

    func status(of requestID: String) async throws -> SupplierOutcome {
        let answer = try await post("/api/requery", ["request_id": requestID])
        if answer.code == "015" { return .unknown }  // INVALID REQUEST ID: never used on VTpass
        return Self.outcome(answer)
    }

    func variations(serviceID: String) async throws -> [SupplierVariation] {
        struct Answer: Decodable {
            struct Content: Decodable {
                struct Variation: Decodable {
                    var variation_code: String
                    var name: String
                    var variation_amount: LenientText
                    var fixedPrice: String?
                }
                var variations: [Variation]?
                /// VTpass's documentation spells it both ways.
                var varations: [Variation]?
            }
            var response_description: String?
            var content: Content?
        }
        var components = URLComponents(url: url("/api/service-variations"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "serviceID", value: serviceID)]
        let data = try await send(.get, components.url!, body: nil)
        guard let answer = try? JSONDecoder().decode(Answer.self, from: data), let content = answer.content else {
            throw SupplierError("VTpass sent no variations for \(serviceID)")
        }
        return try (content.variations ?? content.varations ?? []).map { variation in
            guard let amount = Self.naira(variation.variation_amount.text) else {
                throw SupplierError("VTpass variation \(variation.variation_code) has amount \(variation.variation_amount.text)")
            }
            return SupplierVariation(code: variation.variation_code, name: variation.name, amount: amount,
                                     fixedPrice: variation.fixedPrice?.lowercased() != "no")
        }
    }

    func balance() async throws -> Int64 {
        struct Answer: Decodable {
            struct Contents: Decodable { var balance: LenientText }
            var contents: Contents?
        }
        let data = try await send(.get, url("/api/balance"), body: nil)
        guard let contents = (try? JSONDecoder().decode(Answer.self, from: data))?.contents,
              let kobo = Self.kobo(contents.balance.text) else {
            throw SupplierError("VTpass sent no balance")
        }
        return kobo
    }

    // MARK: Answers

    /// The fields of a pay or requery answer that decide the outcome.
    struct PayAnswer: Decodable {
        struct Content: Decodable {
            struct Transactions: Decodable {
                var status: VTpassStatus?
                var transactionId: LenientText?
            }
            var transactions: Transactions?
            var error: String?
        }
        var code: String?
        var response_description: String?
        var content: Content?
    }

    /// VTpass's response-code table, applied.
    static func outcome(_ answer: PayAnswer) -> SupplierOutcome {
        let description = answer.response_description ?? "no description"
        switch answer.code {
        case "000":
            let reference = answer.content?.transactions?.transactionId?.text
            switch answer.content?.transactions?.status?.normalized {
            case .delivered?: return .delivered(reference: reference)
            case .failed?: return .failed(reason: "The network did not accept the top-up")
            case .reversed?: return .failed(reason: "The network reversed the top-up")
            default: return .pending(reason: "VTpass: \(answer.content?.transactions?.status?.rawValue ?? "no status")")
            }
        case "016": return .failed(reason: "The network did not accept the top-up")
        case "091": return .failed(reason: "The supplier did not process the top-up")
        case "010", "011", "012", "013", "017", "019":
            return .failed(reason: "The supplier refused the top-up (\(description))")
        case "018": return .failed(reason: "The supplier cannot sell airtime right now")
        case "021", "022", "023", "024", "087":
            return .pending(reason: "VTpass refused our account (\(answer.code ?? "")): \(description)")
        default:
            return .pending(reason: "VTpass \(answer.code ?? "no code"): \(description)")
        }
    }

    // MARK: HTTP

    func url(_ path: String) -> URL {
        URL(string: baseURL.absoluteString.trimmingSuffix("/") + path)!
    }

    func post(_ path: String, _ body: [String: String]) async throws -> PayAnswer {
        // Every top-up posts here: its few string fields written as they are, in key order.
        var json = JSONObjectWriter()
        for (key, value) in body.sorted(by: { $0.key < $1.key }) { json.field(key, value) }
        let data = try await send(.post, url(path), body: json.data)
        guard let answer = try? Self.decoder.decode(PayAnswer.self, from: data) else {
            throw SupplierError("VTpass sent an unreadable answer to \(path)")
        }
        return answer
    }

    static let decoder = JSONDecoder()

    func send(_ method: HTTPRequest.Method, _ url: URL, body: Data?) async throws -> Data {
        var headerFields: HTTPFields = [.vtpassAPIKey: credentials.apiKey, .accept: "application/json"]
        if method == .get {
            headerFields[.vtpassPublicKey] = credentials.publicKey
        } else {
            headerFields[.vtpassSecretKey] = credentials.secretKey
            headerFields[.contentType] = "application/json"
        }
        let response: TransportResponse
        do {
            response = try await transport.send(TransportRequest(method: method, url: url, headerFields: headerFields, body: body, timeout: timeout))
        } catch {
            throw SupplierError("VTpass unreachable: \(error)")
        }
        guard response.status.kind == .successful else {
            throw SupplierError("VTpass answered HTTP \(response.status.code) to \(method) \(url.path)")
        }
        return response.body
    }

    /// `"1000.00"` → 1000; refuses fractions of a naira.
    static func naira(_ text: String) -> Int? {
        guard let kobo = kobo(text), kobo % 100 == 0 else { return nil }
        return Int(kobo / 100)
    }

    /// `"1234.5"` → 123450, exactly (no floating point).
    static func kobo(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = Int64(parts[0]), whole >= 0 else { return nil }
        guard parts.count == 2 else { return whole * 100 }
        let fraction = parts[1]
        guard fraction.count <= 2, fraction.allSatisfy(\.isASCII), let cents = Int64(fraction.padding(toLength: 2, withPad: "0", startingAt: 0)) else { return nil }
        return whole * 100 + cents
    }
}

/// A JSON value VTpass sends as a string in one answer and a number in another.
struct LenientText: Decodable, Sendable, Equatable {
    var text: String
    init(_ text: String) { self.text = text }
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            text = string
        } else if let integer = try? container.decode(Int64.self) {
            text = String(integer)
        } else {
            // A decimal number: keep at most two places, as VTpass amounts have.
            let value = try container.decode(Decimal.self)
            var rounded = Decimal()
            var source = value
            NSDecimalRound(&rounded, &source, 2, .plain)
            text = "\(rounded)"
        }
    }
}

private extension String {
    func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : self
    }
}

/// A VTpass transaction's `status` (`initiated`, `pending`, `delivered`, `failed`, `reversed`).
/// VTpass writes it in either case and may add values, so the set is open.
struct VTpassStatus: OpenChoice {
    let rawValue: String
    init(rawValue: String) { self.rawValue = rawValue }

    static let initiated: VTpassStatus = "initiated"
    static let pending: VTpassStatus = "pending"
    static let delivered: VTpassStatus = "delivered"
    static let failed: VTpassStatus = "failed"
    static let reversed: VTpassStatus = "reversed"

    /// The value in lower case, as the constants spell it.
    var normalized: VTpassStatus { VTpassStatus(rawValue: rawValue.lowercased()) }
}

extension HTTPField.Name {
    /// VTpass' credentials: the API key on every request, with the public key on a `GET` and
    /// the secret key on a `POST` (VTpass' "Authentication" page).
    static let vtpassAPIKey = HTTPField.Name("api-key")!
    static let vtpassPublicKey = HTTPField.Name("public-key")!
    static let vtpassSecretKey = HTTPField.Name("secret-key")!
}

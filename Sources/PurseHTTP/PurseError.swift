import Foundation
import HTTPTypes

/// The one error every Purse client core throws.
///
/// A struct over a private code, so new cases can be added without breaking callers' `switch`es;
/// compare with `==` against the static members or read ``kind``.
public struct PurseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The broad category a UI decides on. A struct with static members, so a category added
    /// later breaks no caller: a `switch` over kinds ends in `default`.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let offline = Kind(rawValue: "offline")
        public static let unauthorized = Kind(rawValue: "unauthorized")
        public static let notFound = Kind(rawValue: "notFound")
        public static let rateLimited = Kind(rawValue: "rateLimited")
        public static let server = Kind(rawValue: "server")
        public static let timeout = Kind(rawValue: "timeout")
        public static let invalidResponse = Kind(rawValue: "invalidResponse")
        public static let domain = Kind(rawValue: "domain")
        public static let cancelled = Kind(rawValue: "cancelled")
    }

    private enum Code: Sendable, Equatable {
        case offline
        case unauthorized
        case notFound
        case rateLimited(retryAfter: Duration?)
        case server(status: Int)
        case timeout
        case invalidResponse
        case domain(String)
        case cancelled
    }

    private let code: Code
    /// What the server said (its error JSON's message), or a description of the failure.
    public let message: String
    /// The raw error body, when the server sent one (for services with their own error shapes).
    public let body: Data?

    private init(_ code: Code, message: String, body: Data? = nil) {
        self.code = code
        self.message = message
        self.body = body
    }

    public var kind: Kind {
        switch code {
        case .offline: .offline
        case .unauthorized: .unauthorized
        case .notFound: .notFound
        case .rateLimited: .rateLimited
        case .server: .server
        case .timeout: .timeout
        case .invalidResponse: .invalidResponse
        case .domain: .domain
        case .cancelled: .cancelled
        }
    }

    /// Whether the same request may succeed if sent again as it is: no answer came (offline,
    /// timed out), the server asked for time (429), or it failed on its side (5xx). The one
    /// definition every client core's retry decisions use.
    public var isTransient: Bool {
        switch code {
        case .offline, .timeout, .rateLimited: true
        case .server(let status): status >= 500
        default: false
        }
    }

    /// The HTTP status for `server` errors (any non-success status not otherwise classified).
    public var status: Int? {
        if case .server(let status) = code { return status }
        switch code {
        case .unauthorized: return 401
        case .notFound: return 404
        case .rateLimited: return 429
        default: return nil
        }
    }

    /// For `rateLimited`: how long the server asked us to wait.
    public var retryAfter: Duration? {
        if case .rateLimited(let retryAfter) = code { return retryAfter }
        return nil
    }

    /// For `domain` errors: the domain code, e.g. `"insufficient_balance"`.
    public var domainCode: String? {
        if case .domain(let code) = code { return code }
        return nil
    }

    public var description: String {
        switch code {
        case .offline: "offline: \(message)"
        case .unauthorized: "unauthorized: \(message)"
        case .notFound: "not found: \(message)"
        case .rateLimited(let after): "rate limited\(after.map { " (retry after \($0))" } ?? ""): \(message)"
        case .server(let status): "server error \(status): \(message)"
        case .timeout: "timed out: \(message)"
        case .invalidResponse: "invalid response: \(message)"
        case .domain(let code): "\(code): \(message)"
        case .cancelled: "cancelled"
        }
    }

    public static func == (lhs: PurseError, rhs: PurseError) -> Bool { lhs.code == rhs.code }

    public static let offline = PurseError(.offline, message: "The server cannot be reached")
    public static let unauthorized = PurseError(.unauthorized, message: "Authentication required")
    public static let notFound = PurseError(.notFound, message: "Not found")
    public static let timeout = PurseError(.timeout, message: "The request timed out")
    public static let cancelled = PurseError(.cancelled, message: "Cancelled")

    public static func offline(_ message: String) -> PurseError { PurseError(.offline, message: message) }
    public static func unauthorized(_ message: String, body: Data? = nil) -> PurseError { PurseError(.unauthorized, message: message, body: body) }
    public static func notFound(_ message: String, body: Data? = nil) -> PurseError { PurseError(.notFound, message: message, body: body) }
    public static func rateLimited(retryAfter: Duration?, message: String = "Too many requests") -> PurseError {
        PurseError(.rateLimited(retryAfter: retryAfter), message: message)
    }
    public static func server(status: Int, message: String, body: Data? = nil) -> PurseError {
        PurseError(.server(status: status), message: message, body: body)
    }
    public static func timeout(_ message: String) -> PurseError { PurseError(.timeout, message: message) }
    public static func invalidResponse(_ message: String) -> PurseError { PurseError(.invalidResponse, message: message) }
    /// A failure a system defines (insufficient balance, already has an account …).
    public static func domain(_ code: String, message: String, body: Data? = nil) -> PurseError {
        PurseError(.domain(code), message: message, body: body)
    }

    /// Decodes the server's error body as `T` (for seeds with their own error JSON).
    public func decodeBody<T: Decodable>(as type: T.Type) -> T? {
        body.flatMap { try? JSONDecoder().decode(T.self, from: $0) }
    }
}

extension PurseError {
    /// Maps an HTTP error response: status plus the server's error JSON
    /// (`{"error": ...}`, `{"message": ...}` or Stripe's `{"error": {"message": ...}}`).
    public static func from(_ response: TransportResponse) -> PurseError {
        let body = response.body
        let message = serverMessage(in: body) ?? HTTPStatusText.reason(response.status.code)
        switch response.status {
        case .unauthorized: return .unauthorized(message, body: body)
        case .notFound: return .notFound(message, body: body)
        case .tooManyRequests: return .rateLimited(retryAfter: response.retryAfter, message: message)
        // A 409 that says when to come back (an Idempotency-Key whose first request is still
        // finishing: `idempotency_key_in_use`) is a wait, retried like a 429 with the same key.
        case .conflict where response.retryAfter != nil: return .rateLimited(retryAfter: response.retryAfter, message: message)
        default: return .server(status: response.status.code, message: message, body: body)
        }
    }

    static func serverMessage(in body: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        if let error = object["error"] as? String { return error }
        if let error = object["error"] as? [String: Any], let message = error["message"] as? String { return message }
        if let message = object["message"] as? String { return message }
        return nil
    }

    /// `Retry-After` as seconds or an HTTP date.
    public static func parseRetryAfter(_ value: String, now: Date = Date()) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        if let date = formatter.date(from: trimmed) {
            return .milliseconds(max(0, Int64(date.timeIntervalSince(now) * 1000)))
        }
        return nil
    }
}

enum HTTPStatusText {
    static func reason(_ status: Int) -> String {
        switch status {
        case 400: "Bad request"
        case 401: "Authentication required"
        case 403: "Forbidden"
        case 404: "Not found"
        case 409: "Conflict"
        case 413: "Request body too large"
        case 422: "Unprocessable request"
        case 429: "Too many requests"
        case 500: "Internal server error"
        case 502: "Bad gateway"
        case 503: "Service unavailable"
        case 504: "Gateway timeout"
        default: "HTTP \(status)"
        }
    }
}

extension TransportResponse {
    /// The wait `Retry-After` asks for, when it is there and readable.
    public var retryAfter: Duration? {
        headerFields[.retryAfter].flatMap { PurseError.parseRetryAfter($0) }
    }
}

import Foundation
import PurseHTTP

/// Why an SDK call failed: the Cuti-E SDK's seven cases with their payloads, so an app's
/// exhaustive `switch` over them builds against this module unchanged.
///
/// - Every answer of the service with an error status is `serverError(status, message)`, the
///   message being the service's own words (401 after one silent re-registration, 404, 409,
///   429 once the automatic retries are spent, 5xx).
/// - Every request that got no answer is `networkError(underlying)`: a `URLError`
///   (`.notConnectedToInternet`, `.timedOut`, `.cancelled`) as on Apple platforms, or a
///   ``CertificatePinningError`` when the server's chain matched none of the pins.
/// - `invalidRequest` is what the SDK refuses before sending (an empty message, a link code
///   that is not one); `invalidAPIKey` is never produced (the SDK needs no key), and is kept for
///   apps that name it.
public enum CutiEError: LocalizedError, Sendable, Equatable, CustomStringConvertible {
    case notConfigured
    case invalidAPIKey
    case networkError(any Error)
    case serverError(Int, String)
    case decodingError(String? = nil)
    case invalidRequest
    case invalidPushToken(String)

    /// The `code` the service puts beside `error` in a refusal (`{"error": …, "code": …}`).
    struct Coded: Decodable { var code: String? }
    /// The codes of App Attest refusals: `app_attest_required`, `app_attest_refused`.
    static let appAttestCodes: Set<String> = ["app_attest_required", "app_attest_refused"]

    /// Whether a refusal is App Attest's (by the service's `code`): registering again cannot help.
    static func isAppAttestRefusal(_ error: PurseError) -> Bool {
        error.decodeBody(as: Coded.self)?.code.map(appAttestCodes.contains) == true
    }

    public init(_ error: PurseError) {
        switch error.kind {
        case .offline: self = .networkError(URLError(.notConnectedToInternet))
        case .timeout: self = .networkError(URLError(.timedOut))
        case .cancelled: self = .networkError(URLError(.cancelled))
        case .invalidResponse: self = .decodingError(error.message)
        default:
            self = .serverError(error.status ?? 0, error.message)
        }
    }

    static func from(_ error: any Error) -> CutiEError {
        if let error = error as? CutiEError { return error }
        if let error = error as? PurseError { return CutiEError(error) }
        if error is CancellationError { return .networkError(URLError(.cancelled)) }
        return .networkError(error)
    }

    /// The HTTP status the service answered with, for `serverError`.
    public var statusCode: Int? {
        if case .serverError(let status, _) = self { return status }
        return nil
    }

    /// Whether trying again later can help: no answer (but not a cancellation or a pinning
    /// failure), 408, 429 and 5xx.
    public var isRetryable: Bool {
        switch self {
        case .networkError(let error):
            guard let urlError = error as? URLError else { return !(error is CertificatePinningError) }
            return urlError.code != .cancelled
        case .serverError(let status, _): return status == 408 || status == 429 || status >= 500
        default: return false
        }
    }

    public var errorDescription: String? { description }

    public var description: String {
        switch self {
        case .notConfigured: "Cuti-E is not configured"
        case .invalidAPIKey: "This app's Cuti-E credentials were refused"
        case .networkError(let error):
            if let pinning = error as? CertificatePinningError {
                "The connection to \(pinning.host) is not trusted (certificate pinning)"
            } else if let urlError = error as? URLError, urlError.code == .timedOut {
                "The request timed out"
            } else if let urlError = error as? URLError, urlError.code == .cancelled {
                "Cancelled"
            } else {
                "Check your internet connection"
            }
        case .serverError(let status, let message):
            if status == 429 { "Too many requests; try again in a moment" } else if status >= 500 { "The feedback service had a problem; try again" } else { message }
        case .decodingError: "Unexpected answer from the feedback service"
        case .invalidRequest: "The request is not valid"
        case .invalidPushToken(let reason): "Invalid push token: \(reason)"
        }
    }

    /// Two errors are equal when they are the same case with the same payload (an underlying
    /// error by its description).
    public static func == (a: CutiEError, b: CutiEError) -> Bool {
        switch (a, b) {
        case (.notConfigured, .notConfigured), (.invalidAPIKey, .invalidAPIKey), (.invalidRequest, .invalidRequest): true
        case (.networkError(let x), .networkError(let y)): String(describing: x) == String(describing: y)
        case (.serverError(let s, let m), .serverError(let t, let n)): s == t && m == n
        case (.decodingError(let x), .decodingError(let y)): x == y
        case (.invalidPushToken(let x), .invalidPushToken(let y)): x == y
        default: false
        }
    }
}

import Foundation
import PurseHTTP

/// Why an SDK call failed, over PurseHTTP's error taxonomy.
public enum CutiEError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `CutiE.shared.configure(appId:apiURL:)` was not called.
    case notConfigured
    /// The server refused the request as invalid (4xx): its own words.
    case invalidRequest(String)
    /// The device could not be registered or its credentials were refused twice.
    case unauthorized
    /// The conversation (or link token, or device) does not exist for this device.
    case notFound
    case rateLimited(retryAfter: Duration?)
    case networkError(String)
    case timeout
    case serverError(statusCode: Int, message: String)
    case decodingError(String)
    case cancelled
    /// App Attest is not available on this device (or was not configured).
    case appAttestUnsupported
    /// Attesting the key, or making an assertion, failed: the step and why.
    case appAttestFailed(String)
    /// The app accepts only attested devices and this request was refused for it: the server's words.
    case appAttestRequired(String)
    /// The server's certificate chain matched none of the pins: nothing was sent after the handshake.
    case certificatePinningFailed(host: String)
    /// A push token that is not 32 to 200 hexadecimal characters: why.
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
        case .offline: self = .networkError(error.message)
        case .unauthorized: self = Self.isAppAttestRefusal(error) ? .appAttestRequired(error.message) : .unauthorized
        case .notFound: self = .notFound
        case .rateLimited: self = .rateLimited(retryAfter: error.retryAfter)
        case .timeout: self = .timeout
        case .cancelled: self = .cancelled
        case .invalidResponse: self = .decodingError(error.message)
        default:
            if let status = error.status, status >= 500 {
                self = .serverError(statusCode: status, message: error.message)
            } else {
                self = .invalidRequest(error.message)
            }
        }
    }

    static func from(_ error: any Error) -> CutiEError {
        if let error = error as? CutiEError { return error }
        if let error = error as? PurseError { return CutiEError(error) }
        if let error = error as? CertificatePinningError { return .certificatePinningFailed(host: error.host) }
        if error is CancellationError { return .cancelled }
        return .networkError("\(error)")
    }

    /// Whether trying again later can help.
    public var isRetryable: Bool {
        switch self {
        case .networkError, .timeout, .rateLimited, .serverError: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case .notConfigured: "Cuti-E is not configured"
        case .invalidRequest(let message): message
        case .unauthorized: "This device could not be authorized"
        case .notFound: "Not found"
        case .rateLimited: "Too many requests; try again in a moment"
        case .networkError: "Check your internet connection"
        case .timeout: "The request timed out"
        case .serverError: "The feedback service had a problem; try again"
        case .decodingError: "Unexpected answer from the feedback service"
        case .cancelled: "Cancelled"
        case .appAttestUnsupported: "App Attest is not available on this device"
        case .appAttestFailed(let step): "App Attest failed: \(step)"
        case .appAttestRequired(let message): message
        case .certificatePinningFailed(let host): "The connection to \(host) is not trusted (certificate pinning)"
        case .invalidPushToken(let reason): "Invalid push token: \(reason)"
        }
    }
}

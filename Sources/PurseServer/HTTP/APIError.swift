import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PurseDatabase

/// An error with a status code and the exact JSON body a client sees.
///
/// Every service turns its failures into an `APIError` so the wire shape is decided in one
/// place per service: `{"error": "..."}` by default, `{"error", "details"}` for Maly,
/// `{"verified": false, "message": ...}` for Nexus verification, and so on.
public struct APIError: Error, HTTPResponseError, Sendable, CustomStringConvertible {
    public var status: HTTPResponse.Status
    public var headers: HTTPFields
    /// The encoded JSON body.
    public var body: Data
    /// The human message, when the error was made from one.
    public var message: String?
    /// The stable `code` the error was made with, kept so a service that reshapes the body
    /// keeps it too.
    public var code: String?

    /// An error whose body is `{"error": message}`, plus `"code"` (a stable name clients classify
    /// by, never the message) and `"details"` when given.
    public init(_ status: HTTPResponse.Status, _ message: String, code: String? = nil, details: String? = nil, headers: HTTPFields = [:]) {
        self.status = status
        self.headers = headers
        self.message = message
        self.code = code
        self.body = Self.encode(ErrorBody(error: message, code: code, details: details))
    }

    /// An error whose body is any encodable value, for services whose seed fixes another shape.
    public init(_ status: HTTPResponse.Status, body: some Encodable, headers: HTTPFields = [:]) {
        self.status = status
        self.headers = headers
        self.body = Self.encode(body)
    }

    public var description: String {
        "APIError(\(status.code)): \(String(decoding: body, as: UTF8.self))"
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = self.headers
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    private static func encode(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)) ?? Data(#"{"error":"Internal server error"}"#.utf8)
    }

    struct ErrorBody: Encodable {
        var error: String
        var code: String?
        var details: String?
    }
}

extension APIError {
    public static func badRequest(_ message: String) -> APIError { APIError(.badRequest, message) }
    public static func notFound(_ message: String = "Not found") -> APIError { APIError(.notFound, message) }
    public static func conflict(_ message: String) -> APIError { APIError(.conflict, message) }
    public static func unprocessable(_ message: String) -> APIError { APIError(.unprocessableContent, message) }
    public static func forbidden(_ message: String) -> APIError { APIError(.forbidden, message) }
    /// The one 401 body every protected route returns.
    public static let authenticationRequired = APIError(
        .unauthorized, "Authentication required", headers: [.wwwAuthenticate: #"Bearer realm="purse""#]
    )
    public static func tooManyRequests(_ message: String, retryAfter seconds: Int) -> APIError {
        APIError(.tooManyRequests, message, headers: [.retryAfter: String(seconds)])
    }
    public static let internalError = APIError(.internalServerError, "Internal server error")
    /// The database is out of reach for a moment (``DatabaseOutage``): nothing was done; retry.
    public static let databaseUnavailable = APIError(
        .serviceUnavailable, "The service is unavailable for a moment; nothing was changed. Retry shortly.", headers: [.retryAfter: "1"]
    )
}

import HTTPTypes
import Hummingbird
import PurseServer

/// Gives the foundation's refusals on Nexus routes the seed's body shapes.
///
/// The shared layers (authentication, idempotency, body limits, JSON checks) answer
/// `{"error": …}`; the seed's wallet routes answer `{"success": false, "message", …}` and its
/// verify route `{"verified": false, "message"}`. Errors already in a Nexus shape pass as they
/// are; status, message and headers (`Retry-After` …) are kept.
struct NexusErrorShape: RouterMiddleware {
    typealias Context = PurseRequestContext

    @concurrent func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            throw Self.reshape(error, path: request.uri.path)
        }
    }

    /// The paths whose refusals take the seed's shapes.
    static func owns(_ path: String) -> Bool {
        path.hasPrefix("/user/") || path == "/user" || path.hasPrefix("/biometric/") || path.hasPrefix("/sandbox/nexus/")
    }

    /// `error` in the shape of `path`: `{"verified": false, "message"}` on `…/verify`, otherwise
    /// `{"success": false, "message", "code"}`. Errors already in a Nexus shape come back unchanged.
    static func reshape(_ error: APIError, path: String) -> APIError {
        guard let message = error.message else { return error }
        if path.hasSuffix("/verify") {
            var shaped = NexusFailure.verification(error.status, message)
            shaped.headers = error.headers
            return shaped
        }
        return NexusFailure.error(error.status, error.code ?? code(for: error.status), message, headers: error.headers)
    }

    /// A stable `code` for a refusal the foundation made without one of its own.
    static func code(for status: HTTPResponse.Status) -> String {
        switch status.code {
        case 400: "invalid_request"
        case 401: "unauthorized"
        case 404: "not_found"
        case 405: "method_not_allowed"
        case 409: "conflict"
        case 413: "request_too_large"
        case 415: "unsupported_media_type"
        case 422: "idempotency_key_reused"
        case 429: "rate_limited"
        default: "request_refused"
        }
    }
}

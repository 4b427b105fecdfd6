import HTTPTypes
import Hummingbird
import Logging
import PurseDatabase

/// Turns every error into a JSON response, so that no route leaks a stack, an HTML page or an
/// empty 500. Framework errors (unknown route, body too large, bad method) keep their status and
/// get the `{"error": ...}` body; the database out of reach is a 503 to retry (``DatabaseOutage``);
/// anything unexpected is logged and answered with a bare 500.
public struct ErrorMiddleware: RouterMiddleware {
    public typealias Context = PurseRequestContext

    public init() {}

    @concurrent public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return try error.response(from: request, context: context)
        } catch let error as HTTPError {
            let message = error.body ?? Self.defaultMessage(for: error.status)
            var headers = error.headers
            headers[.contentType] = nil
            headers[.contentLength] = nil
            return try APIError(error.status, message, headers: headers).response(from: request, context: context)
        } catch let error as any HTTPResponseError where error.status.kind == .clientError {
            return try APIError(error.status, Self.defaultMessage(for: error.status)).response(from: request, context: context)
        } catch where DatabaseOutage.contains(error) {
            context.logger.warning("database unavailable", metadata: ["error.type": "\(type(of: error))"])
            return try APIError.databaseUnavailable.response(from: request, context: context)
        } catch {
            context.logger.error("unhandled error", metadata: ["error.type": "\(type(of: error))"])
            return try APIError.internalError.response(from: request, context: context)
        }
    }

    static func defaultMessage(for status: HTTPResponse.Status) -> String {
        switch status {
        case .notFound: "Not found"
        case .methodNotAllowed: "Method not allowed"
        case .contentTooLarge: "Request body is too large"
        case .badRequest: "Bad request"
        case .unauthorized: "Authentication required"
        default: status.reasonPhrase
        }
    }
}

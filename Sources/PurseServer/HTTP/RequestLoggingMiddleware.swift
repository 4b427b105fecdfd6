import HTTPTypes
import Foundation
import Hummingbird
import Logging
import PurseDatabase
import PurseHTTP

/// Logs one line per request: method, path, status, duration and request id. The path is the
/// matched route's template (`/v1/sdk/link/status/{token}`), so a secret in a path — a link or
/// onboarding token — is not written; only unmatched paths appear as sent. The query string,
/// headers and bodies are never logged, so tokens, PINs and passwords cannot leak.
public struct RequestLoggingMiddleware: RouterMiddleware {
    public typealias Context = PurseRequestContext
    let level: Logger.Level

    public init(level: Logger.Level = .info) { self.level = level }

    @concurrent public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let requestID = Self.requestID(from: request)
        context.requestID = requestID
        context.logger[metadataKey: "request_id"] = .string(requestID)
        let start = ContinuousClock.now
        var response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        response.headers[.xRequestID] = requestID
        context.logger.log(
            level: level,
            "request",
            metadata: [
                "method": .string(request.method.rawValue),
                "path": .string(context.endpointPath ?? request.uri.path),
                "status": .stringConvertible(response.status.code),
                "duration_ms": .string(Self.milliseconds(elapsed)),
            ]
        )
        return response
    }

    /// `elapsed` in milliseconds with two decimals, as `String(format: "%.2f")` would write it
    /// without going through Foundation's format parser on every request.
    static func milliseconds(_ elapsed: Duration) -> String {
        let (seconds, attoseconds) = elapsed.components
        // Hundredths of a millisecond are units of 10^13 attoseconds; round half up.
        let hundredths = seconds * 100_000 + (attoseconds + 5_000_000_000_000) / 10_000_000_000_000
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    /// Accepts a caller's `X-Request-ID` when it is short and plain, otherwise makes one.
    static func requestID(from request: Request) -> String {
        if let given = request.headers[.xRequestID], (1...64).contains(given.count),
           given.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
            return given
        }
        return RandomID.hex(bytes: 8)
    }
}

extension Duration {
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}

import Hummingbird
import NIOCore

/// No text field or query value may hold a NUL character. PostgreSQL cannot store one in `text`
/// (it fails the statement), SQLite stores it and cuts the string short wherever C code reads it,
/// and no name, e-mail or message needs one. So it is refused at the edge, with a 400, before a
/// route or an engine sees it — once for every route:
///
/// - in the request target, as `%00` in the path or the query (``NULRefusalMiddleware``);
/// - in a body, as a raw zero byte, as JSON's `\u0000` escape, or as `%00` in a form body
///   (``Request/collectLimitedBody(context:)`` calls ``check(body:contentType:)``; every route
///   reads its body through it).
public enum NULRefusal {
    static let message = "Text must not contain NUL characters (U+0000)"
    static let refusal = APIError.badRequest(message)

    /// Whether `error` is this refusal (thrown here, before any module gave it its shape).
    static func isRefusal(_ error: APIError) -> Bool { error.status == .badRequest && error.message == message && error.body == refusal.body }

    /// Refuses a request target holding `%00`.
    public static func check(target: String) throws {
        var bytes = target.utf8.makeIterator()
        var state = 0  // 1 after "%", 2 after "%0"
        while let byte = bytes.next() {
            switch (state, byte) {
            case (_, 0): throw refusal
            case (_, UInt8(ascii: "%")): state = 1
            case (1, UInt8(ascii: "0")): state = 2
            case (2, UInt8(ascii: "0")): throw refusal
            default: state = 0
            }
        }
    }

    /// Refuses a body holding a NUL: a zero byte anywhere; in JSON, an unescaped `\u0000`
    /// (`\\u0000` is a backslash and the text `u0000`, and passes); in a form body, `%00`.
    public static func check(body: ByteBuffer, contentType: String?) throws {
        try body.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 0 { throw refusal }
                if byte == UInt8(ascii: "\\") {
                    if index + 5 < bytes.count, bytes[index + 1] | 0x20 == UInt8(ascii: "u"),
                       bytes[index + 2] == UInt8(ascii: "0"), bytes[index + 3] == UInt8(ascii: "0"),
                       bytes[index + 4] == UInt8(ascii: "0"), bytes[index + 5] == UInt8(ascii: "0") {
                        throw refusal
                    }
                    index += 2
                    continue
                }
                index += 1
            }
        }
        if let contentType, contentType.lowercased().hasPrefix("application/x-www-form-urlencoded") {
            try check(target: String(buffer: body))
        }
    }
}

/// Answers 400 to a request whose path or query holds `%00` (``NULRefusal``), and gives that
/// refusal, or one a route's body raised, the body shape of the module that owns the path (a
/// seed's own error JSON, a third party's wire format in a sandbox).
public struct NULRefusalMiddleware: RouterMiddleware {
    public typealias Context = PurseRequestContext
    let reshape: @Sendable (APIError, String) -> APIError

    public init(reshape: @escaping @Sendable (APIError, String) -> APIError = { error, _ in error }) {
        self.reshape = reshape
    }

    @concurrent public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        do {
            try NULRefusal.check(target: request.uri.description)
            return try await next(request, context)
        } catch let error as APIError where NULRefusal.isRefusal(error) {
            throw reshape(error, request.uri.path)
        }
    }
}

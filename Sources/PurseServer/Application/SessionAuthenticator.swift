import HTTPTypes
import Foundation
import Hummingbird
import PurseDatabase

/// Reads `Authorization: Bearer <jwt>` and, when it is a valid session token, sets
/// ``PurseRequestContext/user``. It never refuses a request itself: a route that needs a user
/// calls ``PurseRequestContext/requireUser()`` or sits behind ``RequireAuthentication``.
public struct SessionAuthenticator: RouterMiddleware {
    public typealias Context = PurseRequestContext
    let tokens: TokenService

    public init(tokens: TokenService) { self.tokens = tokens }

    @concurrent public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let token = Self.bearerToken(request),
           let claims = try? await tokens.verify(token, purpose: TokenService.sessionPurpose) {
            context.user = AuthenticatedUser(id: claims.userID)
        }
        return try await next(request, context)
    }

    /// The token of the request's one `Authorization` field when its scheme is `Bearer` (any
    /// case), without the spaces and tabs around it. Read as UTF-8 bytes, with no string made but
    /// the token: every authenticated request passes here.
    static func bearerToken(_ request: Request) -> String? {
        var header: String?
        for field in request.headers where field.name == .authorization {
            // Two Authorization fields: neither is trusted.
            guard header == nil else { return nil }
            header = field.value
        }
        guard let header else { return nil }
        return bearerToken(fromAuthorization: header)
    }

    static func bearerToken(fromAuthorization header: String) -> String? {
        let bytes = header.utf8
        let scheme = "bearer".utf8
        guard bytes.count > scheme.count,
              zip(bytes, scheme).allSatisfy({ $0 | 0x20 == $1 }),
              bytes.dropFirst(scheme.count).first == UInt8(ascii: " ")
        else { return nil }
        let isBlank = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var token = bytes.dropFirst(scheme.count + 1)
        while let first = token.first, isBlank(first) { token = token.dropFirst() }
        while let last = token.last, isBlank(last) { token = token.dropLast() }
        return token.isEmpty ? nil : String(Substring(token))
    }
}

/// Refuses requests without a signed-in user: 401 `{"error": "Authentication required"}`.
public struct RequireAuthentication: RouterMiddleware {
    public typealias Context = PurseRequestContext
    public init() {}
    @concurrent public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        _ = try context.requireUser()
        return try await next(request, context)
    }
}

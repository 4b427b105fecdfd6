import HTTPTypes
import Foundation
import Hummingbird

/// Reads `Authorization: Bearer <jwt>` and, when it is a valid session token, sets
/// ``PurseRequestContext/user``. It never refuses a request itself: a route that needs a user
/// calls ``PurseRequestContext/requireUser()`` or sits behind ``RequireAuthentication``.
public struct SessionAuthenticator: RouterMiddleware {
    public typealias Context = PurseRequestContext
    let tokens: TokenService

    public init(tokens: TokenService) { self.tokens = tokens }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let token = Self.bearerToken(request),
           let claims = try? await tokens.verify(token, purpose: TokenService.sessionPurpose) {
            context.user = AuthenticatedUser(id: claims.userID)
        }
        return try await next(request, context)
    }

    static func bearerToken(_ request: Request) -> String? {
        guard let header = request.headers[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        // Foundation's trimmingCharacters(in:) bridges through NSString: a measurable share of
        // every authenticated request.
        var token = parts[1]
        while let first = token.first, first == " " || first == "\t" { token = token.dropFirst() }
        while let last = token.last, last == " " || last == "\t" { token = token.dropLast() }
        return token.isEmpty ? nil : String(token)
    }
}

/// Refuses requests without a signed-in user: 401 `{"error": "Authentication required"}`.
public struct RequireAuthentication: RouterMiddleware {
    public typealias Context = PurseRequestContext
    public init() {}
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        _ = try context.requireUser()
        return try await next(request, context)
    }
}

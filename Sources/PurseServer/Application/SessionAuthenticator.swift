import HTTPTypes
import Foundation
import Hummingbird
import Logging
import PurseDatabase

/// Reads `Authorization: Bearer <jwt>` and, when it is a valid session token of a user that
/// exists, sets ``PurseRequestContext/user``. It never refuses a request itself: a route that
/// needs a user calls ``PurseRequestContext/requireUser()`` or sits behind
/// ``RequireAuthentication``, and gets 401 for a token of an unknown user as for no token.
public struct SessionAuthenticator: RouterMiddleware {
    public typealias Context = PurseRequestContext
    let tokens: TokenService
    let users: KnownUsers

    public init(tokens: TokenService, users: KnownUsers) {
        self.tokens = tokens
        self.users = users
    }

    @concurrent public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let token = Self.bearerToken(request),
           let claims = try? await tokens.verify(token, purpose: TokenService.sessionPurpose) {
            let exists: Bool
            do {
                let reads = request.method == .get || request.method == .head || request.method == .options
                exists = try await users.exists(claims.userID, fresh: !reads)
            } catch {
                // The database did not answer: the route's own work meets the same failure and
                // answers it in its own words.
                context.logger.warning("could not look the token's user up", metadata: ["error": "\(error)"])
                exists = true
            }
            if exists {
                context.user = AuthenticatedUser(id: claims.userID)
            } else {
                context.unknownUser = claims.userID
            }
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

/// Refuses requests without a signed-in user: 401 `{"error": "Authentication required"}`, or
/// `unknownUser` for a valid token of a user the database does not have, where a service's
/// contract answers that in its own words.
public struct RequireAuthentication: RouterMiddleware {
    public typealias Context = PurseRequestContext
    let unknownUser: APIError?

    public init(unknownUser: APIError? = nil) { self.unknownUser = unknownUser }

    @concurrent public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        if context.unknownUser != nil, let unknownUser { throw unknownUser }
        _ = try context.requireUser()
        return try await next(request, context)
    }
}

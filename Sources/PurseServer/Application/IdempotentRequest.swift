import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PurseDatabase
import SQLKit

extension ServerEnvironment {
    /// Runs a money-moving request once per `Idempotency-Key`.
    ///
    /// Reads the key (400 when missing), hashes method, path and body, and runs `effect` inside
    /// one database transaction with the key's record. A retry with the same key and body returns
    /// the first response with `Idempotent-Replayed: true`; the same key with another body is 422.
    /// - Parameters:
    ///   - body: The raw request body (already collected, so it can be hashed and decoded).
    ///   - keyRequired: When false, a request without the header runs `effect` once in its own
    ///     transaction (Stripe's rule: the key is optional, a retry with one replays); a
    ///     malformed key is still 400.
    ///   - effect: Writes the effect in `db` and returns the status and JSON body to send.
    public func idempotent(
        _ request: Request, body: ByteBuffer, user: UserID, keyRequired: Bool = true,
        effect: @escaping @Sendable (any DatabaseSession) async throws -> (HTTPResponse.Status, Data)
    ) async throws -> Response {
        if !keyRequired, request.headers[.idempotencyKey] == nil {
            let (status, data) = try await database.transaction { db in try await effect(db) }
            return .jsonData(data, status: status)
        }
        let key = try Self.idempotencyKey(of: request)
        let (scope, hash) = Self.idempotencyScope(request, body: body)
        do {
            let stored = try await idempotency.perform(
                database: database, user: user, key: key, scope: scope, requestHash: hash, now: now()
            ) { db in
                let (status, data) = try await effect(db)
                return StoredResponse(status: Int(status.code), body: data)
            }
            return Self.response(stored)
        } catch IdempotencyError.keyReused {
            throw Self.keyReused
        }
    }

    /// The request's `Idempotency-Key`, or 400 when it is missing or malformed.
    public static func idempotencyKey(of request: Request) throws -> String {
        do {
            return try IdempotencyStore.validate(key: request.headers[.idempotencyKey])
        } catch {
            throw APIError.badRequest("Idempotency-Key header is required (1-255 printable ASCII characters)")
        }
    }

    /// The idempotency scope of a request (method and path) and the hash of the request under
    /// its key (scope and body).
    public static func idempotencyScope(_ request: Request, body: ByteBuffer) -> (scope: String, hash: String) {
        let scope = "\(request.method.rawValue) \(request.uri.path)"
        return (scope, IdempotencyStore.requestHash(scope: scope, body: body.readableBytesView))
    }

    /// The HTTP response of a stored one, `Idempotent-Replayed: true` when it is replayed.
    public static func response(_ stored: StoredResponse) -> Response {
        var headers: HTTPFields = [:]
        if stored.replayed { headers[.idempotentReplayed] = "true" }
        return .jsonData(stored.body, status: HTTPResponse.Status(code: stored.status), headers: headers)
    }

    /// 422: the key came with another request.
    public static let keyReused = APIError.unprocessable("Idempotency-Key was already used with a different request")
}

import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PurseDatabase
import PurseHTTP
import SQLKit

/// A money-moving request under its `Idempotency-Key`, between the phases of its handling:
///
/// 1. ``ServerEnvironment/begin(_:body:user:keyRequired:)`` reads and checks the key and answers a
///    finished retry from its record — before anything the request would spend (a PIN attempt, a
///    seat, a verification) — or hands back the call, fresh.
/// 2. ``ServerEnvironment/commit(_:effect:)`` writes the effect and the key's record in one
///    transaction and returns the effect's typed value; a concurrent request with the key that
///    finished first is answered from its record instead.
/// 3. ``ServerEnvironment/amend(_:status:body:in:)`` replaces the stored answer inside a later
///    transaction — the one that settles what the effect started — so a retry gets exactly the
///    answer the first request sent.
///
/// A route with nothing to do before its effect calls
/// ``ServerEnvironment/idempotent(_:body:user:keyRequired:effect:)``, which is phase 2 alone.
public struct IdempotentCall: Sendable {
    public let user: UserID
    /// The key; nil where the route takes it as optional and none was sent (the effect then runs
    /// once, unrecorded: Stripe's rule).
    public let key: String?
    /// Method and path.
    public let scope: String
    /// The fingerprint of scope and body the key was first used with.
    public let requestHash: String
}

/// Where a request stands after ``ServerEnvironment/begin(_:body:user:keyRequired:)``.
public enum IdempotencyStart: Sendable {
    /// A finished request with this key and body: its answer, to send as it is.
    case replay(Response)
    /// Not seen yet (or still running elsewhere): go on, and commit through this call.
    case fresh(IdempotentCall)
}

/// What an effect produced: the typed value the route goes on with, and the answer stored under
/// the key.
public struct IdempotentEffect<Value: Sendable>: Sendable {
    public var value: Value
    public var status: HTTPResponse.Status
    public var body: Data

    public init(_ value: Value, status: HTTPResponse.Status, body: Data) {
        self.value = value
        self.status = status
        self.body = body
    }
}

/// The outcome of ``ServerEnvironment/commit(_:effect:)``.
public enum IdempotentOutcome<Value: Sendable>: Sendable {
    /// The effect ran and committed with the key's record.
    case fresh(Value, Response)
    /// Another request with the key finished first: its answer.
    case replayed(Response)

    public var response: Response {
        switch self {
        case .fresh(_, let response), .replayed(let response): response
        }
    }
}

extension ServerEnvironment {
    /// Phase 1: the key (400 when missing where required, or malformed), and the answer of a
    /// finished request with it (422 when it came with another body).
    public func begin(_ request: Request, body: ByteBuffer, user: UserID, keyRequired: Bool = true) async throws -> IdempotencyStart {
        try await begin(idempotentCall(request, body: body, user: user, keyRequired: keyRequired))
    }

    /// Phase 1 for a call made earlier with ``idempotentCall(_:body:user:keyRequired:)`` (a route
    /// that checks the key before it reads the body).
    public func begin(_ call: IdempotentCall) async throws -> IdempotencyStart {
        let user = call.user
        guard let key = call.key else { return .fresh(call) }
        let idempotency = idempotency
        do {
            let stored = try await database.read { db in
                try await idempotency.finished(user: user, key: key, scope: call.scope, requestHash: call.requestHash, in: db)
            }
            return stored.map { .replay(Self.response($0)) } ?? .fresh(call)
        } catch IdempotencyError.keyReused {
            throw Self.keyReused
        }
    }

    /// The call for `request` without looking its key up (phase 2 finds a finished one itself).
    public func idempotentCall(_ request: Request, body: ByteBuffer, user: UserID, keyRequired: Bool = true) throws -> IdempotentCall {
        let key: String? = !keyRequired && request.headers[.idempotencyKey] == nil ? nil : try Self.idempotencyKey(of: request)
        let (scope, hash) = Self.idempotencyScope(request, body: body)
        return IdempotentCall(user: user, key: key, scope: scope, requestHash: hash)
    }

    /// Phase 2: runs `effect` once per key, in one database transaction with the key's record.
    /// - Throws: 422 when the key came with another request; whatever `effect` throws, with
    ///   nothing written.
    public func commit<Value: Sendable>(
        _ call: IdempotentCall, effect: @escaping @Sendable (any DatabaseSession) async throws -> IdempotentEffect<Value>
    ) async throws -> IdempotentOutcome<Value> {
        guard let key = call.key else {
            let done = try await database.transaction { db in try await effect(db) }
            return .fresh(done.value, .jsonData(done.body, status: done.status))
        }
        do {
            let (stored, value) = try await idempotency.perform(
                database: database, user: call.user, key: key, scope: call.scope, requestHash: call.requestHash, now: now()
            ) { db in
                let done = try await effect(db)
                return (StoredResponse(status: Int(done.status.code), body: done.body), done.value)
            }
            if let value { return .fresh(value, Self.response(stored)) }
            return .replayed(Self.response(stored))
        } catch IdempotencyError.keyReused {
            throw Self.keyReused
        }
    }

    /// Phase 3: replaces the answer stored under the call's key, in `db` — the transaction that
    /// settles what the effect started, as its last statement: nothing may run in `db` after it.
    /// Nothing to do for a call without a key.
    public func amend(_ call: IdempotentCall, status: HTTPResponse.Status, body: Data, in db: any DatabaseSession) async throws {
        guard let key = call.key else { return }
        try await idempotency.amend(user: call.user, key: key, response: StoredResponse(status: Int(status.code), body: body), in: db)
    }

    /// Runs a money-moving request once per `Idempotency-Key`: phase 2 alone, for a route with
    /// nothing to do before its effect.
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
        let call = try idempotentCall(request, body: body, user: user, keyRequired: keyRequired)
        return try await commit(call) { db in
            let (status, data) = try await effect(db)
            return IdempotentEffect((), status: status, body: data)
        }.response
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

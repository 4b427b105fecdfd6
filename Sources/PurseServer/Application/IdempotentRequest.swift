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
    /// The route will still replace this answer (``ServerEnvironment/amend(_:status:body:in:)``)
    /// or confirm it (``ServerEnvironment/settle(_:)``): until then a retry with the key waits
    /// for the final answer instead of getting this one.
    public var provisional: Bool

    public init(_ value: Value, status: HTTPResponse.Status, body: Data, provisional: Bool = false) {
        self.value = value
        self.status = status
        self.body = body
        self.provisional = provisional
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
            guard let stored else { return .fresh(call) }
            return .replay(try await settled(call, stored))
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
                return (StoredResponse(status: Int(done.status.code), body: done.body, provisional: done.provisional), done.value)
            }
            if let value { return .fresh(value, Self.response(stored)) }
            return .replayed(try await settled(call, stored))
        } catch IdempotencyError.keyReused {
            throw Self.keyReused
        }
    }

    /// How long a retry waits for a provisional answer to become final before it is told to come
    /// back (409 with `Retry-After`), and how old a provisional answer may get before it is taken
    /// as final (its request ended without settling it: a crash).
    static let provisionalWait: Duration = .seconds(10)
    static let provisionalLifetime: Int64 = 30_000

    /// The answer a retry sends: `stored` when it is final; while the first request may still
    /// replace it, the final one once it comes (read again every 50 ms), or after
    /// ``provisionalWait`` a 409 `idempotency_key_in_use` with `Retry-After: 1` — Stripe's answer
    /// for a key still in use, which the client cores retry with the same key.
    func settled(_ call: IdempotentCall, _ stored: StoredResponse) async throws -> Response {
        guard let key = call.key else { return Self.response(stored) }
        var stored = stored
        let deadline = ContinuousClock.now + Self.provisionalWait
        let idempotency = idempotency
        while stored.provisional, now().epochMillis - stored.createdAt < Self.provisionalLifetime {
            guard ContinuousClock.now < deadline else { throw Self.keyInUse }
            try await Task.sleep(for: .milliseconds(50))
            guard let again = try await database.read({ db in
                try await idempotency.finished(user: call.user, key: key, scope: call.scope, requestHash: call.requestHash, in: db)
            }) else { throw Self.keyInUse }
            stored = again
        }
        return Self.response(stored)
    }

    /// 409: the first request with the key is still finishing; come back.
    public static let keyInUse = APIError(.conflict, "A request with this Idempotency-Key is still being processed; retry in a moment",
                                          code: "idempotency_key_in_use", headers: [.retryAfter: "1"])

    /// Makes the provisional answer stored under the call's key final as it is: the route answers
    /// with it (a top-up whose delivery has no verdict yet).
    public func settle(_ call: IdempotentCall) async throws {
        guard let key = call.key else { return }
        let idempotency = idempotency
        try await database.transaction { db in try await idempotency.settle(user: call.user, key: key, in: db) }
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

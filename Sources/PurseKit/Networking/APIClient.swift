import Foundation
import HTTPTypes
import PurseHTTP

/// The signed-in session of a client: base URL and bearer token, persisted in a ``SecureStore``.
public actor ClientSession {
    public nonisolated let baseURL: URL
    private let store: (any SecureStore)?
    private let tokenKey: String
    private var cachedToken: String?
    private var loaded = false

    /// - Parameters:
    ///   - baseURL: The server, e.g. `http://127.0.0.1:8080`.
    ///   - store: Where the token is kept between launches; `nil` keeps it in memory only.
    ///   - tokenKey: The store key (one per server, so two servers' tokens do not mix).
    public init(baseURL: URL, store: (any SecureStore)? = nil, tokenKey: String? = nil) {
        self.baseURL = baseURL
        self.store = store
        self.tokenKey = tokenKey ?? "session.token.\(baseURL.absoluteString)"
    }

    public func token() async throws -> String? {
        if !loaded {
            cachedToken = try await store?.string(for: tokenKey)
            loaded = true
        }
        return cachedToken
    }

    public func setToken(_ token: String?) async throws {
        cachedToken = token
        loaded = true
        if let store {
            if let token { try await store.setString(token, for: tokenKey) } else { try await store.remove(tokenKey) }
        }
    }

    /// The sign-in device credential the server gave at this client's last good sign-in: sent
    /// with the next sign-in, it marks this client as one that signed in before, which password
    /// guessing from elsewhere never holds back. Kept when the session ends (signing out does not
    /// make a device unknown); in memory only without a store.
    public func signInDevice() async throws -> String? {
        if let cachedDevice { return cachedDevice }
        cachedDevice = try await store?.string(for: deviceKey)
        return cachedDevice
    }

    public func setSignInDevice(_ credential: String) async throws {
        cachedDevice = credential
        try await store?.setString(credential, for: deviceKey)
    }

    private var cachedDevice: String?
    private var deviceKey: String { "signin.device.\(baseURL.absoluteString)" }
}

/// A JSON API client: encoding, bearer auth, one error taxonomy, retries.
///
/// Only requests that are safe to repeat are retried: `GET`, `HEAD`, `PUT`, `DELETE`, and any
/// request that carries an `Idempotency-Key` (the same key on every try). They are retried on
/// 429, 503 and timeouts, waiting as ``RetryPolicy`` says and honouring `Retry-After`.
public struct APIClient: Sendable {
    public let session: ClientSession
    public let transport: any HTTPTransport
    public var retry: RetryPolicy
    public var timeout: Duration
    /// The most one call may take, retries and their waits included: each try gets what is left
    /// of it (at most ``timeout``), and no retry starts that could not finish in time. Nil: only
    /// ``timeout`` per try and ``RetryPolicy`` bound a call.
    public var deadline: Duration?
    public var sleeper: Sleeper
    /// Extra header fields on every request (e.g. `User-Agent`).
    public var defaultHeaderFields: HTTPFields

    public init(
        session: ClientSession, transport: any HTTPTransport, retry: RetryPolicy = .default,
        timeout: Duration = .seconds(30), deadline: Duration? = nil, sleeper: Sleeper = .live, defaultHeaderFields: HTTPFields = [:]
    ) {
        self.session = session
        self.transport = transport
        self.retry = retry
        self.timeout = timeout
        self.deadline = deadline
        self.sleeper = sleeper
        self.defaultHeaderFields = defaultHeaderFields
    }

    public var baseURL: URL { session.baseURL }

    /// Sends a request and decodes a JSON answer.
    /// - Parameters:
    ///   - method: `.get`, `.post` …
    ///   - path: Path below the base URL, e.g. `/auth/me`.
    ///   - query: Query items.
    ///   - body: Encoded as JSON when given.
    ///   - headerFields: Extra header fields for this request; they replace fields of the same name.
    ///   - idempotencyKey: Sent as `Idempotency-Key`; makes a `POST` retryable.
    ///   - authenticated: Adds the session's bearer token when there is one.
    /// - Returns: The decoded body of a 2xx answer.
    /// - Throws: ``PurseError``.
    public func send<Response: Decodable>(
        _ method: HTTPRequest.Method, _ path: String, query: [URLQueryItem] = [], body: (any Encodable)? = nil,
        headerFields: HTTPFields = [:], idempotencyKey: String? = nil, authenticated: Bool = true,
        as type: Response.Type = Response.self
    ) async throws -> Response {
        let response = try await sendRaw(
            method, path, query: query, body: body, headerFields: headerFields, idempotencyKey: idempotencyKey, authenticated: authenticated
        )
        if Response.self == EmptyResponse.self, let empty = EmptyResponse() as? Response { return empty }
        do {
            return try JSONDecoder.purse.decode(Response.self, from: response.body)
        } catch {
            throw PurseError.invalidResponse("unexpected answer from \(method) \(path): \(error)")
        }
    }

    /// Sends a request and returns a 2xx response as it came.
    /// - Throws: ``PurseError`` for transport failures and non-2xx statuses.
    public func sendRaw(
        _ method: HTTPRequest.Method, _ path: String, query: [URLQueryItem] = [], body: (any Encodable)? = nil,
        headerFields: HTTPFields = [:], idempotencyKey: String? = nil, authenticated: Bool = true
    ) async throws -> TransportResponse {
        var request = TransportRequest(method: method, url: try url(path, query: query), headerFields: defaultHeaderFields, timeout: timeout)
        request.headerFields[.accept] = "application/json"
        if let body {
            request.body = try JSONEncoder.purse.encode(body)
            request.headerFields[.contentType] = "application/json"
        }
        if authenticated, let token = try await session.token() {
            request.headerFields[.authorization] = "Bearer \(token)"
        }
        if let idempotencyKey { request.headerFields[.idempotencyKey] = idempotencyKey }
        for name in Set(headerFields.map(\.name)) { request.headerFields[fields: name] = headerFields[fields: name] }
        return try await perform(request)
    }

    /// Sends with the retry policy; returns 2xx responses, throws everything else.
    public func perform(_ request: TransportRequest) async throws -> TransportResponse {
        let retryable = Self.isRetryable(request)
        let clock = ContinuousClock()
        let start = clock.now
        var request = request
        var attempt = 1
        while true {
            try Task.checkCancellation()
            if let deadline {
                let left = deadline - (clock.now - start)
                guard left > .zero else { throw PurseError.timeout("no answer within \(deadline)") }
                request.timeout = min(request.timeout, left)
            }
            let (failure, serverDelay) = try await attemptOnce(request, retryable: retryable)
            guard let failure else { return serverDelay.response! }
            guard retryable, failure.isRetryable, attempt < retry.maxAttempts else { throw failure.error }
            let wait: Duration
            if let delay = serverDelay.retryAfter {
                guard delay <= retry.maxRetryAfter else { throw failure.error }
                wait = delay
            } else {
                wait = retry.delay(afterAttempt: attempt)
            }
            // A retry that could not be answered before the deadline is not started.
            if let deadline, clock.now - start + wait >= deadline { throw failure.error }
            do {
                try await sleeper.sleep(wait)
            } catch {
                throw PurseError.cancelled
            }
            attempt += 1
        }
    }

    private struct Failure {
        var error: PurseError
        var isRetryable: Bool
    }

    private struct Answer {
        var response: TransportResponse?
        var retryAfter: Duration?
    }

    /// One try: a 2xx response, or the failure and whether it may be retried.
    private func attemptOnce(_ request: TransportRequest, retryable: Bool) async throws -> (Failure?, Answer) {
        do {
            let response = try await transport.send(request)
            if response.status.kind == .successful { return (nil, Answer(response: response)) }
            let error = PurseError.from(response)
            // 429 and 503 ask for time; so does a 409 that says when to come back (the request's
            // Idempotency-Key is still in use by its first try: the same request, key included,
            // gets the first answer once it is final).
            let wait = response.status == .tooManyRequests || response.status == .serviceUnavailable
                || (response.status == .conflict && response.retryAfter != nil)
            return (Failure(error: error, isRetryable: wait), Answer(retryAfter: response.retryAfter))
        } catch let error as PurseError {
            return (Failure(error: error, isRetryable: error.kind == .timeout), Answer())
        } catch is CancellationError {
            throw PurseError.cancelled
        }
    }

    static func isRetryable(_ request: TransportRequest) -> Bool {
        switch request.method {
        case .get, .head, .put, .delete, .options: true
        default: request.headerFields[.idempotencyKey] != nil
        }
    }

    func url(_ path: String, query: [URLQueryItem]) throws -> URL {
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        guard var components = URLComponents(string: base + (path.hasPrefix("/") ? path : "/" + path)) else {
            throw PurseError.invalidResponse("bad URL path \(path)")
        }
        if !query.isEmpty { components.queryItems = (components.queryItems ?? []) + query }
        guard let url = components.url else { throw PurseError.invalidResponse("bad URL path \(path)") }
        return url
    }
}

/// For endpoints whose answer body does not matter.
public struct EmptyResponse: Decodable, Sendable, Equatable {
    public init() {}
    public init(from decoder: any Decoder) throws {}
}

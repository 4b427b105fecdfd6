import Foundation
import HTTPTypes
import PurseFormats
import PurseHTTP

/// Where the connection stands; the app shows it at all times.
public enum ChipsConnectionState: Sendable, Equatable {
    case disconnected
    case connecting
    case connected
    /// Not trying any more: the provider refused the login, or no key is stored.
    case failed(String)
}

/// A push from the provider: `{action: "notify", channel, data}`.
public struct ChipsNotification: Sendable, Equatable {
    public var channel: String?
    public var data: JSONValue

    public init(channel: String?, data: JSONValue) {
        self.channel = channel
        self.data = data
    }
}

/// One websocket to the provider, speaking Wyseman: requests matched to responses by id (they
/// may come back in any order), a per-request timeout, pushes as a stream, and — after a drop,
/// common on phones — reconnection by signature with backoff until ``disconnect()``. Requests
/// pending when the connection drops fail with ``ChipsError/disconnected``; none is resent,
/// since the provider may have acted on it.
public actor ChipsConnection {
    public struct Options: Sendable {
        public var requestTimeout: Duration = .seconds(15)
        /// Waits between reconnection attempts (its `maxAttempts` is not used: attempts go on
        /// until the login is refused or ``ChipsConnection/disconnect()``).
        public var reconnect = RetryPolicy(baseDelay: .milliseconds(500), maxDelay: .seconds(30))
        /// Sent on `/clientinfo` and on the upgrade, which must agree: the signed text has it.
        public var userAgent = "MyCHIPs-Purse/1.0"
        public init() {}
    }

    let keychain: ChipsKeychain
    let transport: any WebSocketTransport
    let http: any HTTPTransport
    let options: Options
    let sleeper: Sleeper
    let now: @Sendable () -> Date

    public private(set) var state: ChipsConnectionState = .disconnected
    private var socket: (any WebSocketConnection)?
    /// Counts sockets, so a reader of an old one cannot touch the new one's state.
    private var generation = 0
    private var wantsConnection = false
    private var reconnectTask: Task<Void, Never>?
    private var nextID = 1
    private var pending: [Int: Pending] = [:]
    /// The writer's queue of the current socket.
    private var outgoing: AsyncStream<String>.Continuation?

    private struct Pending {
        var continuation: CheckedContinuation<JSONValue, any Error>
        var deadline: ContinuousClock.Instant
    }
    private var stateWatchers: [UUID: AsyncStream<ChipsConnectionState>.Continuation] = [:]
    private var notificationWatchers: [UUID: AsyncStream<ChipsNotification>.Continuation] = [:]

    public init(keychain: ChipsKeychain, transport: any WebSocketTransport, http: any HTTPTransport, options: Options = Options(),
                sleeper: Sleeper = .live, now: @escaping @Sendable () -> Date = Date.init) {
        self.keychain = keychain
        self.transport = transport
        self.http = http
        self.options = options
        self.sleeper = sleeper
        self.now = now
    }

    // MARK: Observing

    /// The state now and every change after it.
    public func states() -> AsyncStream<ChipsConnectionState> {
        let (stream, continuation) = AsyncStream<ChipsConnectionState>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        continuation.yield(state)
        stateWatchers[id] = continuation
        continuation.onTermination = { _ in Task { await self.removeStateWatcher(id) } }
        return stream
    }

    /// The provider's pushes from now on.
    public func notifications() -> AsyncStream<ChipsNotification> {
        let (stream, continuation) = AsyncStream<ChipsNotification>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        notificationWatchers[id] = continuation
        continuation.onTermination = { _ in Task { await self.removeNotificationWatcher(id) } }
        return stream
    }

    private func removeStateWatcher(_ id: UUID) { stateWatchers[id] = nil }
    private func removeNotificationWatcher(_ id: UUID) { notificationWatchers[id] = nil }

    private func set(_ new: ChipsConnectionState) {
        guard new != state else { return }
        state = new
        for watcher in stateWatchers.values { watcher.yield(new) }
    }

    // MARK: Logging in

    /// First login with a ticket: refuses an expired one before connecting, makes a new
    /// connection key, and sends its public half with the ticket's token. On success the key and
    /// the provider are stored for later logins by signature.
    /// - Parameters:
    ///   - username: Who is logging in, when the ticket does not say.
    ///   - httpPort: The provider's HTTP port when not the websocket's.
    ///   - secure: TLS; by default on unless the host is this machine.
    public func connect(ticket: ChipsTicket, username: String? = nil, httpPort: Int? = nil, secure: Bool? = nil) async throws {
        guard !ticket.isExpired(at: now()) else { throw ChipsError.ticketExpired }
        guard let user = ticket.user ?? username.flatMap({ $0.isEmpty ? nil : $0 }) else { throw ChipsError.needsUsername }
        let account = ChipsKeychain.Account(host: ticket.host, port: ticket.port, user: user, httpPort: httpPort,
                                            secure: secure ?? !Self.isLoopback(ticket.host))
        let key = ConnectionKey()
        await dropSocket()
        wantsConnection = false
        set(.connecting)
        do {
            let url = try Self.webSocketURL(account, query: [("user", user), ("db", Self.channels(of: user)), ("token", ticket.token), ("pub", key.loginPub)])
            let socket = try await open(url)
            do {
                try await keychain.save(key)
                try await keychain.save(account)
            } catch {
                await socket.close()
                throw ChipsError.keyStore("the connection key could not be stored: \(error)")
            }
            adopt(socket)
        } catch {
            let failure = Self.chipsError(error)
            set(failure.kind == .loginRefused ? .failed(failure.message) : .disconnected)
            throw failure
        }
    }

    /// Logs in with the stored key, and keeps the connection up (reconnecting after drops)
    /// until ``disconnect()``.
    public func connect() async throws {
        guard socket == nil else { return }
        reconnectTask?.cancel()
        reconnectTask = nil
        set(.connecting)
        do {
            adopt(try await openBySignature())
        } catch {
            let failure = Self.chipsError(error)
            set(failure.kind == .loginRefused || failure.kind == .notLoggedIn ? .failed(failure.message) : .disconnected)
            throw failure
        }
    }

    /// Closes the connection and stops reconnecting. Pending requests fail.
    public func disconnect() async {
        wantsConnection = false
        reconnectTask?.cancel()
        reconnectTask = nil
        await dropSocket()
        set(.disconnected)
    }

    private func openBySignature() async throws -> any WebSocketConnection {
        guard let key = try await keychain.key(), let account = try await keychain.account() else { throw ChipsError.notLoggedIn }
        let info = try await clientInfo(account).info
        let message = Self.loginMessage(info)
        guard case .string(let date)? = info["date"] else { throw ChipsError.invalidResponse("the provider's /clientinfo has no date") }
        let url = try Self.webSocketURL(account, query: [("user", account.user), ("db", Self.channels(of: account.user)), ("sign", try key.sign(message)),
                                                         ("date", date)])
        return try await open(url)
    }

    /// A `GET` of the provider's HTTP resource at `path` for the logged-in user, authenticated as a
    /// websocket login is (a fresh signature over `/clientinfo`'s text; each is good once). The
    /// visual balance sheet is `/chips/balance.svg`.
    public func signedGET(_ path: String) async throws -> TransportResponse {
        guard let key = try await keychain.key(), let account = try await keychain.account() else { throw ChipsError.notLoggedIn }
        let (info, port) = try await clientInfo(account)
        guard case .string(let date)? = info["date"] else { throw ChipsError.invalidResponse("the provider's /clientinfo has no date") }
        var components = URLComponents()
        components.scheme = account.secure ? "https" : "http"
        components.host = account.host
        components.port = port
        components.path = path
        components.percentEncodedQuery = [("user", account.user), ("sign", try key.sign(Self.loginMessage(info))), ("date", date)]
            .map { "\($0.0)=\(URIComponent.encode($0.1))" }.joined(separator: "&")
        guard let url = components.url else { throw ChipsError.invalidTicket("the provider's address is not valid") }
        return try await get(url)
    }

    /// A `GET` of a link the provider gave (a report's), with this app's user agent: over
    /// HTTPS, or plain HTTP to the provider's own host (a development provider).
    public func fetch(_ url: URL) async throws -> TransportResponse {
        guard let account = try await keychain.account(), url.scheme == "https" || (url.scheme == "http" && url.host == account.host) else {
            throw ChipsError.invalidResponse("the link is not a secure one or at your provider")
        }
        return try await get(url)
    }

    /// A `GET` with this app's user agent and the request timeout; an unreachable host is ``ChipsError/offline``.
    private func get(_ url: URL) async throws -> TransportResponse {
        do {
            return try await http.send(TransportRequest(method: .get, url: url, headerFields: [.userAgent: options.userAgent], timeout: options.requestTimeout))
        } catch {
            throw ChipsError.offline
        }
    }

    /// Where the provider's HTTP resources are: the account's `httpPort` when set; else, as
    /// Wyseman's client looks, the port just below the websocket's — then the websocket's own,
    /// for a provider serving both on one port (behind a proxy).
    static func httpPorts(_ account: ChipsKeychain.Account) -> [Int] {
        if let port = account.httpPort { return [port] }
        return account.port > 1 ? [account.port - 1, account.port] : [account.port]
    }

    /// `GET /clientinfo` on the provider's HTTP port, and the port that answered.
    private func clientInfo(_ account: ChipsKeychain.Account) async throws -> (info: [String: JSONValue], port: Int) {
        var failure = ChipsError.offline
        for port in Self.httpPorts(account) {
            var components = URLComponents()
            components.scheme = account.secure ? "https" : "http"
            components.host = account.host
            components.port = port
            components.path = "/clientinfo"
            guard let url = components.url else { throw ChipsError.invalidTicket("the provider's address is not valid") }
            let response: TransportResponse
            do {
                response = try await http.send(TransportRequest(method: .get, url: url, headerFields: [.userAgent: options.userAgent, .accept: "application/json"],
                                                               timeout: options.requestTimeout))
            } catch {
                continue
            }
            guard response.status == 200, let value = try? StrictJSON.parse(response.body), case .object(let members) = value else {
                failure = ChipsError.invalidResponse("the provider's /clientinfo answered \(response.status)")
                continue
            }
            return (members, port)
        }
        throw failure
    }

    /// `JSON.stringify({ip, cookie, userAgent, date})` of what `/clientinfo` answered: the members
    /// it has, in that order — the text the provider rebuilds from the upgrade request.
    static func loginMessage(_ info: [String: JSONValue]) -> String {
        JavaScriptJSON.object(["ip", "cookie", "userAgent", "date"].compactMap { key in info[key].map { (key, $0) } })
    }

    private func open(_ url: URL) async throws -> any WebSocketConnection {
        do {
            return try await transport.connect(to: url, headerFields: [.userAgent: options.userAgent])
        } catch let refused as WebSocketRefusedError {
            let reason = switch refused.status {
            case 400?: "the provider refused the login: the device's clock is off (Invalid Date Stamp)"
            case 401?: "the provider refused the login: no credentials"
            case let status?: "the provider refused the login (\(status))"
            case nil: "the provider refused the login"
            }
            throw ChipsError.loginRefused(reason)
        }
    }

    static func webSocketURL(_ account: ChipsKeychain.Account, query: [(String, String)]) throws -> URL {
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let encoded = query.map { name, value in name + "=" + (value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value) }.joined(separator: "&")
        let host = account.host.contains(":") ? "[\(account.host)]" : account.host
        guard let url = URL(string: "\(account.secure ? "wss" : "ws")://\(host):\(account.port)/?\(encoded)") else {
            throw ChipsError.invalidTicket("the provider's address is not valid")
        }
        return url
    }

    /// The login's `db` parameter: base64url of the JSON list of channels to hear notices on —
    /// the user's own, `mu_<user>`. A provider sends notices only on the channels a login names.
    static func channels(of user: String) -> String {
        Base64URL.encode(Data(JavaScriptJSON.stringify(.array([.string("mu_" + user)])).utf8))
    }

    static func isLoopback(_ host: String) -> Bool {
        ["localhost", "127.0.0.1", "::1"].contains(host.lowercased()) || host.hasPrefix("127.")
    }

    static func chipsError(_ error: any Error) -> ChipsError {
        if let error = error as? ChipsError { return error }
        if error is CancellationError { return .disconnected }
        return .offline
    }

    // MARK: The socket

    /// Takes a socket into use: a reader that matches responses and hands on pushes, a writer
    /// that sends the queued requests in order, and a sweep that fails requests past their
    /// deadline (one task per connection rather than a timer per request).
    private func adopt(_ socket: any WebSocketConnection) {
        generation += 1
        let generation = generation
        self.socket = socket
        let (queue, outgoing) = AsyncStream<String>.makeStream()
        self.outgoing = outgoing
        wantsConnection = true
        set(.connected)
        Task {
            var failure: (any Error)?
            do {
                for try await text in socket.messages {
                    self.received(text, generation: generation)
                }
            } catch {
                failure = error
            }
            self.dropped(generation: generation, error: failure)
        }
        Task {
            // A send fails only when the socket does; its reader then reports the drop.
            for await text in queue {
                do { try await socket.send(text) } catch { break }
            }
        }
        let tick = max(Duration.milliseconds(10), min(options.requestTimeout / 10, .milliseconds(250)))
        Task {
            while (try? await Task.sleep(for: tick)) != nil, self.expireRequests(generation: generation) {}
        }
    }

    /// Fails requests past their deadline; false once the socket is no longer current.
    private func expireRequests(generation: Int) -> Bool {
        guard generation == self.generation, socket != nil else { return false }
        let now = ContinuousClock.now
        for (id, request) in pending where request.deadline <= now {
            pending[id] = nil
            request.continuation.resume(throwing: ChipsError.timeout)
        }
        return true
    }

    private func dropSocket() async {
        guard let socket else { return }
        self.socket = nil
        outgoing?.finish()
        outgoing = nil
        generation += 1
        failPending(with: .disconnected)
        await socket.close()
    }

    private func dropped(generation: Int, error: (any Error)?) {
        guard generation == self.generation, socket != nil else { return }
        socket = nil
        outgoing?.finish()
        outgoing = nil
        failPending(with: .disconnected)
        set(.disconnected)
        if wantsConnection { scheduleReconnect() }
    }

    private func failPending(with error: ChipsError) {
        let waiting = pending
        pending.removeAll()
        for request in waiting.values { request.continuation.resume(throwing: error) }
    }

    private func scheduleReconnect() {
        guard reconnectTask == nil else { return }
        reconnectTask = Task {
            var attempt = 0
            while !Task.isCancelled {
                attempt += 1
                do {
                    try await sleeper.sleep(options.reconnect.delay(afterAttempt: attempt))
                } catch {
                    return
                }
                guard await self.reconnectOnce() else { return }
            }
        }
    }

    /// One attempt; returns whether to try again.
    private func reconnectOnce() async -> Bool {
        guard wantsConnection, socket == nil, !Task.isCancelled else {
            reconnectTask = nil
            return false
        }
        set(.connecting)
        do {
            let socket = try await openBySignature()
            guard wantsConnection, !Task.isCancelled else {
                await socket.close()
                reconnectTask = nil
                return false
            }
            reconnectTask = nil
            adopt(socket)
            return false
        } catch {
            let failure = Self.chipsError(error)
            if failure.kind == .loginRefused || failure.kind == .notLoggedIn {
                wantsConnection = false
                reconnectTask = nil
                set(.failed(failure.message))
                return false
            }
            set(.disconnected)
            return true
        }
    }

    private func received(_ text: String, generation: Int) {
        guard generation == self.generation,
              let value = try? StrictJSON.parse(text.utf8), case .object(let frame) = value else { return }
        if frame["action"] == .string("notify"), frame["id"] == nil || frame["id"] == .null {
            let notification = ChipsNotification(channel: frame["channel"]?.stringValue, data: frame["data"] ?? .null)
            for watcher in notificationWatchers.values { watcher.yield(notification) }
            return
        }
        guard let id = frame["id"]?.int64Value, let continuation = pending.removeValue(forKey: Int(id))?.continuation else { return }
        if let error = frame["error"], !error.isNull {
            continuation.resume(throwing: ChipsError.server(message: error["message"]?.stringValue ?? "the provider refused the request",
                                                            code: error["code"]?.stringValue, detail: error["detail"]?.stringValue))
        } else {
            continuation.resume(returning: frame["data"] ?? .null)
        }
    }

    // MARK: Requests

    /// Sends `{id, view, action, …}` and returns the response's `data`. Throws the provider's
    /// error as ``ChipsError/server(message:code:detail:)``, ``ChipsError/timeout`` when no
    /// answer comes within the request timeout, ``ChipsError/disconnected`` when the connection
    /// is down or drops first.
    public func request(view: String, action: String, _ members: [String: JSONValue] = [:]) async throws -> JSONValue {
        guard socket != nil, let outgoing else { throw ChipsError.disconnected }
        let id = nextID
        nextID += 1
        var frame = members
        frame["id"] = .int(Int64(id))
        frame["view"] = .string(view)
        frame["action"] = .string(action)
        let text = JavaScriptJSON.stringify(.object(frame), sortingKeys: false)
        let deadline = ContinuousClock.now + options.requestTimeout
        return try await withCheckedThrowingContinuation { continuation in
            pending[id] = Pending(continuation: continuation, deadline: deadline)
            outgoing.yield(text)
        }
    }

    /// Requests waiting for an answer.
    public var pendingCount: Int { pending.count }
}

import Foundation
import HTTPTypes

/// Opens websockets. `NIOWebSocketTransport` (PurseHTTPNIO) on Linux and servers,
/// ``URLSessionWebSocketTransport`` on Apple platforms; tests may pass their own.
public protocol WebSocketTransport: Sendable {
    /// Opens a websocket to `url` (`ws` or `wss`) with extra request headers. Throws
    /// ``WebSocketRefusedError`` when the server answers the upgrade with anything but 101, and
    /// ``PurseError/offline`` when it cannot be reached.
    func connect(to url: URL, headerFields: HTTPFields) async throws -> any WebSocketConnection
}

/// An open websocket carrying text messages.
public protocol WebSocketConnection: Sendable {
    /// The text messages received, in order. Ends when the connection closes (normally or not —
    /// it then throws), and only once.
    var messages: AsyncThrowingStream<String, any Error> { get }
    func send(_ text: String) async throws
    /// Closes with a normal closure; pending sends are dropped.
    func close() async
}

/// The server refused the websocket upgrade (a login refused, say). `status` is the HTTP status
/// when the transport learns it (URLSession does; swift-websocket's client does not).
public struct WebSocketRefusedError: Error, Equatable, CustomStringConvertible {
    public var status: Int?
    public init(status: Int?) { self.status = status }
    public var description: String { status.map { "the server refused the websocket upgrade with \($0)" } ?? "the server refused the websocket upgrade" }
}

#if canImport(Darwin)
/// `URLSessionWebSocketTask`: the websocket of Apple platforms.
public struct URLSessionWebSocketTransport: WebSocketTransport {
    let session: URLSession
    let maximumMessageSize: Int

    public init(session: URLSession = .shared, maximumMessageSize: Int = 1 << 20) {
        self.session = session
        self.maximumMessageSize = maximumMessageSize
    }

    public func connect(to url: URL, headerFields: HTTPFields) async throws -> any WebSocketConnection {
        var request = URLRequest(url: url)
        for field in headerFields { request.addValue(field.value, forHTTPHeaderField: field.name.rawName) }
        let task = session.webSocketTask(with: request)
        task.maximumMessageSize = maximumMessageSize
        task.resume()
        // The handshake's outcome shows in the first send: it fails when the upgrade was refused.
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                task.sendPing { error in
                    if let error { continuation.resume(throwing: error) } else { continuation.resume() }
                }
            }
        } catch {
            if let response = task.response as? HTTPURLResponse, response.statusCode != 101 {
                throw WebSocketRefusedError(status: response.statusCode)
            }
            throw PurseError.offline
        }
        return Connection(task: task)
    }

    struct Connection: WebSocketConnection, @unchecked Sendable {
        let task: URLSessionWebSocketTask
        let messages: AsyncThrowingStream<String, any Error>

        init(task: URLSessionWebSocketTask) {
            self.task = task
            messages = AsyncThrowingStream(unfolding: {
                switch try await task.receive() {
                case .string(let text): return text
                case .data(let data): return String(decoding: data, as: UTF8.self)
                @unknown default: return nil
                }
            })
        }

        func send(_ text: String) async throws { try await task.send(.string(text)) }
        func close() async { task.cancel(with: .normalClosure, reason: nil) }
    }
}
#endif

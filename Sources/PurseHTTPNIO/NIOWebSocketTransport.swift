import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NIOWebSocket
import PurseHTTP
import Synchronization
import WSClient

/// Websockets through swift-websocket's client (SwiftNIO): the transport of the client cores on
/// Linux and in the CLI. TLS for `wss` uses the system's trust roots, and the certificates of
/// `trustRootsFile` (a PEM file: a development CA) too when given.
public struct NIOWebSocketTransport: WebSocketTransport {
    let maxMessageBytes: Int
    let tlsConfiguration: TLSConfiguration?
    let logger: Logger

    public init(maxMessageBytes: Int = 1 << 20, logger: Logger = Logger(label: "purse.websocket")) {
        self.maxMessageBytes = maxMessageBytes
        self.tlsConfiguration = nil
        self.logger = logger
    }

    /// Trusts the certificates of `trustRootsFile` (PEM) beside the system's; throws when the
    /// file holds none.
    public init(maxMessageBytes: Int = 1 << 20, trustRootsFile: String, logger: Logger = Logger(label: "purse.websocket")) throws {
        self.maxMessageBytes = maxMessageBytes
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(trustRootsFile))]
        self.tlsConfiguration = tls
        self.logger = logger
    }

    private enum Outgoing: Sendable { case text(String), close }

    public func connect(to url: URL, headerFields: HTTPFields) async throws -> any WebSocketConnection {
        guard let scheme = url.scheme, ["ws", "wss"].contains(scheme) else { throw PurseError.invalidResponse("a websocket URL is ws or wss: \(url)") }
        let configuration = WebSocketClientConfiguration(maxFrameSize: maxMessageBytes, additionalHeaders: headerFields, validateUTF8: true)
        let (incoming, receiver) = AsyncThrowingStream<String, any Error>.makeStream()
        let (outgoing, sender) = AsyncStream<Outgoing>.makeStream()
        let (opened, opener) = AsyncThrowingStream<Void, any Error>.makeStream()
        let maxMessageBytes = maxMessageBytes
        let client = WebSocketClient(url: url.absoluteString, configuration: configuration, tlsConfiguration: tlsConfiguration, logger: logger) { inbound, outbound, _ in
            opener.yield()
            opener.finish()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: maxMessageBytes) {
                        if case .text(let text) = message { receiver.yield(text) }
                    }
                }
                group.addTask {
                    for await item in outgoing {
                        switch item {
                        case .text(let text): try await outbound.write(.text(text))
                        case .close:
                            try await outbound.close(.normalClosure, reason: nil)
                            return
                        }
                    }
                }
                _ = try await group.next()
                group.cancelAll()
            }
        }
        let task = Task {
            do {
                try await client.run()
                receiver.finish()
            } catch {
                receiver.finish(throwing: error)
                opener.finish(throwing: error)
            }
            sender.finish()
        }
        do {
            for try await _ in opened { break }
        } catch let error as WebSocketClientError where error == .webSocketUpgradeFailed {
            throw WebSocketRefusedError(status: nil)
        } catch let error as WebSocketClientError {
            throw PurseError.invalidResponse("websocket: \(error)")
        } catch {
            throw PurseError.offline
        }
        if Task.isCancelled {
            task.cancel()
            throw CancellationError()
        }
        return Connection(messages: incoming, sender: sender, task: task)
    }

    private struct Connection: WebSocketConnection {
        let messages: AsyncThrowingStream<String, any Error>
        let sender: AsyncStream<Outgoing>.Continuation
        let task: Task<Void, Never>

        func send(_ text: String) async throws {
            if case .terminated = sender.yield(.text(text)) { throw PurseError.offline }
        }

        func close() async {
            sender.yield(.close)
            sender.finish()
            // The closing handshake ends the client; a server that does not answer it is cut
            // off by the client's close timeout.
            _ = await task.value
        }
    }
}

import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import PurseHTTP
import Synchronization


/// The last handler of a bench connection's pipeline: it answers the one request in flight.
protocol PendingResponseHandler: ChannelInboundHandler, SendableMetatype {
    associatedtype Response: Sendable
    var pending: EventLoopPromise<Response>? { get set }
}

extension PendingResponseHandler {
    /// Answers the request in flight, if any.
    func succeedPending(_ response: Response) {
        let promise = pending
        pending = nil
        promise?.succeed(response)
    }

    /// Fails the request in flight, if any.
    func failPending(_ error: any Error) {
        let promise = pending
        pending = nil
        promise?.fail(error)
    }

    /// The server closed the connection: the request in flight fails as offline.
    func channelInactive(context: ChannelHandlerContext) {
        failPending(PurseError.offline("connection closed by the server"))
        context.fireChannelInactive()
    }

    /// The connection failed: the request in flight fails as offline, and the channel closes.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failPending(PurseError.offline("connection failed: \(error)"))
        context.close(promise: nil)
    }
}

/// A request was not sent because its connection had closed.
struct BenchChannelClosed: Error {}

/// One persistent keep-alive connection carrying one request at a time — the part both load
/// generators share: connect with `TCP_NODELAY`, write a request on the channel's event loop, wait
/// for the handler at the end of the pipeline to answer it.
struct BenchChannel<Handler: PendingResponseHandler>: Sendable {
    private let channel: any Channel
    private let handler: NIOLoopBound<Handler>

    /// - Parameter pipeline: Adds the connection's handlers and returns the last one.
    static func connect(
        host: String, port: Int, pipeline: @escaping @Sendable (ChannelPipeline.SynchronousOperations) throws -> Handler
    ) async throws -> BenchChannel {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { _ = try pipeline(channel.pipeline.syncOperations) }
            }
            .connect(host: host, port: port).get()
        let handler = try await channel.eventLoop.submit {
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: Handler.self), eventLoop: channel.eventLoop)
        }.get()
        return BenchChannel(channel: channel, handler: handler)
    }

    /// Writes a request with `write` (on the channel's event loop) and returns its response.
    func send(_ write: @escaping @Sendable (any Channel) -> Void) async throws -> Handler.Response {
        let channel = self.channel, handler = self.handler
        return try await channel.eventLoop.flatSubmit { () -> EventLoopFuture<Handler.Response> in
            guard handler.value.pending == nil else {
                return channel.eventLoop.makeFailedFuture(PurseError.invalidResponse("one request at a time per bench connection"))
            }
            // A write to a closed channel is dropped without a word (and its inactivity was
            // already told), so a request on one would wait forever. Nothing was sent: the
            // caller may send it on a new connection.
            guard channel.isActive else {
                return channel.eventLoop.makeFailedFuture(BenchChannelClosed())
            }
            let promise = channel.eventLoop.makePromise(of: Handler.Response.self)
            handler.value.pending = promise
            write(channel)
            return promise.futureResult
        }.get()
    }

    /// Whether the connection is still open (a server may close a kept-alive connection after a
    /// number of requests, as nginx does after 1,000).
    var isActive: Bool { channel.isActive }

    func close() async {
        try? await channel.close()
    }
}

/// A ``BenchChannel`` that opens a new connection when the server has ended the last one (nginx
/// ends a kept-alive connection after 1,000 requests), as any HTTP client does.
final class ReconnectingBenchChannel<Handler: PendingResponseHandler>: Sendable {
    private let current: Mutex<BenchChannel<Handler>>
    private let host: String
    private let port: Int
    private let pipeline: @Sendable (ChannelPipeline.SynchronousOperations) throws -> Handler

    private init(_ channel: BenchChannel<Handler>, host: String, port: Int,
                 pipeline: @escaping @Sendable (ChannelPipeline.SynchronousOperations) throws -> Handler) {
        current = Mutex(channel)
        self.host = host
        self.port = port
        self.pipeline = pipeline
    }

    static func connect(
        host: String, port: Int, pipeline: @escaping @Sendable (ChannelPipeline.SynchronousOperations) throws -> Handler
    ) async throws -> ReconnectingBenchChannel {
        ReconnectingBenchChannel(try await BenchChannel.connect(host: host, port: port, pipeline: pipeline), host: host, port: port, pipeline: pipeline)
    }

    func send(_ write: @escaping @Sendable (any Channel) -> Void) async throws -> Handler.Response {
        let channel = current.withLock { $0 }
        if channel.isActive {
            do {
                return try await channel.send(write)
            } catch is BenchChannelClosed {
                // Closed between the check and the write (the server's last answer had just come):
                // nothing was sent, so it goes on a new connection.
            }
        }
        let fresh = try await BenchChannel.connect(host: host, port: port, pipeline: pipeline)
        current.withLock { $0 = fresh }
        return try await fresh.send(write)
    }

    func close() async {
        await current.withLock { $0 }.close()
    }
}

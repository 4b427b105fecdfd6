import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
@_spi(WSInternal) import WSCore

/// The server's HTTP/1.1 child channel when modules take websocket upgrades: a plain request goes
/// to the router as with `.http1()`; a request asking for `Upgrade: websocket` goes to the
/// endpoint registered for its path, which accepts it or refuses it with its own status and
/// message (Hummingbird's own upgrade channel answers every refusal with an empty 400, which a
/// Wyseman client cannot tell apart from a stale date).
///
/// The frames of an accepted connection are run by swift-websocket's handler — the one under
/// HummingbirdWebSocket — through its `WSInternal` interface, so pings, closing handshakes and
/// fragmented messages follow RFC 6455 as they do in Hummingbird.
struct WebSocketUpgradeChannel: ServerChildChannel, HTTPChannelHandler {
    typealias Session = @Sendable (WebSocketInboundStream, WebSocketOutboundWriter, Logger) async -> Void

    enum UpgradeResult: Sendable {
        case websocket(NIOAsyncChannel<WebSocketFrame, WebSocketFrame>, Session, Logger)
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, HTTPResponse.Status, String)
    }

    struct Value: ServerChildChannelValue {
        let upgradeResult: EventLoopFuture<UpgradeResult>
        let channel: any Channel
    }

    /// What the upgrade decision left for the pipeline to act on, per connection.
    private enum Pending {
        case none
        case session(Session)
        case refusal(HTTPResponse.Status, String)
    }

    let responder: HTTPChannelHandler.Responder
    let endpoints: WebSocketEndpoints
    /// The largest websocket frame read; a message may span several. Beyond it the connection is
    /// closed with 1009, so it bounds what one frame can make the server buffer.
    let maxFrameSize: Int
    let idleTimeout: Duration?
    /// Timeouts and size limits of each connection (``HTTPConnectionGuard``).
    let limits: HTTPServerLimits
    /// The caps on open connections, shared by every connection of the server.
    let connections: ConnectionCounter

    init(responder: @escaping HTTPChannelHandler.Responder, endpoints: WebSocketEndpoints, maxFrameSize: Int = 1 << 20, idleTimeout: Duration? = nil,
         limits: HTTPServerLimits = HTTPServerLimits(), connections: ConnectionCounter? = nil) {
        self.responder = Self.redirectingLateUpgrades(responder)
        self.endpoints = endpoints
        self.maxFrameSize = maxFrameSize
        self.idleTimeout = idleTimeout
        self.limits = limits
        self.connections = connections ?? ConnectionCounter(limits: limits)
    }

    /// The answer to a connection beyond a cap: written on the raw socket, then closed.
    static let overCapacity = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: 45\r\n\r\n{\"error\":\"Too many connections; retry shortly\"}"

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let peer = channel.remoteAddress?.ipAddress
        guard connections.open(peer: peer) else {
            logger.debug("refusing a connection beyond the caps", metadata: ["connections": "\(connections.open)"])
            channel.writeAndFlush(ByteBuffer(string: Self.overCapacity)).whenComplete { _ in channel.close(promise: nil) }
            // `handle` finds no request on it and returns.
            return channel.eventLoop.makeSucceededFuture(Value(upgradeResult: channel.eventLoop.makeFailedFuture(ChannelError.inputClosed), channel: channel))
        }
        let connections = connections
        channel.closeFuture.whenComplete { _ in connections.close(peer: peer) }
        let limits = limits
        return channel.eventLoop.makeCompletedFuture {
            let limiter = RequestHeadLimiter(limits: limits)
            let guardHandler = HTTPConnectionGuard(limits: limits, limiter: limiter, logger: logger)
            try channel.pipeline.syncOperations.addHandler(limiter)
            let pending = NIOLoopBoundBox(Pending.none, eventLoop: channel.eventLoop)
            let endpoints = endpoints
            let upgrader = NIOTypedWebSocketServerUpgrader<UpgradeResult>(
                maxFrameSize: maxFrameSize,
                shouldUpgrade: { channel, head in
                    let request = WebSocketUpgradeRequest(uri: head.uri, headerFields: HTTPFields(head.headers.compactMap { header in
                        HTTPField.Name(header.name).map { HTTPField(name: $0, value: header.value) }
                    }),
                                                          remoteAddress: channel.remoteAddress)
                    let promise = channel.eventLoop.makePromise(of: WebSocketUpgradeDecision.self)
                    promise.completeWithTask {
                        await endpoints.decide(request)
                    }
                    return promise.futureResult.map { decision -> HTTPHeaders? in
                        switch decision {
                        case .accept(let session):
                            pending.value = .session(session)
                            return HTTPHeaders()
                        case .refuse(let status, let message):
                            pending.value = .refusal(status, message)
                            return nil
                        }
                    }
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        guard case .session(let session) = pending.value else { throw ChannelError.inappropriateOperationForState }
                        // A websocket keeps its own pings and frame limits; the HTTP clocks end here.
                        channel.pipeline.syncOperations.removeHandler(guardHandler, promise: nil)
                        channel.pipeline.syncOperations.removeHandler(limiter, promise: nil)
                        let asyncChannel = try NIOAsyncChannel<WebSocketFrame, WebSocketFrame>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true)
                        )
                        return UpgradeResult.websocket(asyncChannel, session, logger)
                    }
                }
            )
            let idleTimeout = idleTimeout
            let upgradeConfiguration = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try channel.pipeline.syncOperations.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: idleTimeout, logger: logger)
                        )
                        let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true)
                        )
                        if case .refusal(let status, let message) = pending.value {
                            return UpgradeResult.refused(asyncChannel, status, message)
                        }
                        return UpgradeResult.http(asyncChannel)
                    }
                }
            )
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<UpgradeResult>(upgradeConfiguration: upgradeConfiguration)
            configuration.enablePipelining = false
            configuration.enableErrorHandling = false
            configuration.enableResponseHeaderValidation = false
            let result = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(guardHandler, position: .after(decoder))
            return Value(upgradeResult: result, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgradeResult.get() {
            case .http(let channel):
                await handleHTTP(asyncChannel: channel, logger: logger)
            case .refused(let channel, let status, let message):
                await Self.refuse(channel, status: status, message: message, logger: logger)
            case .websocket(let channel, let session, let logger):
                do {
                    _ = try await WebSocketHandler.handle(
                        type: .server,
                        configuration: .init(extensions: [], autoPing: .enabled(timePeriod: .seconds(30)), validateUTF8: true, maxFrameSize: maxFrameSize),
                        asyncChannel: channel,
                        context: SessionContext(logger: logger)
                    ) { inbound, outbound, context in
                        await session(inbound, outbound, context.logger)
                    }
                } catch {
                    logger.debug("websocket ended", metadata: ["error.type": "\(type(of: error))"])
                }
            }
        } catch {
            logger.debug("upgrade failed", metadata: ["error.type": "\(type(of: error))"])
        }
    }

    private struct SessionContext: WebSocketContext {
        let logger: Logger
    }

    /// The refusal's status with its message as a `text/plain` body, and the connection closed.
    private static func refuse(_ channel: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, status: HTTPResponse.Status, message: String, logger: Logger) async {
        do {
            try await channel.executeThenClose { _, outbound in
                let body = ByteBuffer(string: message)
                let head = HTTPResponse(status: status, headerFields: [
                    .connection: "close", .contentType: "text/plain; charset=utf-8", .contentLength: String(body.readableBytes),
                ])
                try await outbound.write(contentsOf: [.head(head), .body(body), .end(nil)])
            }
        } catch {
            logger.trace("could not write the refusal", metadata: ["error.type": "\(type(of: error))"])
        }
    }

    /// An upgrade asked for on a connection that has already served a request reaches the HTTP
    /// responder (NIO decides on upgrades only for a connection's first request): it is sent to
    /// the same URL again with the connection closed, so that it arrives first on a new one.
    private static func redirectingLateUpgrades(_ responder: @escaping HTTPChannelHandler.Responder) -> HTTPChannelHandler.Responder {
        { request, writer, channel in
            if request.headers[.upgrade]?.lowercased() == "websocket" {
                var target = request.uri.path
                if let query = request.uri.query { target += "?" + query }
                try await writer.writeResponse(HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: target]))
                throw ChannelError.outputClosed
            }
            try await responder(request, writer, channel)
        }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1.1 with websocket upgrades for the endpoints in `endpoints`.
    static func http1(webSockets endpoints: WebSocketEndpoints, limits: HTTPServerLimits, connections: ConnectionCounter) -> HTTPServerBuilder {
        .init { responder in WebSocketUpgradeChannel(responder: responder, endpoints: endpoints, limits: limits, connections: connections) }
    }
}

import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import PurseKit

/// One persistent HTTP/1.1 keep-alive connection used by one benchmark user, one request at a time.
///
/// The load generator shares the machine with the server, so it should cost as little as a tool
/// like `wrk`: no connection pool, redirects, tracing or decompression — a request written, a
/// response read. The client core above it (``APIClient``, `NexusClient`, the authenticator's
/// signatures) is unchanged, so a flow still does the work a phone does.
final class BenchConnection: HTTPTransport {
    private let channel: any Channel
    private let collector: NIOLoopBound<ResponseCollector>
    private let host: String

    private init(channel: any Channel, collector: NIOLoopBound<ResponseCollector>, host: String) {
        self.channel = channel
        self.collector = collector
        self.host = host
    }

    static func connect(host: String, port: Int) async throws -> BenchConnection {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(ResponseCollector())
                }
            }
            .connect(host: host, port: port).get()
        let collector = try await channel.eventLoop.submit {
            NIOLoopBound(try channel.pipeline.syncOperations.handler(type: ResponseCollector.self), eventLoop: channel.eventLoop)
        }.get()
        return BenchConnection(channel: channel, collector: collector, host: "\(host):\(port)")
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var target = request.url.path
        if let query = request.url.query { target += "?" + query }
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method), uri: target)
        head.headers.add(name: "Host", value: host)
        for (name, value) in request.headers { head.headers.replaceOrAdd(name: name, value: value) }
        let body = request.body.map { ByteBuffer(bytes: $0) }
        head.headers.replaceOrAdd(name: "Content-Length", value: String(body?.readableBytes ?? 0))

        let channel = self.channel, collector = self.collector, requestHead = head
        return try await channel.eventLoop.flatSubmit { () -> EventLoopFuture<TransportResponse> in
            let promise = channel.eventLoop.makePromise(of: TransportResponse.self)
            guard collector.value.pending == nil else {
                return channel.eventLoop.makeFailedFuture(PurseError.invalidResponse("one request at a time per bench connection"))
            }
            collector.value.pending = promise
            channel.write(HTTPClientRequestPart.head(requestHead), promise: nil)
            if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
            return promise.futureResult
        }.get()
    }

    func close() async {
        try? await channel.close()
    }
}

/// Collects one response at a time into a ``TransportResponse``; lives on the channel's loop.
private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    var pending: EventLoopPromise<TransportResponse>?
    private var status = 0
    private var headers: [String: String] = [:]
    private var body = ByteBuffer()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = Int(head.status.code)
            headers = [:]
            for header in head.headers { headers[header.name] = header.value }
            body.clear()
        case .body(var chunk):
            body.writeBuffer(&chunk)
        case .end:
            let response = TransportResponse(status: status, headers: headers, body: Data(body.readableBytesView))
            let promise = pending
            pending = nil
            promise?.succeed(response)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(PurseError.offline("connection closed by the server"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(PurseError.offline("connection failed: \(error)"))
        context.close(promise: nil)
    }

    private func fail(_ error: PurseError) {
        let promise = pending
        pending = nil
        promise?.fail(error)
    }
}

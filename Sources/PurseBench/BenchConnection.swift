import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import NIOPosix
import PurseHTTP

/// One persistent HTTP/1.1 keep-alive connection used by one benchmark user, one request at a time.
///
/// The load generator shares the machine with the server, so it should cost as little as a tool
/// like `wrk`: no connection pool, redirects, tracing or decompression — a request written, a
/// response read. The client core above it (``APIClient``, `NexusClient`, the authenticator's
/// signatures) is unchanged, so a flow still does the work a phone does.
final class BenchConnection: HTTPTransport {
    private let link: ReconnectingBenchChannel<ResponseCollector>
    private let host: String

    private init(link: ReconnectingBenchChannel<ResponseCollector>, host: String) {
        self.link = link
        self.host = host
    }

    static func connect(host: String, port: Int) async throws -> BenchConnection {
        let link = try await ReconnectingBenchChannel.connect(host: host, port: port) { pipeline in
            try pipeline.addHTTPClientHandlers()
            let collector = ResponseCollector()
            try pipeline.addHandler(collector)
            return collector
        }
        return BenchConnection(link: link, host: "\(host):\(port)")
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        var target = request.url.path
        if let query = request.url.query { target += "?" + query }
        var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue), uri: target)
        head.headers.add(name: "Host", value: host)
        for field in request.headerFields { head.headers.add(name: field.name.rawName, value: field.value) }
        let body = request.body.map { ByteBuffer(bytes: $0) }
        head.headers.replaceOrAdd(name: "Content-Length", value: String(body?.readableBytes ?? 0))

        let requestHead = head
        return try await link.send { channel in
            channel.write(HTTPClientRequestPart.head(requestHead), promise: nil)
            if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(body)), promise: nil) }
            channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        }
    }

    func close() async {
        await link.close()
    }
}

/// Collects one response at a time into a ``TransportResponse``; lives on the channel's loop.
private final class ResponseCollector: PendingResponseHandler {
    typealias InboundIn = HTTPClientResponsePart

    var pending: EventLoopPromise<TransportResponse>?
    private var status: HTTPResponse.Status = .ok
    private var headerFields = HTTPFields()
    private var body = ByteBuffer()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = HTTPResponse.Status(wireCode: Int(head.status.code)) ?? .badGateway
            headerFields = HTTPFields(head.headers, splitCookie: false)
            body.clear()
        case .body(var chunk):
            body.writeBuffer(&chunk)
        case .end:
            succeedPending(TransportResponse(status: status, headerFields: headerFields, body: Data(body.readableBytesView)))
            // The server's last response on this connection: close it now (once answered), so
            // that the next request opens a new one instead of racing the server's close.
            if headerFields[.connection]?.lowercased() == "close" {
                context.close(promise: nil)
            }
        }
    }
}

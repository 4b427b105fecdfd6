import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// What one HTTP/1.1 connection may take from the server (`purse serve`'s settings, see
/// ``PurseConfiguration/httpLimits``). The defaults are safe for a server on the open internet
/// and roomy for every client of ours; docs/deploy.md sets them beside nginx's.
public struct HTTPServerLimits: Sendable, Equatable {
    /// A new connection's first request head must be complete within this.
    public var headerTimeout: Duration = .seconds(10)
    /// A kept-alive connection with no request in flight is closed after this. Longer than
    /// nginx's upstream keep-alive (60 s), so the proxy closes first and never reuses a
    /// connection just as it closes here.
    public var idleTimeout: Duration = .seconds(75)
    /// A request body must keep arriving: this long without a byte of it ends the connection.
    public var bodyTimeout: Duration = .seconds(30)
    /// The request line (`GET /path?query HTTP/1.1`) at most this many bytes, else 414.
    public var maxRequestLine: Int = 8 << 10
    /// The whole request head at most this many bytes, else 431.
    public var maxHeaderBytes: Int = 32 << 10
    /// Open connections at once, in all; beyond it a new one is answered 503 and closed. Below the
    /// process's descriptor limit, so the database and outbound calls always have descriptors.
    public var maxConnections: Int = 10_000
    /// Open connections at once from one peer address (a trusted proxy is not capped).
    public var maxConnectionsPerPeer: Int = 512

    public init() {}
}

/// Counts open connections, in all and per peer, for ``HTTPServerLimits``'s caps.
public final class ConnectionCounter: Sendable {
    private let counts = NIOLockedValueBox<(total: Int, byPeer: [String: Int])>((0, [:]))
    let limits: HTTPServerLimits
    let exempt: Set<String>

    public init(limits: HTTPServerLimits, exempt: Set<String> = []) {
        self.limits = limits
        self.exempt = exempt
    }

    /// Takes a place for a connection from `peer`; false when a cap is reached (nothing taken).
    func open(peer: String?) -> Bool {
        counts.withLockedValue { counts in
            guard counts.total < limits.maxConnections else { return false }
            if let peer, !exempt.contains(peer) {
                let current = counts.byPeer[peer, default: 0]
                guard current < limits.maxConnectionsPerPeer else { return false }
                counts.byPeer[peer] = current + 1
            }
            counts.total += 1
            return true
        }
    }

    func close(peer: String?) {
        counts.withLockedValue { counts in
            counts.total -= 1
            if let peer, !exempt.contains(peer), let current = counts.byPeer[peer] {
                counts.byPeer[peer] = current > 1 ? current - 1 : nil
            }
        }
    }

    /// Connections open now.
    public var open: Int { counts.withLockedValue { $0.total } }
}

/// Why a request head was refused before it reached the HTTP parser.
enum RequestHeadRefusal: Error {
    case requestLineTooLong
    case headersTooLarge
}

/// First in the pipeline, on raw bytes: measures each request's line and head against
/// ``HTTPServerLimits`` before the HTTP parser buffers them. Past a limit it stops reading the
/// connection and raises ``RequestHeadRefusal`` for ``HTTPConnectionGuard`` to answer.
/// Between a head's end and the guard's word that the request is over, bytes pass uncounted.
final class RequestHeadLimiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private enum State {
        case head(line: Int, lineDone: Bool, total: Int, blankRun: Int)
        case body
        case refused
    }

    private let limits: HTTPServerLimits
    private var state = State.head(line: 0, lineDone: false, total: 0, blankRun: 0)

    init(limits: HTTPServerLimits) { self.limits = limits }

    /// Whether some bytes of a request head have come and its end has not.
    var hasPartialHead: Bool {
        if case .head(_, _, let total, _) = state { return total > 0 }
        return false
    }

    /// The guard's word that a request has ended: the next bytes are a new head.
    func expectNewRequest() {
        if case .body = state { state = .head(line: 0, lineDone: false, total: 0, blankRun: 0) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard case .head(var line, var lineDone, var total, var blankRun) = state else {
            if case .body = state { context.fireChannelRead(data) }
            return
        }
        var refusal: RequestHeadRefusal?
        var headEnded = false
        buffer.withUnsafeReadableBytes { bytes in
            for byte in bytes {
                // CR and LF before a request line are ignored (RFC 9112 §2.2), not counted.
                if !lineDone, line == 0, byte == 13 || byte == 10 { continue }
                total += 1
                if !lineDone {
                    if byte == 10 { lineDone = true } else { line += 1 }
                    if line > limits.maxRequestLine { refusal = .requestLineTooLong; return }
                }
                if total > limits.maxHeaderBytes { refusal = .headersTooLarge; return }
                if lineDone {
                    // The head ends at an empty line: LF (CR) LF.
                    if byte == 10 {
                        blankRun += 1
                        if blankRun == 2 { headEnded = true; return }
                    } else if byte != 13 {
                        blankRun = 0
                    }
                }
            }
        }
        if let refusal {
            state = .refused
            context.fireErrorCaught(refusal)
            return
        }
        state = headEnded ? .body : .head(line: line, lineDone: lineDone, total: total, blankRun: blankRun)
        context.fireChannelRead(data)
    }
}

/// After the HTTP parser: holds a connection to ``HTTPServerLimits``'s clocks and answers the
/// requests the parser or ``RequestHeadLimiter`` refused.
///
/// - A request head must arrive within `headerTimeout` of the connection opening, and within
///   `idleTimeout` of the previous response's end; else 408 (when bytes of it came) and close.
/// - Between a head and its end, `bodyTimeout` without a byte: 408 and close.
/// - A framing error (both `Content-Length` and `Transfer-Encoding`, a bare CR, an unknown
///   method or version): 400 and close; a request line or head past its limit: 414 or 431 and close;
///   an HTTP version other than 1.0 and 1.1: 505 and close.
final class HTTPConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let limits: HTTPServerLimits
    private let limiter: RequestHeadLimiter
    private let logger: Logger
    private var timer: Scheduled<Void>?
    private var responding = false
    private var inRequest = false
    /// The current request's response has been sent (before its body was all read, say).
    private var answered = false
    private var refused = false

    init(limits: HTTPServerLimits, limiter: RequestHeadLimiter, logger: Logger) {
        self.limits = limits
        self.limiter = limiter
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context, after: limits.headerTimeout, reason: "request head") }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context, after: limits.headerTimeout, reason: "request head")
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            guard head.version.major == 1, head.version.minor <= 1 else {
                refuse(context, status: .httpVersionNotSupported, reason: "HTTP version \(head.version)")
                return
            }
            inRequest = true
            answered = false
            arm(context, after: limits.bodyTimeout, reason: "request body")
        case .body:
            arm(context, after: limits.bodyTimeout, reason: "request body")
        case .end:
            inRequest = false
            timer?.cancel()
            timer = nil
            limiter.expectNewRequest()
            // Answered before its body was all read: the connection now waits for the next request.
            if answered { arm(context, after: limits.idleTimeout, reason: "next request") }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code >= 200:
            responding = true
        case .end:
            responding = false
            answered = true
            // The next request's head has `idleTimeout` to arrive (unless this one is still
            // being sent, which its body clock watches).
            if !inRequest { arm(context, after: limits.idleTimeout, reason: "next request") }
        default:
            break
        }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case RequestHeadRefusal.requestLineTooLong:
            refuse(context, status: .uriTooLong, reason: "request line too long")
        case RequestHeadRefusal.headersTooLarge, HTTPParserError.headerOverflow:
            refuse(context, status: .requestHeaderFieldsTooLarge, reason: "request head too large")
        case is HTTPParserError:
            refuse(context, status: .badRequest, reason: "malformed request: \(error)")
        default:
            context.fireErrorCaught(error)
        }
    }

    /// (Re)starts the connection's one clock: when it runs out, the connection is answered 408
    /// (if a request is partly read and no response started) and closed.
    private func arm(_ context: ChannelHandlerContext, after delay: Duration, reason: String) {
        timer?.cancel()
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: TimeAmount(delay)) {
            let (handler, context) = loopBound.value
            handler.timer = nil
            handler.logger.debug("closing a connection: no \(reason) in time")
            if handler.inRequest || handler.limiter.hasPartialHead {
                handler.refuse(context, status: .requestTimeout, reason: reason + " timed out")
            } else {
                context.close(promise: nil)
            }
        }
    }

    /// Answers `status` with `Connection: close` (unless a response has begun) and closes.
    private func refuse(_ context: ChannelHandlerContext, status: HTTPResponseStatus, reason: String) {
        guard !refused else { return }
        refused = true
        timer?.cancel()
        timer = nil
        logger.debug("refusing a request", metadata: ["status": "\(status.code)", "reason": "\(reason)"])
        guard !responding, context.channel.isActive else {
            context.close(promise: nil)
            return
        }
        let body = #"{"error":"\#(status.reasonPhrase)"}"#
        let head = HTTPResponseHead(version: .http1_1, status: status, headers: HTTPHeaders([
            ("Connection", "close"), ("Content-Type", "application/json"), ("Content-Length", String(body.utf8.count)),
        ]))
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
    }
}

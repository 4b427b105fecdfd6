#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
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
    /// A request body's deadline: it must be complete within this of its head, plus a second for
    /// every ``minBodyBytesPerSecond`` bytes that came. A body sent a byte at a time never
    /// earns more time than it pays for.
    public var bodyTimeout: Duration = .seconds(30)
    /// The average rate a long body must keep up, past ``bodyTimeout``.
    public var minBodyBytesPerSecond: Int = 1024
    /// The request line (`GET /path?query HTTP/1.1`) at most this many bytes, else 414.
    public var maxRequestLine: Int = 8 << 10
    /// The whole request head at most this many bytes, else 431.
    public var maxHeaderBytes: Int = 32 << 10
    /// Open connections at once, in all; beyond it a new one is answered 503 and closed. Below the
    /// process's descriptor limit, so the database and outbound calls always have descriptors.
    public var maxConnections: Int = 10_000
    /// Open connections at once from one network — an IPv4 /24 or an IPv6 /64, what one party
    /// usually holds (a trusted proxy is not capped).
    public var maxConnectionsPerPeer: Int = 512
    /// Places kept for networks that have no connection open: once fewer than these are free,
    /// only a network without a connection is admitted, so a few networks holding many
    /// connections never shut everyone else out.
    public var reservedConnections: Int { max(1, maxConnections / 10) }

    public init() {}
}

/// Counts open connections, in all and per network, for ``HTTPServerLimits``'s caps.
public final class ConnectionCounter: Sendable {
    private let counts = NIOLockedValueBox<(total: Int, byNetwork: [String: Int])>((0, [:]))
    let limits: HTTPServerLimits
    let exempt: Set<String>

    public init(limits: HTTPServerLimits, exempt: Set<String> = []) {
        self.limits = limits
        self.exempt = exempt
    }

    /// Takes a place for a connection from `peer`; false when a cap is reached (nothing taken).
    func open(peer: String?) -> Bool {
        let network = peer.flatMap { exempt.contains($0) ? nil : Self.network(of: $0) }
        return counts.withLockedValue { counts in
            guard counts.total < limits.maxConnections else { return false }
            if let network {
                let current = counts.byNetwork[network, default: 0]
                guard current < limits.maxConnectionsPerPeer else { return false }
                // The last places go only to networks with nothing open.
                guard current == 0 || counts.total < limits.maxConnections - limits.reservedConnections else { return false }
                counts.byNetwork[network] = current + 1
            }
            counts.total += 1
            return true
        }
    }

    func close(peer: String?) {
        let network = peer.flatMap { exempt.contains($0) ? nil : Self.network(of: $0) }
        counts.withLockedValue { counts in
            counts.total -= 1
            if let network, let current = counts.byNetwork[network] {
                counts.byNetwork[network] = current > 1 ? current - 1 : nil
            }
        }
    }

    /// The network a peer address is counted under: its IPv4 /24 (`203.0.113.0/24`), its IPv6
    /// /64, an IPv4-mapped IPv6 address as its IPv4 one; anything unparsed as itself.
    static func network(of address: String) -> String {
        var v4 = in_addr()
        if inet_pton(AF_INET, address, &v4) == 1 { return ipv4Network(v4) }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, address, &v6) == 1 else { return address }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return "\(bytes[12]).\(bytes[13]).\(bytes[14]).0/24"
        }
        return stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":") + "::/64"
    }

    private static func ipv4Network(_ address: in_addr) -> String {
        var address = address
        let bytes = withUnsafeBytes(of: &address) { Array($0) }
        return "\(bytes[0]).\(bytes[1]).\(bytes[2]).0/24"
    }

    /// Connections open now.
    public var open: Int { counts.withLockedValue { $0.total } }
}

/// Why a request head was refused before it reached the HTTP parser.
enum RequestHeadRefusal: Error {
    case requestLineTooLong
    case headersTooLarge
}

/// ``RequestHeadLimiter``'s word to ``HTTPConnectionGuard`` that the first byte of a request head
/// came: from then on the head has the head deadline, whatever clock was running.
struct RequestHeadStarted: Sendable {}

/// First in the pipeline, on raw bytes: measures each request's line and head against
/// ``HTTPServerLimits`` before the HTTP parser buffers them. Past a limit it stops reading the
/// connection and raises ``RequestHeadRefusal`` for ``HTTPConnectionGuard`` to answer.
/// Between a head's end and the guard's word that the request is over, bytes pass uncounted.
final class RequestHeadLimiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private enum State {
        case head(line: Int, lineDone: Bool, total: Int, blankRun: Int)
        /// After a head: bytes pass uncounted. `passed` says some did (a body, or a pipelined
        /// next request), so where the next head starts is not known here.
        case body(passed: Bool)
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

    /// The guard's word that a request has ended: the next bytes are a new head. When bytes
    /// passed since the last head ended, the next head may have begun among them, and what comes
    /// now may be its header lines: it is measured as a head only (`maxHeaderBytes`), never as a
    /// request line, so a long header of a pipelined request is not taken for a long request line.
    func expectNewRequest() {
        if case .body(let passed) = state { state = .head(line: 0, lineDone: passed, total: 0, blankRun: 0) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard case .head(var line, var lineDone, var total, var blankRun) = state else {
            if case .body = state {
                if buffer.readableBytes > 0 { state = .body(passed: true) }
                context.fireChannelRead(data)
            }
            return
        }
        var refusal: RequestHeadRefusal?
        var headEnded = false
        var rest = 0
        let wasEmpty = total == 0
        buffer.withUnsafeReadableBytes { bytes in
            for (index, byte) in bytes.enumerated() {
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
                        if blankRun == 2 { headEnded = true; rest = bytes.count - index - 1; return }
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
        state = headEnded ? .body(passed: rest > 0) : .head(line: line, lineDone: lineDone, total: total, blankRun: blankRun)
        if wasEmpty, total > 0 { context.fireUserInboundEventTriggered(RequestHeadStarted()) }
        context.fireChannelRead(data)
    }
}

/// After the HTTP parser: holds a connection to ``HTTPServerLimits``'s clocks and answers the
/// requests the parser or ``RequestHeadLimiter`` refused.
///
/// - A request head must start within `headerTimeout` of the connection opening, or within
///   `idleTimeout` of the previous response's end; once its first byte came, it must be complete
///   within `headerTimeout` of that byte; else 408 (when bytes of it came) and close.
/// - A body must be complete within `bodyTimeout` of its head, plus a second for every
///   `minBodyBytesPerSecond` bytes that came: a trickle gets no more time than it pays for.
/// - An HTTP/1.1 request without exactly one `Host` (an HTTP/1.0 one with two): 400 and close.
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
    /// The clock runs for the next request's head to start (the idle one).
    private var awaitingHead = false
    /// When the current request's head came, and how many body bytes came since.
    private var bodyStart: NIODeadline = .now()
    private var bodyBytes = 0

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
            // RFC 9112 §3.2: a server answers 400 to an HTTP/1.1 request without a Host, and to
            // any with more than one.
            let hosts = head.headers[canonicalForm: "Host"].count
            guard hosts == 1 || (hosts == 0 && head.version.minor == 0) else {
                refuse(context, status: .badRequest, reason: hosts == 0 ? "no Host" : "\(hosts) Host fields")
                return
            }
            inRequest = true
            answered = false
            bodyStart = .now()
            bodyBytes = 0
            arm(context, after: limits.bodyTimeout, reason: "request body")
        case .body(let part):
            bodyBytes += part.readableBytes
            let earned = Int64(bodyBytes / max(1, limits.minBodyBytesPerSecond))
            let deadline = bodyStart + TimeAmount(limits.bodyTimeout) + .seconds(earned)
            arm(context, after: Duration.nanoseconds(max(0, (deadline - .now()).nanoseconds)), reason: "request body")
        case .end:
            inRequest = false
            timer?.cancel()
            timer = nil
            limiter.expectNewRequest()
            // Answered before its body was all read: the connection now waits for the next request.
            if answered { armForNextRequest(context) }
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
            if !inRequest { armForNextRequest(context) }
        default:
            break
        }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is RequestHeadStarted {
            // The next request's first byte: its head now has the head deadline, not the idle one.
            if awaitingHead, !inRequest { arm(context, after: limits.headerTimeout, reason: "request head") }
            return
        }
        context.fireUserInboundEventTriggered(event)
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

    /// The clock between requests: the idle one, or the head one when the next head has begun
    /// (a client that pipelines sends it before this answer ends).
    private func armForNextRequest(_ context: ChannelHandlerContext) {
        if limiter.hasPartialHead {
            arm(context, after: limits.headerTimeout, reason: "request head")
        } else {
            arm(context, after: limits.idleTimeout, reason: "next request")
        }
    }

    /// (Re)starts the connection's one clock: when it runs out, the connection is answered 408
    /// (if a request is partly read and no response started) and closed.
    private func arm(_ context: ChannelHandlerContext, after delay: Duration, reason: String) {
        timer?.cancel()
        awaitingHead = reason == "next request"
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

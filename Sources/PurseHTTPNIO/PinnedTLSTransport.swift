import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import NIOPosix
import NIOSSL
import NIOTLS
import PurseHTTP
import Synchronization

/// An HTTPS transport that pins: NIOSSL (OpenSSL) validates the server's chain and host name as
/// usual, then `acceptChain` is asked about the chain it validated (DER, leaf first); only when
/// it accepts does the request go out. A refused chain fails with `CertificatePinningError` and
/// nothing is sent after the handshake.
///
/// AsyncHTTPClient gives no hook into its handshakes, so this transport makes its own connection
/// per request with NIO's own parts: `NIOSSLClientHandler`, the HTTP/1.1 client codec and
/// response aggregator.
public struct PinnedTLSTransport: HTTPTransport {
    let tls: TLSConfiguration
    let acceptChain: @Sendable ([[UInt8]]) -> Bool
    let maxResponseBytes: Int
    let group: any EventLoopGroup

    /// - Parameters:
    ///   - tls: trust roots and protocol settings (the system's roots by default).
    ///   - acceptChain: given the validated chain's certificates (DER, leaf first), whether the pins accept it.
    public init(tls: TLSConfiguration = .makeClientConfiguration(), maxResponseBytes: Int = 16 << 20,
                group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, acceptChain: @escaping @Sendable ([[UInt8]]) -> Bool) {
        var tls = tls
        tls.certificateVerification = .fullVerification
        self.tls = tls
        self.acceptChain = acceptChain
        self.maxResponseBytes = maxResponseBytes
        self.group = group
    }

    /// The system's trust roots, and the certificates of a PEM file too when given; TLS 1.3 only
    /// when `requireTLS13`.
    public init(extraTrustRootFile: String?, requireTLS13: Bool = false, acceptChain: @escaping @Sendable ([[UInt8]]) -> Bool) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if requireTLS13 { tls.minimumTLSVersion = .tlsv13 }
        if let extraTrustRootFile {
            tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMFile(extraTrustRootFile))]
        }
        self.init(tls: tls, acceptChain: acceptChain)
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.url.scheme?.lowercased() == "https", let host = request.url.host else {
            throw PurseError.invalidResponse("certificate pinning needs an https URL")
        }
        let port = request.url.port ?? 443
        let context = try NIOSSLContext(configuration: tls)
        let seen = ChainRecorder()
        let (seconds, attoseconds) = request.timeout.components
        let timeout = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        let serverName = Self.isIPAddress(host) ? nil : host

        let channel: NIOAsyncChannel<NIOHTTPClientResponseFull, HTTPClientRequestPart>
        let handshake: EventLoopFuture<Void>
        do {
            (channel, handshake) = try await ClientBootstrap(group: group)
                .connectTimeout(timeout)
                .connect(host: host, port: port) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let handshakeDone = channel.eventLoop.makePromise(of: Void.self)
                        let ssl = try (PerCertificateVerification.self as any ClientHandlerFactory.Type).make(context: context, serverName: serverName) { result, certificate in
                            if result == .certificateVerified, let der = try? certificate.toDERBytes() { seen.add(der) }
                            return result
                        }
                        try channel.pipeline.syncOperations.addHandler(ssl)
                        try channel.pipeline.syncOperations.addHandler(HandshakeWaiter(promise: handshakeDone))
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(NIOHTTPClientResponseAggregator(maxContentLength: maxResponseBytes))
                        return (try NIOAsyncChannel<NIOHTTPClientResponseFull, HTTPClientRequestPart>(wrappingChannelSynchronously: channel), handshakeDone.futureResult)
                    }
                }
        } catch {
            throw PurseError.offline("cannot connect to \(host):\(port): \(error)")
        }
        return try await channel.executeThenClose { inbound, outbound in
            do {
                try await handshake.get()
            } catch {
                throw PurseError.offline("TLS with \(host) failed: \(error)")
            }
            // OpenSSL reports the chain root first; the pins are asked leaf first.
            guard acceptChain(seen.chain.reversed()) else { throw CertificatePinningError(host: host) }
            var head = HTTPRequestHead(version: .http1_1, method: HTTPMethod(rawValue: request.method.rawValue),
                                       uri: request.url.path.isEmpty ? "/" : request.url.path + (request.url.query.map { "?" + $0 } ?? ""))
            head.headers.add(name: "Host", value: port == 443 ? host : "\(host):\(port)")
            for field in request.headerFields { head.headers.add(name: field.name.rawName, value: field.value) }
            head.headers.replaceOrAdd(name: "Connection", value: "close")
            head.headers.replaceOrAdd(name: "Content-Length", value: String(request.body?.count ?? 0))
            try await outbound.write(.head(head))
            if let body = request.body, !body.isEmpty { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
            try await outbound.write(.end(nil))
            var iterator = inbound.makeAsyncIterator()
            guard let response = try await iterator.next() else { throw PurseError.offline("\(host) closed the connection without answering") }
            guard let status = HTTPResponse.Status(wireCode: Int(response.head.status.code)) else {
                throw PurseError.invalidResponse("status \(response.head.status.code) is not an HTTP status")
            }
            return TransportResponse(status: status, headerFields: HTTPFields(response.head.headers, splitCookie: false), body: response.body.map { Data($0.readableBytesView) } ?? Data())
        }
    }

    static func isIPAddress(_ host: String) -> Bool {
        (try? SocketAddress(ipAddress: host, port: 0)) != nil
    }
}

/// The certificates OpenSSL validated, in the order it reported them.
final class ChainRecorder: Sendable {
    private let certificates = Mutex<[[UInt8]]>([])
    func add(_ der: [UInt8]) { certificates.withLock { $0.append(der) } }
    var chain: [[UInt8]] { certificates.withLock { $0 } }
}

/// Fulfils its promise when the TLS handshake completes, fails it when the channel errors first.
/// (Runs on the channel's event loop only.)
final class HandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    let promise: EventLoopPromise<Void>
    private var done = false
    init(promise: EventLoopPromise<Void>) { self.promise = promise }

    private func finish(_ result: Result<Void, any Error>) {
        guard !done else { return }
        done = true
        promise.completeWith(result)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .handshakeCompleted = event as? TLSUserEvent { finish(.success(())) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        finish(.failure(error))
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        finish(.failure(ChannelError.eof))
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        finish(.failure(ChannelError.eof))
    }
}

/// NIOSSL's per-certificate verification callback runs after OpenSSL's own check of each
/// certificate (chain and host name) and sees its result — what pinning on top of normal
/// validation needs. NIOSSL marks it deprecated in favour of callbacks that replace OpenSSL's
/// verification altogether, which pinning must not do; it is reached through this protocol.
protocol ClientHandlerFactory {
    static func make(context: NIOSSLContext, serverName: String?, verify: @escaping NIOSSLVerificationCallback) throws -> NIOSSLClientHandler
}

enum PerCertificateVerification: ClientHandlerFactory {
    @available(*, deprecated)
    static func make(context: NIOSSLContext, serverName: String?, verify: @escaping NIOSSLVerificationCallback) throws -> NIOSSLClientHandler {
        try NIOSSLClientHandler(context: context, serverHostname: serverName, verificationCallback: verify)
    }
}

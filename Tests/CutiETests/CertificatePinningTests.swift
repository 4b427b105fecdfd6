@testable import CutiE
import Crypto
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import SwiftASN1
import Synchronization
import Testing
import X509

/// Certificate pinning against a local TLS server whose certificates the test makes: the chain
/// is validated as usual, then the pins; a refused chain receives no request.
@Suite("Cuti-E: certificate pinning")
struct CertificatePinningTests {
    /// A CA and a server certificate for 127.0.0.1 / localhost.
    struct Chain {
        let caKey: P256.Signing.PrivateKey
        let leafKey: P256.Signing.PrivateKey
        let ca: Certificate
        let leaf: Certificate

        init() throws {
            let caKey = P256.Signing.PrivateKey()
            let leafKey = P256.Signing.PrivateKey()
            self.caKey = caKey
            self.leafKey = leafKey
            let caName = try DistinguishedName { CommonName("Pinning Test CA") }
            let now = Date()
            ca = try Certificate(version: .v3, serialNumber: .init(), publicKey: .init(caKey.publicKey), notValidBefore: now - 3600, notValidAfter: now + 86_400,
                                 issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
                                 extensions: try Certificate.Extensions {
                                     Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                                     Critical(KeyUsage(keyCertSign: true))
                                     SubjectKeyIdentifier(hash: .init(caKey.publicKey))
                                 }, issuerPrivateKey: .init(caKey))
            leaf = try Certificate(version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: now - 3600, notValidAfter: now + 86_400,
                                   issuer: caName, subject: try DistinguishedName { CommonName("localhost") }, signatureAlgorithm: .ecdsaWithSHA256,
                                   extensions: try Certificate.Extensions {
                                       Critical(BasicConstraints.notCertificateAuthority)
                                       Critical(KeyUsage(digitalSignature: true))
                                       try ExtendedKeyUsage([.serverAuth])
                                       SubjectAlternativeNames([.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))])
                                       AuthorityKeyIdentifier(keyIdentifier: SubjectKeyIdentifier(hash: .init(caKey.publicKey)).keyIdentifier)
                                   }, issuerPrivateKey: .init(caKey))
        }

        func der(_ certificate: Certificate) throws -> [UInt8] {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return serializer.serializedBytes
        }

        func nio(_ certificate: Certificate) throws -> NIOSSLCertificate { try NIOSSLCertificate(bytes: try der(certificate), format: .der) }
    }

    /// An HTTPS server on 127.0.0.1 answering every request with `{}`; counts what it received.
    final class Server: Sendable {
        let channel: any Channel
        let counter = Counter()
        var port: Int { channel.localAddress?.port ?? 0 }

        init(chain: Chain, maximumTLSVersion: TLSVersion? = nil) async throws {
            var tls = TLSConfiguration.makeServerConfiguration(certificateChain: [.certificate(try chain.nio(chain.leaf)), .certificate(try chain.nio(chain.ca))],
                                                               privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(chain.leafKey.derRepresentation), format: .der)))
            tls.minimumTLSVersion = .tlsv12
            tls.maximumTLSVersion = maximumTLSVersion
            let context = try NIOSSLContext(configuration: tls)
            let counter = self.counter
            channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                        try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                        try channel.pipeline.syncOperations.addHandler(Responder(counter: counter))
                    }
                }
                .bind(host: "127.0.0.1", port: 0).get()
        }

        var requests: Int { counter.value.withLock { $0 } }

        func close() async { try? await channel.close() }
    }

    final class Counter: Sendable { let value = Mutex(0) }

    final class Responder: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let counter: Counter
        init(counter: Counter) { self.counter = counter }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .end = unwrapInboundIn(data) else { return }
            counter.value.withLock { $0 += 1 }
            var head = HTTPResponseHead(version: .http1_1, status: .ok)
            head.headers.add(name: "Content-Type", value: "application/json")
            head.headers.add(name: "Content-Length", value: "2")
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "{}")))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }

    func transport(_ chain: Chain, pins: Set<String>, trustCA: Bool = true) throws -> PinnedTLSTransport {
        var tls = TLSConfiguration.makeClientConfiguration()
        if trustCA { tls.trustRoots = .certificates([try chain.nio(chain.ca)]) }
        let pinning = CutiECertificatePinning(pins: pins)
        return PinnedTLSTransport(tls: tls) { pinning.accepts(chain: $0) }
    }

    @Test("the pins of Google Trust Services' roots are those of the certificates themselves")
    func gtsPins() throws {
        let url = try #require(Bundle.module.url(forResource: "gts_roots", withExtension: "pem", subdirectory: "Fixtures"))
        let documents = try PEMDocument.parseMultiple(pemString: String(decoding: try Data(contentsOf: url), as: UTF8.self))
        let pins = Set(try documents.map { try CutiECertificatePinning.pin(ofCertificate: $0.derBytes) })
        #expect(pins == CutiECertificatePinning.googleTrustServices)
    }

    @Test("a pinned CA or leaf passes; another pin fails with the dedicated error and the server receives nothing")
    func pinnedAndUnpinned() async throws {
        let chain = try Chain()
        let server = try await Server(chain: chain)
        let url = URL(string: "https://127.0.0.1:\(server.port)/v1/ping")!
        let caPin = try CutiECertificatePinning.pin(ofCertificate: try chain.der(chain.ca))
        let leafPin = try CutiECertificatePinning.pin(ofCertificate: try chain.der(chain.leaf))

        #expect(try await transport(chain, pins: [caPin]).send(TransportRequest(method: .get, url: url)).status == 200)
        #expect(try await transport(chain, pins: [leafPin]).send(TransportRequest(method: .get, url: url)).status == 200)
        #expect(server.requests == 2)

        let elsewhere = Data(SHA256.hash(data: Data("another key".utf8))).base64EncodedString()
        await #expect(throws: CertificatePinningError(host: "127.0.0.1")) {
            _ = try await transport(chain, pins: [elsewhere]).send(TransportRequest(method: .post, url: url, body: Data("secret".utf8)))
        }
        // Pins do not replace validation: an untrusted chain fails the handshake even when pinned.
        await #expect(throws: PurseError.self) {
            _ = try await transport(chain, pins: [caPin], trustCA: false).send(TransportRequest(method: .get, url: url))
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(server.requests == 2)

        // Through the SDK: the dedicated error.
        let cutie = CutiE()
        cutie.configure(appId: "app_sandbox", apiURL: URL(string: "https://127.0.0.1:\(server.port)")!, transport: try transport(chain, pins: [elsewhere]),
                        store: InMemorySecureStore(), preferences: InMemoryPreferences(), retry: RetryPolicy(maxAttempts: 1))
        await #expect(throws: CutiEError.networkError(CertificatePinningError(host: "127.0.0.1"))) {
            _ = try await cutie.getConversations()
        }
        #expect(server.requests == 2)
        await server.close()
    }

    @Test("the CLI's transport (as the Cuti-E SDK connects) refuses a server that offers at most TLS 1.2, and sends nothing")
    func tls13Minimum() async throws {
        let chain = try Chain()
        let old = try await Server(chain: chain, maximumTLSVersion: .tlsv12)
        let modern = try await Server(chain: chain)
        let pem = FileManager.default.temporaryDirectory.appendingPathComponent("pinning-ca-\(UUID().uuidString).pem")
        try PEMDocument(type: "CERTIFICATE", derBytes: try chain.der(chain.ca)).pemString.write(to: pem, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: pem) }
        let caPin = try CutiECertificatePinning.pin(ofCertificate: try chain.der(chain.ca))
        let transport = try PinnedTLSTransport(extraTrustRootFile: pem.path, requireTLS13: true) { CutiECertificatePinning(pins: [caPin]).accepts(chain: $0) }
        #expect(try await transport.send(TransportRequest(method: .get, url: URL(string: "https://127.0.0.1:\(modern.port)/v1/ping")!)).status == 200)
        await #expect(throws: (any Error).self) {
            _ = try await transport.send(TransportRequest(method: .get, url: URL(string: "https://127.0.0.1:\(old.port)/v1/ping")!))
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(old.requests == 0 && modern.requests == 1)
        await old.close()
        await modern.close()
    }
}

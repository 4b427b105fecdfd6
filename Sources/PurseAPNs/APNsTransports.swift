import AsyncHTTPClient
import NIOCore
import NIOSSL
import PurseHTTP
import PurseHTTPNIO
import Synchronization

public enum APNsTransports {
    /// AsyncHTTPClient for APNs: HTTP/2 negotiated by ALPN, with an extra trust root when
    /// configured. One client per trust root for the life of the process, shared by every
    /// service that pushes (a client must be shut down before it goes away, and pushes go on
    /// until the process ends).
    public static func http2(caFile: String?) throws -> any HTTPTransport {
        let client = clients.withLock { clients in
            if let client = clients[caFile ?? ""] { return client }
            var configuration = HTTPClient.Configuration()
            configuration.httpVersion = .automatic
            configuration.timeout.connect = .seconds(10)
            if let caFile {
                var tls = TLSConfiguration.makeClientConfiguration()
                tls.trustRoots = .file(caFile)
                configuration.tlsConfiguration = tls
            }
            let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
            clients[caFile ?? ""] = client
            return client
        }
        return AsyncHTTPClientTransport(client: client, maxResponseBytes: 64 << 10)
    }

    private static let clients = Mutex<[String: HTTPClient]>([:])
}

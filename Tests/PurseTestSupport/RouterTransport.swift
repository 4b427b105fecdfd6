import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PurseHTTP
import Synchronization

/// An ``HTTPTransport`` over Hummingbird's test client, so a client core runs against the
/// in-process router exactly as it would over the network. Counts what it sends.
public final class RouterTransport: HTTPTransport {
    let client: any TestClientProtocol
    private let sent = Mutex<[TransportRequest]>([])

    public init(client: any TestClientProtocol) { self.client = client }

    public var requests: [TransportRequest] { sent.withLock { $0 } }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        sent.withLock { $0.append(request) }
        var uri = request.url.path
        if let query = request.url.query { uri += "?" + query }
        let response = try await client.execute(uri: uri, method: request.method, headers: request.headerFields, body: request.body.map { ByteBuffer(data: $0) })
        return TransportResponse(status: response.status, headerFields: response.headers, body: Data(buffer: response.body))
    }
}

/// A ``RouterTransport`` whose router is known only once the test server runs: a module built
/// before the server (a supplier client calling the in-process sandbox) gets this and the test
/// binds it inside `withRouter`.
public final class DeferredRouterTransport: HTTPTransport {
    private let bound = Mutex<RouterTransport?>(nil)

    public init() {}

    public func bind(_ client: any TestClientProtocol) {
        bound.withLock { $0 = RouterTransport(client: client) }
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard let transport = bound.withLock({ $0 }) else { throw PurseError.offline("no router bound yet") }
        return try await transport.send(request)
    }
}

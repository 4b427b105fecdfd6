import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import PurseHTTP

/// How a service reaches a built-in sandbox (VTpass, Stripe, the Starknet node, APNs) in its own
/// process: the request the real client builds goes through the sandbox's routes as it would
/// arrive over a socket, and the response's status, headers and bytes come back as they would
/// leave — the wire format unchanged, without a connection, a port or an event-loop hop.
///
/// The sandbox mounts its routes on the transport's own router (``init(logger:mount:)``) as well
/// as on the server's, where outside clients (stripe-python, starknet-py, a phone) reach them.
/// Only the path and query of a request's URL are used. The request's timeout is not applied: the
/// sandbox runs in this process, and nothing in it waits on a network.
public struct InProcessTransport: HTTPTransport {
    let responder: RouterResponder<PurseRequestContext>
    let logger: Logger

    /// - Parameters:
    ///   - logger: The requests' logger.
    ///   - mount: Mounts the sandbox's routes; errors they throw become JSON answers as on the
    ///     server (``ErrorMiddleware``).
    public init(logger: Logger, mount: (Router<PurseRequestContext>) -> Void) {
        let router = Router(context: PurseRequestContext.self)
        router.add(middleware: ErrorMiddleware())
        mount(router)
        self.responder = router.buildResponder()
        self.logger = logger
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let method = request.method
        var fields = request.headerFields
        var path = request.url.path.isEmpty ? "/" : request.url.path
        if let query = request.url.query { path += "?" + query }
        let body = request.body ?? Data()
        if !body.isEmpty || method == .post || method == .put || method == .patch { fields[.contentLength] = String(body.count) }
        let head = HTTPRequest(method: method, scheme: request.url.scheme, authority: request.url.host, path: path, headerFields: fields)
        let hummingbirdRequest = Request(head: head, body: RequestBody(buffer: ByteBuffer(data: body)))
        let context = PurseRequestContext(inProcess: logger)
        let response: Response
        do {
            response = try await responder.respond(to: hummingbirdRequest, context: context)
        } catch let error as any HTTPResponseError {
            response = try error.response(from: hummingbirdRequest, context: context)
        }
        let collected = BodyCollector.Bytes()
        try await response.body.write(BodyCollector(bytes: collected))
        return TransportResponse(status: response.status, headerFields: response.headers, body: Data(buffer: collected.buffer))
    }

    /// Gathers a response body's bytes (the body consumes its writer, so they go to a box).
    struct BodyCollector: ResponseBodyWriter {
        final class Bytes {
            var buffer = ByteBuffer()
        }
        let bytes: Bytes

        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            bytes.buffer.writeBuffer(&buffer)
        }
        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}

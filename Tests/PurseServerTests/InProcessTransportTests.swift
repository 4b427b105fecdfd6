import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PurseHTTP
import PurseServer
import Testing

/// The transport every built-in sandbox is reached by in the server's process.
@Suite("In-process transport")
struct InProcessTransportTests {
    let transport = InProcessTransport(logger: Logger(label: "test")) { router in
        router.post("sandbox/echo/{name}") { request, context in
            var request = request
            let body = try await request.collectBody(upTo: 1 << 16)
            let name = try context.parameters.require("name")
            let query = request.uri.query ?? ""
            let header = request.headers[.probe] ?? ""
            return Response(status: .created, headers: [.contentType: "text/plain", .echo: name],
                            body: .init(byteBuffer: ByteBuffer(string: "\(query)|\(header)|" + String(buffer: body))))
        }
        router.get("sandbox/refuse") { _, _ -> Response in throw APIError(.unprocessableContent, "Refused on purpose") }
    }

    @Test("the request's method, path, query, headers and body arrive; the response's come back as sent")
    func roundTrip() async throws {
        let response = try await transport.send(TransportRequest(
            method: .post, url: URL(string: "http://in-process.invalid/sandbox/echo/alpha?x=1&y=%20")!,
            headerFields: [.probe: "p", .contentType: "text/plain"], body: Data("héllo".utf8)))
        #expect(response.status == 201)
        #expect(response.headerFields[.echo] == "alpha")
        #expect(String(decoding: response.body, as: UTF8.self) == "x=1&y=%20|p|héllo")
    }

    @Test("errors are the server's JSON answers: a route's APIError, an unknown path")
    func errors() async throws {
        let refused = try await transport.send(TransportRequest(method: .get, url: URL(string: "http://in-process.invalid/sandbox/refuse")!))
        #expect(refused.status == 422)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("Refused on purpose"))
        let missing = try await transport.send(TransportRequest(method: .get, url: URL(string: "http://in-process.invalid/nowhere")!))
        #expect(missing.status == 404)
        #expect(missing.headerFields[.contentType]?.hasPrefix("application/json") == true)
    }
}

extension HTTPField.Name {
    fileprivate static let probe = HTTPField.Name("X-Probe")!
    fileprivate static let echo = HTTPField.Name("X-Echo")!
}

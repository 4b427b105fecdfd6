import Foundation
import PurseHTTP

/// JSON-RPC to the sandbox node in this process: the same request and response documents as
/// over HTTP, without the socket.
package struct InProcessRPCTransport: HTTPTransport {
    let routes: StarknetRPCRoutes

    package init(routes: StarknetRPCRoutes) { self.routes = routes }

    package func send(_ request: TransportRequest) async throws -> TransportResponse {
        let answer = await routes.answer(request.body ?? Data())
        return TransportResponse(status: 200, headers: ["Content-Type": "application/json"], body: answer)
    }
}

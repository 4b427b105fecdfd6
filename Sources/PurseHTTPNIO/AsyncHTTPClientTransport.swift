import AsyncHTTPClient
import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import PurseHTTP

/// The transport for Linux and the CLI: AsyncHTTPClient.
public struct AsyncHTTPClientTransport: HTTPTransport {
    let client: HTTPClient
    /// Responses larger than this are refused rather than buffered.
    let maxResponseBytes: Int

    /// A process-wide client that fails fast when the server is unreachable (the caller's
    /// ``RetryPolicy`` decides about retries, not the connection pool) and gives up connecting
    /// after 5 seconds.
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public init(client: HTTPClient = AsyncHTTPClientTransport.sharedClient, maxResponseBytes: Int = 16 << 20) {
        self.client = client
        self.maxResponseBytes = maxResponseBytes
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        outgoing.headers = HTTPHeaders(request.headerFields)
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let (seconds, attoseconds) = request.timeout.components
        let timeout = TimeAmount.nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        do {
            let response = try await client.execute(outgoing, timeout: timeout)
            let body = try await response.body.collect(upTo: maxResponseBytes)
            guard let status = HTTPResponse.Status(wireCode: Int(response.status.code)) else {
                throw PurseError.invalidResponse("status \(response.status.code) is not an HTTP status")
            }
            return TransportResponse(status: status, headerFields: HTTPFields(response.headers, splitCookie: false), body: Data(body.readableBytesView))
        } catch let error as HTTPClientError {
            if error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
                throw PurseError.timeout("\(request.method) \(request.url.path) timed out")
            }
            if error == .cancelled { throw PurseError.cancelled }
            throw PurseError.offline("\(request.url.host ?? "server") unreachable: \(error)")
        } catch let error as PurseError {
            throw error
        } catch is CancellationError {
            throw PurseError.cancelled
        } catch {
            throw PurseError.offline("\(request.url.host ?? "server") unreachable: \(error)")
        }
    }
}

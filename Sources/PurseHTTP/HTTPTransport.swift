import Foundation
import HTTPTypes

/// An HTTP request as a transport sends it: swift-http-types' method and fields, the full URL,
/// the body and how long to wait for the answer.
public struct TransportRequest: Sendable, Equatable {
    public var method: HTTPRequest.Method
    public var url: URL
    public var headerFields: HTTPFields
    public var body: Data?
    public var timeout: Duration

    public init(method: HTTPRequest.Method, url: URL, headerFields: HTTPFields = [:], body: Data? = nil, timeout: Duration = .seconds(30)) {
        self.method = method
        self.url = url
        self.headerFields = headerFields
        self.body = body
        self.timeout = timeout
    }
}

/// An HTTP response as a transport returns it.
public struct TransportResponse: Sendable, Equatable {
    public var status: HTTPResponse.Status
    public var headerFields: HTTPFields
    public var body: Data

    public init(status: HTTPResponse.Status, headerFields: HTTPFields = [:], body: Data = Data()) {
        self.status = status
        self.headerFields = headerFields
        self.body = body
    }
}

/// Sends one HTTP request. Implementations throw ``PurseError/offline`` when the server cannot be
/// reached and ``PurseError/timeout`` when the request's timeout passes; any HTTP status is a
/// response, not an error.
public protocol HTTPTransport: Sendable {
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// A transport refused the server's certificate chain because none of its keys is pinned; it
/// sent nothing after the handshake.
public struct CertificatePinningError: Error, Equatable, CustomStringConvertible {
    public var host: String
    public init(host: String) { self.host = host }
    public var description: String { "the certificate chain of \(host) matches none of the pinned keys" }
}

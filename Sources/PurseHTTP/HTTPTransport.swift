import Foundation

/// An HTTP request as a transport sends it.
public struct TransportRequest: Sendable, Equatable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: Data?
    public var timeout: Duration

    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil, timeout: Duration = .seconds(30)) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }

    /// Case-insensitive header lookup.
    public func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// An HTTP response as a transport returns it.
public struct TransportResponse: Sendable, Equatable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
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

import Foundation
import HTTPTypes
import Logging
import NIOCore
import Synchronization
@_spi(WSInternal) import WSCore

/// What an endpoint answers to a websocket upgrade request.
public enum WebSocketUpgradeDecision: Sendable {
    /// Upgrade, then run `session` until the connection ends.
    case accept(session: @Sendable (WebSocketInboundStream, WebSocketOutboundWriter, Logger) async -> Void)
    /// Refuse with this status and a plain-text body, then close the connection — what a `ws`
    /// server's `verifyClient` does (Wyseman: 400 `Invalid Date Stamp`, 401 `No login
    /// credentials`, 403 `Invalid Login`).
    case refuse(status: HTTPResponse.Status, message: String)
}

/// The upgrade request as an endpoint sees it: its target, headers and the peer's address.
public struct WebSocketUpgradeRequest: Sendable {
    /// The request target: path and query.
    public let uri: String
    /// The header fields. Reading one by name joins repeated values as Node.js does: `; ` for
    /// `Cookie`, `, ` otherwise.
    public let headerFields: HTTPFields
    public let remoteAddress: SocketAddress?

    public init(uri: String, headerFields: HTTPFields, remoteAddress: SocketAddress?) {
        self.uri = uri
        self.headerFields = headerFields
        self.remoteAddress = remoteAddress
    }

    /// The path without its query.
    public var path: String { String(uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "/") }

    /// The query's parameters, percent-decoded (`+` as a space, as a browser's form encoding).
    /// A repeated name keeps its first value.
    public var query: [String: String] {
        guard let mark = uri.firstIndex(of: "?") else { return [:] }
        var result: [String: String] = [:]
        for pair in uri[uri.index(after: mark)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decode(parts[0])
            let value = parts.count > 1 ? Self.decode(parts[1]) : ""
            if result[name] == nil { result[name] = value }
        }
        return result
    }

    private static func decode(_ text: Substring) -> String {
        String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
    }
}

extension WebSocketUpgradeRequest {
    /// The peer's IP address as text (`127.0.0.1`, `::1`).
    public var remoteIP: String? { remoteAddress?.ipAddress }
}

/// An endpoint that takes websocket upgrades on one path.
public protocol WebSocketEndpoint: Sendable {
    func decide(_ request: WebSocketUpgradeRequest) async -> WebSocketUpgradeDecision
}

/// The server's websocket endpoints by path. Modules register theirs when they mount; the
/// server's channel asks here for every request that asks for an upgrade.
public final class WebSocketEndpoints: Sendable {
    private let endpoints = Mutex<[String: any WebSocketEndpoint]>([:])

    public init() {}

    public func register(_ endpoint: any WebSocketEndpoint, at path: String) {
        endpoints.withLock { $0[path] = endpoint }
    }

    func endpoint(for path: String) -> (any WebSocketEndpoint)? {
        endpoints.withLock { $0[path] }
    }

    /// The decision for an upgrade request: an endpoint's, or 404 where no endpoint is registered.
    func decide(_ request: WebSocketUpgradeRequest) async -> WebSocketUpgradeDecision {
        guard let endpoint = endpoint(for: request.path) else { return .refuse(status: .notFound, message: "Not Found") }
        return await endpoint.decide(request)
    }
}


import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import PurseDatabase
import PurseServer
import ServiceLifecycle

/// A response from ``LiveHTTPClient``.
public struct LiveResponse: Sendable {
    public var status: HTTPResponse.Status
    public var headers: HTTPFields
    public var body: ByteBuffer

    public var text: String { String(buffer: body) }
    public var data: Data { Data(buffer: body) }
    public var object: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:]
    }
}

/// Plain HTTP to a running server over loopback (redirects are not followed, so tests see them).
public struct LiveHTTPClient: Sendable {
    public let base: URL
    static let client: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public init(base: URL) { self.base = base }

    public func execute(uri: String, method: HTTPRequest.Method, headers: HTTPFields = [:], body: ByteBuffer? = nil) async throws -> LiveResponse {
        var request = HTTPClientRequest(url: base.absoluteString + uri)
        request.method = NIOHTTP1.HTTPMethod(rawValue: method.rawValue)
        for field in headers { request.headers.add(name: field.name.rawName, value: field.value) }
        if let body { request.body = .bytes(body) }
        let response = try await Self.client.execute(request, timeout: .seconds(30))
        let collected = try await response.body.collect(upTo: 8 << 20)
        var fields = HTTPFields()
        for header in response.headers {
            if let name = HTTPField.Name(header.name) { fields.append(HTTPField(name: name, value: header.value)) }
        }
        return LiveResponse(status: HTTPResponse.Status(code: Int(response.status.code)), headers: fields, body: collected)
    }

    @discardableResult
    public func json(_ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil, token: String? = nil, headers: HTTPFields = [:]) async throws -> LiveResponse {
        try await execute(uri: uri, method: method, headers: JSONRequest.headers(headers, body: body, token: token), body: body.map { ByteBuffer(string: $0) })
    }

    public func register(email: String = JSONRequest.freshEmail(), password: String = "correct horse") async throws -> (token: String, userID: String) {
        let response = try await json(.post, "/auth/register", JSONRequest.registration(email: email, password: password))
        return try JSONRequest.registered(status: response.status, body: response.body)
    }
}

extension TestServer {
    /// Runs the application for real on its configured port (for services that call back into
    /// themselves, such as the Stripe sandbox's webhooks), then shuts everything down.
    public func withRunningServer<T: Sendable>(_ body: @Sendable (LiveHTTPClient) async throws -> T) async throws -> T {
        let port = app.environment.configuration.port
        let application = app.application
        let group = ServiceGroup(configuration: .init(services: [application], logger: application.logger))
        let task = Task { try await group.run() }
        let client = LiveHTTPClient(base: URL(string: "http://127.0.0.1:\(port)")!)
        do {
            var healthy = false
            for _ in 0..<100 where !healthy {
                healthy = (try? await client.execute(uri: "/health", method: .get))?.status == .ok
                if !healthy { try await Task.sleep(for: .milliseconds(50)) }
            }
            guard healthy else { throw ConfigurationError("server on port \(port) did not start") }
            let result = try await body(client)
            await group.triggerGracefulShutdown()
            _ = await task.result
            await shutdown()
            return result
        } catch {
            await group.triggerGracefulShutdown()
            _ = await task.result
            await shutdown()
            throw error
        }
    }
}

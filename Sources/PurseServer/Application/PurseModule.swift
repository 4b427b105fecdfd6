import HTTPTypes
import Hummingbird
import PurseDatabase
import ServiceLifecycle

/// A page or endpoint a module lists on `GET /`.
public struct ModuleLink: Sendable, Codable, Equatable {
    public var title: String
    public var path: String
    public init(_ title: String, _ path: String) {
        self.title = title
        self.path = path
    }
}

/// One system's service, mounted into the shared server.
public protocol PurseModule: Sendable {
    /// Short, stable name (`nexus`, `connect` …).
    var id: String { get }
    var title: String { get }
    var summary: String { get }
    var links: [ModuleLink] { get }
    /// Schema changes, appended after the core ones. Ids must be unique across modules.
    var migrations: [Migration] { get }
    var openAPI: OpenAPIFragment { get }

    /// Adds routes. Returns long-lived services (clients, sandboxes) to run beside the server.
    func mount(on router: Router<PurseRequestContext>, environment: ServerEnvironment) async throws -> [any Service]

    /// Background job handlers this module owns.
    func jobHandlers(environment: ServerEnvironment) -> [JobHandler]

    /// A refusal the shared layers make outside the module's routes (405 for a method a path of
    /// the module does not serve), in the body shape the module's seed uses at `path`.
    func reshape(_ refusal: APIError, path: String) -> APIError

    /// Ports the server also listens on, serving the same routes: a peer protocol whose clients
    /// look for the service on a port of its own (MyCHIPs' websocket, one above `/clientinfo`).
    var additionalPorts: [Int] { get }
}

extension PurseModule {
    public var links: [ModuleLink] { [] }
    public var migrations: [Migration] { [] }
    public var openAPI: OpenAPIFragment { OpenAPIFragment() }
    public func jobHandlers(environment: ServerEnvironment) -> [JobHandler] { [] }
    public func reshape(_ refusal: APIError, path: String) -> APIError { refusal }
    public var additionalPorts: [Int] { [] }
}

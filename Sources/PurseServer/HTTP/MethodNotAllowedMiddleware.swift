import HTTPTypes
import Hummingbird

/// Answers 405 with an `Allow` header when a request's path is served but not with its method.
///
/// The router alone answers such requests 404, as if the path did not exist. Added to the router
/// after every route, this middleware wraps only the router's not-found responder, so requests that
/// match a route never reach it.
struct MethodNotAllowedMiddleware: RouterMiddleware {
    typealias Context = PurseRequestContext

    /// Path templates split into components (`{id}` matches any one component), with their methods.
    let templates: [(components: [Substring], methods: [HTTPRequest.Method])]
    /// Gives the refusal the body shape of the module that owns the path.
    let reshape: @Sendable (APIError, String) -> APIError

    /// - Parameter routes: The router's routes as `(method, path template)`.
    init(routes: [(method: HTTPRequest.Method, path: String)], reshape: @escaping @Sendable (APIError, String) -> APIError) {
        var templates: [(components: [Substring], methods: [HTTPRequest.Method])] = []
        for route in routes {
            let components = route.path.split(separator: "/")
            if let index = templates.firstIndex(where: { $0.components == components }) {
                if !templates[index].methods.contains(route.method) { templates[index].methods.append(route.method) }
            } else {
                templates.append((components, [route.method]))
            }
        }
        self.templates = templates
        self.reshape = reshape
    }

    /// The methods served at `path`, or nil when no route has that path. Where templates overlap,
    /// the most literal one names the path, as in the router (`/v1/chipi-wallets/prepare-creation`
    /// is that route's path, not a wallet id of `/v1/chipi-wallets/{id}`).
    func allowedMethods(at path: String) -> [HTTPRequest.Method]? {
        let parts = path.split(separator: "/")
        var allowed: [HTTPRequest.Method] = []
        var best: [Bool]?
        for template in templates where template.components.count == parts.count {
            let matches = zip(template.components, parts).allSatisfy { pattern, part in
                pattern == part || (pattern.hasPrefix("{") && pattern.hasSuffix("}"))
            }
            guard matches else { continue }
            let literal = template.components.map { !($0.hasPrefix("{") && $0.hasSuffix("}")) }
            if let current = best, literal != current {
                // Lexicographic, literal before parameter, component by component.
                guard let first = zip(literal, current).first(where: { $0 != $1 }), first.0 else { continue }
                allowed = []
            }
            best = literal
            allowed += template.methods.filter { !allowed.contains($0) }
        }
        return allowed.isEmpty ? nil : allowed
    }

    @concurrent func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard let allowed = allowedMethods(at: path), !allowed.contains(request.method) else {
            return try await next(request, context)
        }
        let allow = allowed.map(\.rawValue).sorted().joined(separator: ", ")
        throw reshape(APIError(.methodNotAllowed, "Method \(request.method.rawValue) is not allowed here; use \(allow)", headers: [.allow: allow]), path)
    }
}

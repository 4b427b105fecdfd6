import Foundation
import PurseFormats
import HTTPTypes
import Hummingbird
import PurseDatabase

/// `/`, `/health`, `/metrics`, `/openapi.yaml`.
struct CoreRoutes {
    let environment: ServerEnvironment
    let modules: [any PurseModule]
    let document: OpenAPIDocument

    struct ServiceListing: Encodable {
        var name = "purse"
        var version: String
        var services: [Entry]
        struct Entry: Encodable {
            var id: String
            var title: String
            var summary: String
            var links: [ModuleLink]
        }
    }

    struct Health: Encodable {
        enum Status: String, Encodable { case ok, unavailable }
        var status: Status
        var database: String
    }

    func mount(on router: Router<PurseRequestContext>) {
        let listing = ServiceListing(
            version: PurseVersion.current,
            services: modules.map { .init(id: $0.id, title: $0.title, summary: $0.summary, links: $0.links) }
        )
        let html = Self.indexPage(listing)
        router.get("/") { request, _ -> Response in
            let accept = request.headers[.accept] ?? ""
            if accept.contains("application/json") && !accept.contains("text/html") {
                return try .json(listing)
            }
            return .html(html)
        }
        let env = environment
        router.get("health") { _, _ -> Response in
            do {
                try await env.database.ping()
                return try .json(Health(status: .ok, database: env.database.engine.rawValue))
            } catch {
                return try .json(Health(status: .unavailable, database: env.database.engine.rawValue), status: .serviceUnavailable)
            }
        }
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: env.metrics.exposition()))
            )
        }
        let yaml = document.yaml()
        router.get("openapi.yaml") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "application/yaml; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: yaml))
            )
        }
    }

    static var openAPI: OpenAPIFragment {
        OpenAPIFragment(operations: [
            OpenAPIOperation(.get, "/", summary: "The running services, as HTML or JSON (Accept: application/json)", tag: "server",
                             responses: [(200, "Service listing", Schema.string)], produces: "text/html",
                             alternatives: [(type: "application/json", schema: Schema.ref("ServiceListing"))]),
            OpenAPIOperation(.get, "/health", summary: "Liveness including a database round trip", tag: "server",
                             responses: [(200, "Healthy", Schema.ref("Health")), (503, "Database unreachable", Schema.ref("Health"))]),
            OpenAPIOperation(.get, "/metrics", summary: "Prometheus metrics", tag: "server",
                             responses: [(200, "Prometheus text format", Schema.string)], produces: "text/plain"),
            OpenAPIOperation(.get, "/openapi.yaml", summary: "This document", tag: "server",
                             responses: [(200, "OpenAPI 3.1", Schema.string)], produces: "application/yaml"),
        ], schemas: [
            ("ServiceListing", Schema.object([
                ("name", Schema.string), ("version", Schema.string),
                ("services", Schema.array(Schema.object([("id", Schema.string), ("title", Schema.string), ("summary", Schema.string),
                                                         ("links", Schema.array(Schema.object([("title", Schema.string), ("path", Schema.string)])))]))),
            ], required: ["name", "services"])),
            ("Health", Schema.object([("status", Schema.string), ("database", Schema.string)], required: ["status", "database"])),
        ])
    }

    static func indexPage(_ listing: ServiceListing) -> String {
        var sections = ""
        for service in listing.services {
            sections += "<section><h2>\(HTML.escape(service.title))</h2><p>\(HTML.escape(service.summary))</p><ul>"
            for link in service.links {
                sections += "<li><a href=\"\(HTML.escape(link.path))\">\(HTML.escape(link.title))</a> <code>\(HTML.escape(link.path))</code></li>"
            }
            sections += "</ul></section>\n"
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Purse</title>
            <style>body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1b1b1b}
            h1{margin-bottom:.2rem}section{border-top:1px solid #ddd;padding:.5rem 0}code{color:#666;font-size:.85em}</style>
            </head><body>
            <h1>Purse</h1><p>Version \(HTML.escape(listing.version)). Server endpoints: <a href="/health">/health</a>,
            <a href="/metrics">/metrics</a>, <a href="/openapi.yaml">/openapi.yaml</a>.</p>
            \(sections)</body></html>
            """
    }
}


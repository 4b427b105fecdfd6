import HTTPTypes
import Foundation
import Hummingbird

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
        var status: String
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
                return try .json(Health(status: "ok", database: env.database.engine.rawValue))
            } catch {
                return try .json(Health(status: "unavailable", database: env.database.engine.rawValue), status: .serviceUnavailable)
            }
        }
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: env.metrics.exposition() + Self.exposition(env.database.statistics)))
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
                             responses: [(200, "Service listing", Schema.ref("ServiceListing"))]),
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

    /// The database's counters in Prometheus text format.
    static func exposition(_ statistics: DatabaseStatistics) -> String {
        """
        # HELP purse_db_transactions_total Write transactions committed.
        # TYPE purse_db_transactions_total counter
        purse_db_transactions_total \(statistics.committedTransactions)
        # HELP purse_db_commits_total Database commits (SQLite commits queued transactions together).
        # TYPE purse_db_commits_total counter
        purse_db_commits_total \(statistics.commits)
        # HELP purse_db_writer_busy_seconds_total Time SQLite's writer spent running transactions and their commits.
        # TYPE purse_db_writer_busy_seconds_total counter
        purse_db_writer_busy_seconds_total \(statistics.writerBusySeconds)
        # HELP purse_db_checkpoints_total SQLite WAL checkpoint passes run by the server's housekeeping.
        # TYPE purse_db_checkpoints_total counter
        purse_db_checkpoints_total \(statistics.checkpoints)
        # HELP purse_db_wal_pages SQLite WAL size in pages at the last checkpoint.
        # TYPE purse_db_wal_pages gauge
        purse_db_wal_pages \(statistics.walPages)
        # HELP purse_db_writer_pauses_total Times SQLite's writer paused so the WAL could start again from its beginning.
        # TYPE purse_db_writer_pauses_total counter
        purse_db_writer_pauses_total \(statistics.writerPauses)
        # HELP purse_db_writer_paused_seconds_total Time SQLite's writer spent paused for those restarts.
        # TYPE purse_db_writer_paused_seconds_total counter
        purse_db_writer_paused_seconds_total \(statistics.writerPausedSeconds)
        # HELP purse_db_wal_restarts_deferred_total WAL restarts put off because the disk was slow to sync.
        # TYPE purse_db_wal_restarts_deferred_total counter
        purse_db_wal_restarts_deferred_total \(statistics.deferredRestarts)
        # HELP purse_db_wal_truncations_total Times the server emptied the WAL file once writes had stopped.
        # TYPE purse_db_wal_truncations_total counter
        purse_db_wal_truncations_total \(statistics.walTruncations)

        """
    }
}

public enum PurseVersion {
    public static let current = "0.1.0"
}

/// Escaping for server-rendered pages.
public enum HTML {
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}

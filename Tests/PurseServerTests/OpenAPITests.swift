import HummingbirdTesting
import HTTPTypes
import Foundation
import PurseDatabase
@testable import PurseServer
import PurseTestSupport
import Testing

@Suite("OpenAPI document")
struct OpenAPITests {
    /// Every route the router serves is documented, and every documented operation is served.
    @Test func documentMatchesTheRouter() async throws {
        let server = try await TestServer.make()
        defer { Task { await server.shutdown() } }
        let served = Set(server.app.routes)
        let documented = Set(server.app.document.operations.map { "\($0.method.rawValue) \($0.path)" })
        #expect(served.subtracting(documented).isEmpty, "undocumented: \(served.subtracting(documented).sorted())")
        #expect(documented.subtracting(served).isEmpty, "documented but not served: \(documented.subtracting(served).sorted())")
    }

    @Test func yamlIsServedAndWellFormed() async throws {
        let server = try await TestServer.make()
        try await server.withRouter { client in
            let response = try await client.execute(uri: "/openapi.yaml", method: .get)
            #expect(response.status == .ok)
            let yaml = response.text
            #expect(yaml.hasPrefix("openapi: 3.1.0\n"))
            #expect(yaml.contains("  /auth/register:\n    post:\n"))
            #expect(yaml.contains("bearerAuth"))
            #expect(!yaml.contains("\t"))
        }
    }

    /// The document lists the refusals the shared layers make, so a client generated from it
    /// knows every status it can meet.
    @Test func sharedRefusalsAreDocumented() async throws {
        let server = try await TestServer.make()
        defer { Task { await server.shutdown() } }
        let yaml = server.app.document.yaml()
        /// The text of one path's entry: from its key to the next path's key.
        func entry(_ path: String) throws -> Substring {
            let start = try #require(yaml.range(of: "\n  \(path):\n"))
            let rest = yaml[start.upperBound...]
            return rest.range(of: "\n  /").map { rest[..<$0.lowerBound] } ?? rest
        }
        let register = try entry("/auth/register")
        for status in ["400", "413", "415"] {
            #expect(register.contains("'\(status)':") || register.contains("\"\(status)\":"), "\(status) missing on POST /auth/register")
        }
        let me = try entry("/auth/me")
        #expect(me.contains("'401':") || me.contains("\"401\":"), "401 missing on GET /auth/me")
    }

    /// A served path asked with another method is 405 with `Allow`, not 404.
    @Test func wrongMethodIs405WithAllow() async throws {
        let server = try await TestServer.make()
        try await server.withRouter { client in
            let wrong = try await client.execute(uri: "/auth/register", method: .delete)
            #expect(wrong.status == .methodNotAllowed)
            #expect(wrong.headers[.allow] == "POST")
            #expect(wrong.text.contains("\"error\""))
            let unknown = try await client.execute(uri: "/auth/nowhere", method: .delete)
            #expect(unknown.status == .notFound)
            let served = try await client.execute(uri: "/health", method: .get)
            #expect(served.status == .ok)
        }
    }

    /// Where templates overlap, the most literal one names the path, as in the router.
    @Test func theMostLiteralTemplateNamesThePath() {
        let middleware = MethodNotAllowedMiddleware(
            routes: [(.post, "/v1/wallets/prepare"), (.get, "/v1/wallets/{id}"), (.delete, "/v1/wallets/{id}"), (.post, "/v1/wallets")],
            reshape: { error, _ in error })
        #expect(middleware.allowedMethods(at: "/v1/wallets/prepare") == [.post])
        #expect(middleware.allowedMethods(at: "/v1/wallets/wallet_1") == [.get, .delete])
        #expect(middleware.allowedMethods(at: "/v1/wallets") == [.post])
        #expect(middleware.allowedMethods(at: "/v1/nowhere") == nil)
    }

    @Test func yamlRendererQuotesWhatMustBeQuoted() {
        let value: YAMLValue = ["a": "plain", "b": "yes", "c": "12", "d": "x: y", "e": ["1", 2, true], "f": [:], "g": []]
        #expect(value.rendered() == """
            a: plain
            b: "yes"
            c: "12"
            d: "x: y"
            e:
              - "1"
              - 2
              - true
            f: {}
            g: []

            """)
    }
}

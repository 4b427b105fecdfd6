import HummingbirdTesting
import HTTPTypes
import Foundation
import PurseDatabase
import PurseServer
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

import HTTPTypes
import PurseServer

/// The provider's HTTP operation. The websocket API itself is described in docs/chips.md: it is
/// not HTTP request–response, so OpenAPI does not cover it.
enum ChipsOpenAPI {
    static let fragment = OpenAPIFragment(operations: [
        OpenAPIOperation(.get, "/clientinfo", summary: "What a signature login signs: the caller's address, cookie, user agent and the provider's date",
                         tag: "chips",
                         responses: [(200, "The login text's parts", Schema.object([
                             ("ip", Schema.string), ("cookie", Schema.string), ("userAgent", Schema.string), ("date", Schema.string),
                         ], required: ["date"]))]),
    ])
}

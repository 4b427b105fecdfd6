import HTTPTypes
import PurseAPNs
import PurseServer

/// The provider's HTTP operation. The websocket API itself is described in docs/chips.md: it is
/// not HTTP request–response, so OpenAPI does not cover it.
enum ChipsOpenAPI {
    static func fragment(sandbox: Bool) -> OpenAPIFragment {
        OpenAPIFragment(operations: operations + (sandbox ? APNsSandbox.openAPI(path: "/sandbox/chips/apns", tag: "chips-apns-sandbox") : []))
    }

    static let operations: [OpenAPIOperation] = [
        OpenAPIOperation(.get, "/clientinfo", summary: "What a signature login signs: the caller's address, cookie, user agent and the provider's date",
                         tag: "chips",
                         responses: [(200, "The login text's parts", Schema.object([
                             ("ip", Schema.string), ("cookie", Schema.string), ("userAgent", Schema.string), ("date", Schema.string),
                         ], required: ["date"]))]),
        OpenAPIOperation(.get, "/chips/balance.svg", summary: "The signed-in user's visual balance sheet (SVG bubble chart)", tag: "chips",
                         responses: [(200, "The chart (image/svg+xml)", nil), (401, "No login credentials, or an Invalid Date Stamp", nil),
                                     (403, "Invalid Login", nil)],
                         query: [OpenAPIParameter("user", "The username"), OpenAPIParameter("sign", "The login signature over /clientinfo's text (base64url)"),
                                 OpenAPIParameter("date", "The date /clientinfo gave"), OpenAPIParameter("title", "The chart's title")]),
        OpenAPIOperation(.get, "/report/{token}/{resource}", summary: "A named action's report by the link it answered (agree.pdf, graph.html), for 15 minutes", tag: "chips",
                         responses: [(200, "The report (application/pdf or text/html)", nil), (204, "A click the app intercepts", nil),
                                     (404, "Unknown or expired link, or another resource", nil)]),
    ]
}

import HTTPTypes
import PurseDatabase
import PurseServer

enum ConnectOpenAPI {
    /// The sandbox answers as Stripe does, `{"error": {"type", "code"?, "message", "param"?}}`;
    /// a missing or wrong secret key is 401.
    static let stripeError = Schema.ref("StripeError")

    static func fragment(sandbox: Bool) -> OpenAPIFragment {
        let status = Schema.object([("hasAccount", Schema.boolean), ("onboardingComplete", Schema.boolean)], required: ["hasAccount", "onboardingComplete"])
        var operations: [OpenAPIOperation] = [
            OpenAPIOperation(.post, "/api/stripe/connect/create-account", summary: "Create the host's Stripe Express account", tag: "connect", requiresAuth: true,
                             responses: [(200, "Created", Schema.object([("account", Schema.ref("StripeAccount"))])), (400, "Already has one, or platform not configured", Schema.error),
                                         (401, "Authentication required", Schema.error), (404, "User not found", Schema.error), (500, "Stripe failed", Schema.error)]),
            OpenAPIOperation(.post, "/api/stripe/connect/create-account-link", summary: "Onboarding URL (Origin header → return/refresh URLs)", tag: "connect", requiresAuth: true,
                             responses: [(200, "Link", Schema.object([("url", Schema.string)], required: ["url"])), (400, "No account or bad Origin", Schema.error),
                                         (404, "User not found", Schema.error), (500, "Stripe failed", Schema.error)],
                             headers: [OpenAPIParameter("Origin", "The web app's origin; return and refresh URLs are made from it", schema: Schema.pattern("^[Hh][Tt][Tt][Pp][Ss]?://"), required: true)]),
            OpenAPIOperation(.get, "/api/stripe/connect/account-status", summary: "Status from our database", tag: "connect", requiresAuth: true,
                             responses: [(200, "Status", status), (404, "User not found", Schema.error), (500, "Failed", Schema.error)]),
            OpenAPIOperation(.post, "/api/stripe/connect/verify-account", summary: "Status fetched from Stripe (and stored)", tag: "connect", requiresAuth: true,
                             responses: [(200, "Status", Schema.object([("hasAccount", Schema.boolean), ("onboardingComplete", Schema.boolean), ("chargesEnabled", Schema.boolean),
                                                                        ("payoutsEnabled", Schema.boolean), ("detailsSubmitted", Schema.boolean)])), (404, "User not found", Schema.error),
                                         (500, "Stripe failed", Schema.error)]),
            OpenAPIOperation(.post, "/api/webhooks/stripe/connect", summary: "Stripe webhook (Stripe-Signature verified)", tag: "connect",
                             request: ["type": "object"], responses: [(200, "Received", Schema.object([("received", Schema.boolean)])), (400, "Bad signature", Schema.error)],
                             headers: [OpenAPIParameter("Stripe-Signature", "t=…,v1=… (HMAC-SHA256 of the raw body with the endpoint's secret)", required: true)]),
            OpenAPIOperation(.get, "/stripe/connect/success", summary: "Return page after onboarding", tag: "connect", responses: [(200, "HTML", Schema.string)], produces: "text/html"),
            OpenAPIOperation(.get, "/stripe/connect/reauth", summary: "Refresh page for an expired link", tag: "connect", responses: [(200, "HTML", Schema.string)], produces: "text/html"),
        ]
        operations += [
            OpenAPIOperation(.get, "/api/events", summary: "Upcoming paid events", tag: "connect",
                             responses: [(200, "Events", Schema.object([("events", Schema.array(Schema.ref("PaidEvent")))]))]),
            OpenAPIOperation(.post, "/api/events", summary: "Create a paid event (host with completed onboarding)", tag: "connect", requiresAuth: true,
                             request: Schema.object([("title", Schema.notBlank(length: 1...120)), ("description", Schema.string(length: 0...2_000)),
                                                     ("startsAt", ["type": "string", "format": "date-time"]), ("price", Schema.integer(50...10_000_000)),
                                                     ("currency", Schema.pattern("^[A-Za-z]{3}$")), ("capacity", Schema.integer(1...1_000_000))],
                                                    required: ["title", "startsAt", "price"]),
                             responses: [(201, "Created", Schema.ref("PaidEvent")), (400, "Invalid", Schema.error), (403, "Onboarding not complete", Schema.error),
                                         (404, "User not found", Schema.error)]),
            OpenAPIOperation(.post, "/api/events/{id}/tickets", summary: "Buy a ticket: a destination charge with a 3 % application fee", tag: "connect",
                             requiresAuth: true, idempotent: true,
                             request: Schema.object([("paymentMethod", Schema.pattern("^pm_")), ("testCard", Schema.pattern("^[^0-9]*(?:[0-9][^0-9]*){12,19}$"))],
                                                    oneOfRequired: [["paymentMethod"], ["testCard"]]),
                             responses: [(201, "Ticket", Schema.object([("ticket", Schema.object([("id", Schema.string), ("amount", Schema.integer), ("applicationFee", Schema.integer),
                                                                                                  ("hostShare", Schema.integer), ("paymentIntentId", Schema.string)]))])),
                                         (402, "Card declined", Schema.error), (404, "No such event", Schema.error), (409, "Sold out", Schema.error)]),
        ]
        if sandbox {
            operations += [
                OpenAPIOperation(.post, "/sandbox/stripe/v1/payment_intents", summary: "Sandbox Stripe: confirmed PaymentIntent (test cards)", tag: "stripe-sandbox",
                                 responses: [(200, "PaymentIntent", ["type": "object"]), (400, "Stripe error (amount too small …)", stripeError),
                                             (402, "Card declined", stripeError)], errorSchema: stripeError),
                OpenAPIOperation(.post, "/sandbox/stripe/v1/accounts", summary: "Sandbox Stripe: create account", tag: "stripe-sandbox",
                                 responses: [(200, "Account", Schema.ref("StripeAccount")), (400, "Stripe error", Schema.ref("StripeError"))], errorSchema: stripeError),
                OpenAPIOperation(.get, "/sandbox/stripe/v1/accounts/{id}", summary: "Sandbox Stripe: retrieve account", tag: "stripe-sandbox",
                                 responses: [(200, "Account", Schema.ref("StripeAccount")), (404, "No such account", Schema.ref("StripeError"))], errorSchema: stripeError),
                OpenAPIOperation(.post, "/sandbox/stripe/v1/account_links", summary: "Sandbox Stripe: create account link", tag: "stripe-sandbox",
                                 responses: [(200, "Link", Schema.object([("url", Schema.string), ("expires_at", Schema.integer)])), (400, "Stripe error", Schema.ref("StripeError"))],
                                 errorSchema: stripeError),
                OpenAPIOperation(.get, "/sandbox/stripe/connect/onboarding/{token}", summary: "Sandbox hosted onboarding page", tag: "stripe-sandbox",
                                 responses: [(200, "HTML form", Schema.string), (303, "Expired or used: to refresh_url", nil), (404, "No such link", Schema.string)], produces: "text/html"),
                OpenAPIOperation(.post, "/sandbox/stripe/connect/onboarding/{token}", summary: "Submit onboarding; sends account.updated and redirects to return_url", tag: "stripe-sandbox",
                                 responses: [(303, "To return_url (or refresh_url)", nil), (400, "Missing details", Schema.string), (404, "No such link", Schema.string)],
                                 produces: "text/html"),
            ]
        }
        return OpenAPIFragment(operations: operations, schemas: [
            ("StripeAccount", Schema.object([("id", Schema.string), ("object", Schema.string), ("business_type", Schema.nullableString), ("charges_enabled", Schema.boolean),
                                             ("country", Schema.string), ("created", Schema.integer), ("default_currency", Schema.string), ("details_submitted", Schema.boolean),
                                             ("email", Schema.nullableString), ("payouts_enabled", Schema.boolean), ("type", Schema.string)])),
            ("PaidEvent", Schema.object([("id", Schema.string), ("hostId", Schema.string), ("title", Schema.string), ("startsAt", Schema.string),
                                         ("price", Schema.integer), ("currency", Schema.string), ("capacity", Schema.integer), ("ticketsSold", Schema.integer)])),
            ("StripeError", Schema.object([("error", Schema.object([("type", Schema.string), ("code", Schema.string), ("message", Schema.string), ("param", Schema.string)]))])),
        ])
    }
}

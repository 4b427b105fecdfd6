import CutiEVocabulary
import HTTPTypes
import PurseAPNs
import PurseFormats
import PurseServer

/// Cuti-E's operations in the server's OpenAPI document.
enum CutiEOpenAPI {
    static func fragment(sandbox: Bool) -> OpenAPIFragment {
        var operations = sdk + trust + admin + dashboard
        if sandbox { operations += apnsSandbox + trustSandbox }
        return OpenAPIFragment(operations: operations)
    }

    static let appHeader = OpenAPIParameter("X-App-ID", "The app's id (app_sandbox in development)", schema: Schema.string(length: 1...64), required: true)
    /// Headers of a device's request: its token, and a signature where the app requires one
    /// (see docs/cutie.md: device authentication).
    static let signedHeaders = [
        appHeader,
        OpenAPIParameter("X-Device-Token", "The device token from /v1/device/register", schema: Schema.string(length: 1...200), required: true),
        OpenAPIParameter("X-Device-ID", "The token's device (device_ and a UUID), as the SDK sends it", schema: Schema.string(length: 1...64)),
        OpenAPIParameter("X-Timestamp", "Unix milliseconds, within 5 minutes of the server's clock (signed requests)", schema: Schema.pattern("^[0-9]{1,16}$")),
        OpenAPIParameter("X-Signature", "hex HMAC-SHA256 with the device secret of timestamp, method, path, body hash and Idempotency-Key when sent (signed requests; required where the app says)",
                         schema: Schema.pattern("^[0-9a-f]{64}$")),
        OpenAPIParameter("X-App-Assertion", "App Attest assertion (base64 CBOR) over the signed text; required when the app requires App Attest",
                         schema: Schema.string(length: 1...4096)),
    ]
    static let refused: [(status: Int, description: String, schema: YAMLValue?)] = [
        (400, "Invalid", Schema.error), (401, "Missing, wrong, stale or revoked device credentials", Schema.error), (413, "Too long", Schema.error),
        (415, "Not JSON", Schema.error),
    ]

    static let ms = Schema.integer
    static let tag = Schema.object([("tag_id", Schema.string), ("conversation_id", Schema.string), ("tag_name", Schema.string), ("tag_color", Schema.nullableString)],
                                   required: ["tag_id", "conversation_id", "tag_name"])
    static let message = Schema.object([
        ("message_id", Schema.string), ("conversation_id", Schema.string), ("sender_type", Schema.oneOf(["user", "admin", "system"])),
        ("sender_id", Schema.nullableString), ("sender_name", Schema.nullableString), ("message", Schema.string), ("message_type", Schema.oneOf(["text", "image"])),
        ("attachment_url", Schema.nullableString), ("is_internal_note", Schema.boolean), ("client_id", Schema.nullableString), ("created_at", ms),
        ("read_at", ["type": ["integer", "null"]]),
    ], required: ["message_id", "conversation_id", "sender_type", "message", "message_type", "is_internal_note", "created_at"])
    static let conversation = Schema.object([
        ("conversation_id", Schema.string), ("app_id", Schema.string), ("device_id", Schema.string), ("group_id", Schema.nullableString),
        ("user_id", Schema.nullableString), ("user_name", Schema.nullableString), ("title", Schema.nullableString),
        ("category", Schema.oneOf(ConversationCategory.rawValues)), ("status", Schema.oneOf(ConversationStatus.rawValues)),
        ("priority", Schema.oneOf(ConversationPriority.rawValues)), ("assigned_admin_id", Schema.nullableString),
        ("message_count", Schema.integer), ("unread_count", Schema.integer), ("last_message", Schema.nullableString),
        ("tags", Schema.array(tag)), ("messages", Schema.array(message)), ("created_at", ms), ("updated_at", ms),
    ], required: ["conversation_id", "app_id", "category", "status", "priority", "message_count", "unread_count", "created_at", "updated_at"])
    static let success = Schema.object([("success", Schema.boolean)], required: ["success"])
    static let text = Schema.string(length: 1...5000)

    static var sdk: [OpenAPIOperation] {
        [
            OpenAPIOperation(.post, "/v1/device/register", summary: "Register a device: a device token and the secret that signs its requests", tag: "cutie",
                             request: Schema.object([("app_version", Schema.string), ("os_version", Schema.string), ("device_model", Schema.string),
                                                     ("device_name", Schema.string(length: 1...100))]),
                             responses: [(200, "Registered", Schema.object([("device_token", Schema.string), ("device_secret", Schema.string), ("token_id", Schema.string),
                                                                            ("is_new", Schema.boolean), ("group_id", Schema.string)],
                                                                           required: ["device_token", "device_secret", "token_id", "is_new"])),
                                         (429, "Too many new devices from this address (Retry-After)", Schema.error)] + refused,
                             headers: [appHeader, OpenAPIParameter("X-Device-ID", "device_ and a UUID", schema: Schema.pattern("^device_[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"), required: true),
                                       OpenAPIParameter("X-Device-Token", "The device's current token: the same identity gets a new one (without it, a new identity)",
                                                        schema: Schema.string(length: 1...200))],
                             requestRequired: false),
            OpenAPIOperation(.post, "/v1/conversations", summary: "Start a conversation with the app's support team", tag: "cutie", idempotent: false,
                             request: Schema.object([
                                 ("category", Schema.oneOf(ConversationCategory.rawValues)), ("initial_message", text), ("title", Schema.string(length: 1...200)),
                                 ("user_id", Schema.string(length: 0...100)), ("user_name", Schema.string(length: 0...100)), ("app_version", Schema.string(length: 0...100)),
                                 ("os_version", Schema.string(length: 0...100)), ("device_model", Schema.string(length: 0...100)),
                             ], required: ["category", "initial_message"]),
                             responses: [(201, "Created", Schema.object([("conversation_id", Schema.string), ("status", Schema.string), ("message_id", Schema.string),
                                                                        ("created_at", ms)], required: ["conversation_id", "status", "message_id", "created_at"])),
                                         (403, "The app's monthly feedback limit for its tier, or this address's share of it, is reached", Schema.error),
                                         (429, "This device has started too many conversations today (Retry-After)", Schema.error)] + refused,
                             headers: signedHeaders),
            OpenAPIOperation(.get, "/v1/conversations", summary: "The device's (or its linked group's) conversations and unread total", tag: "cutie",
                             responses: [(200, "Conversations", Schema.object([("conversations", Schema.array(conversation)), ("total_unread", Schema.integer)],
                                                                             required: ["conversations", "total_unread"]))] + refused,
                             query: [OpenAPIParameter("limit", "1 to 100", schema: Schema.integer(1...100))], headers: signedHeaders),
            OpenAPIOperation(.get, "/v1/conversations/{id}", summary: "A conversation with its messages", tag: "cutie",
                             responses: [(200, "Conversation", conversation), (404, "Not this device's", Schema.error)] + refused, headers: signedHeaders),
            OpenAPIOperation(.post, "/v1/conversations/{id}/messages", summary: "Send a message", tag: "cutie",
                             request: Schema.object([("message", text), ("attachment_url", Schema.string(length: 1...2048)), ("client_id", Schema.string(length: 1...64))],
                                                    required: ["message"]),
                             responses: [(201, "Sent", message), (200, "Sent before (same client_id or Idempotency-Key)", message), (404, "Not this device's", Schema.error),
                                         (409, "Closed", Schema.error)] + refused, headers: signedHeaders),
            OpenAPIOperation(.post, "/v1/conversations/{id}/messages/mark-all-read", summary: "Mark support's replies read", tag: "cutie",
                             responses: [(200, "Marked", Schema.object([("success", Schema.boolean), ("marked", Schema.integer)], required: ["success", "marked"])),
                                         (404, "Not this device's", Schema.error)] + refused, headers: signedHeaders, requestRequired: false),
            OpenAPIOperation(.post, "/v1/notifications/register", summary: "Register the device's APNs token", tag: "cutie",
                             request: Schema.object([("platform", Schema.oneOf(["ios", "macos"])), ("push_token", Schema.pattern("^[0-9a-fA-F]{32,200}$")),
                                                     ("bundle_id", Schema.string), ("environment", Schema.oneOf(["sandbox", "production"]))],
                                                    required: ["platform", "push_token"]),
                             responses: [(200, "Registered", success)] + refused, headers: signedHeaders),
            OpenAPIOperation(.delete, "/v1/notifications/unregister", summary: "Stop pushes to this device", tag: "cutie",
                             responses: [(200, "Unregistered", success)] + refused, headers: signedHeaders, requestRequired: false),
            OpenAPIOperation(.post, "/v1/sdk/link/initiate", summary: "A single-use link token for another device to scan (QR)", tag: "cutie",
                             responses: [(201, "Link token", Schema.object([("link_token", Schema.string), ("expires_at", ms), ("expires_in", Schema.integer),
                                                                           ("has_existing_group", Schema.boolean)],
                                                                          required: ["link_token", "expires_at", "expires_in", "has_existing_group"]))] + refused,
                             headers: signedHeaders, requestRequired: false),
            OpenAPIOperation(.post, "/v1/sdk/link/confirm", summary: "Join the group of the device that made the token", tag: "cutie",
                             request: Schema.object([("link_token", Schema.string(length: 1...100)), ("device_name", Schema.string(length: 1...100))], required: ["link_token"]),
                             responses: [(200, "Linked", Schema.object([("success", Schema.boolean), ("group_id", Schema.string), ("message", Schema.string)],
                                                                       required: ["success", "group_id", "message"])),
                                         (404, "Unknown token", Schema.error), (409, "Used already or linked already", Schema.error), (410, "Expired", Schema.error)] + refused,
                             headers: signedHeaders),
            OpenAPIOperation(.get, "/v1/sdk/link/status/{token}", summary: "pending, confirmed or expired", tag: "cutie",
                             responses: [(200, "Status", Schema.object([("status", Schema.oneOf(["pending", "confirmed", "expired"])), ("link_token", Schema.string),
                                                                       ("group_id", Schema.string), ("expires_at", ms), ("device_id", Schema.nullableString),
                                                                       ("target_device_name", Schema.nullableString), ("confirmed_at", ["type": ["integer", "null"]])],
                                                                      required: ["status", "link_token", "group_id", "expires_at"])),
                                         (404, "Unknown token", Schema.error)] + refused, headers: signedHeaders),
            OpenAPIOperation(.get, "/v1/sdk/link/devices", summary: "The devices sharing this device's inbox", tag: "cutie",
                             responses: [(200, "Devices", Schema.object([("linked", Schema.boolean), ("group_id", Schema.string), ("devices", Schema.array(Schema.object([
                                 ("device_id", Schema.string), ("device_name", Schema.string), ("is_current", Schema.boolean), ("is_primary", Schema.boolean),
                                 ("joined_at", ms), ("created_at", ms), ("linked_at", ["type": ["integer", "null"]]), ("last_seen_at", ms),
                             ], required: ["device_id", "device_name", "is_current", "is_primary", "joined_at", "created_at", "last_seen_at"])))],
                             required: ["linked", "group_id", "devices"]))] + refused, headers: signedHeaders),
            OpenAPIOperation(.delete, "/v1/sdk/link/devices/{id}", summary: "Unlink a device from the group", tag: "cutie",
                             responses: [(200, "Unlinked", Schema.object([("success", Schema.boolean), ("message", Schema.string)], required: ["success", "message"])),
                                         (404, "Not in this group", Schema.error), (409, "Not linked", Schema.error)] + refused,
                             headers: signedHeaders, requestRequired: false),
            OpenAPIOperation(.post, "/v1/activity/ping", summary: "Opt-in activity ping: recorded only with consent, once a day per device", tag: "cutie",
                             request: Schema.object([("hashed_device_id", Schema.pattern("^[0-9a-fA-F]{64}$")), ("consent", Schema.boolean), ("language", Schema.pattern("^[A-Za-z0-9_-]{0,16}$")),
                                                     ("country", Schema.pattern("^[A-Za-z0-9_-]{0,8}$")), ("app_version", Schema.string(length: 0...100)),
                                                     ("os_version", Schema.string(length: 0...100)), ("device_model", Schema.string(length: 0...100))],
                                                    required: ["hashed_device_id", "consent"]),
                             responses: [(200, "Received", Schema.object([("success", Schema.boolean), ("recorded", Schema.boolean)], required: ["success", "recorded"]))] + refused,
                             headers: [appHeader, OpenAPIParameter("X-Device-Token", "The device token, when the device has one", schema: Schema.string(length: 1...200))]),
        ]
    }

    static let adminRefused: [(status: Int, description: String, schema: YAMLValue?)] = [
        (400, "Invalid", Schema.error), (401, "Not signed in", Schema.error), (403, "Wrong CSRF token, cross-site, or the role does not allow it", Schema.error),
        (415, "Not JSON", Schema.error),
    ]
    static let csrf = [OpenAPIParameter("X-CSRF-Token", "The session's CSRF token (from login or /v1/admin/me)", required: true)]
    static let adminBody = Schema.object([("admin_id", Schema.string), ("email", Schema.string), ("name", Schema.string), ("role", Schema.oneOf(Admin.roles))],
                                         required: ["admin_id", "email", "name", "role"])

    static var admin: [OpenAPIOperation] {
        // An empty value means "any" (the dashboard's filter form sends every field).
        let filters = ["app_id", "status", "category", "priority", "tag", "assignee", "unread", "q", "limit"].map { name -> OpenAPIParameter in
            let schema: YAMLValue = switch name {
            case "status": Schema.oneOf([""] + ConversationStatus.rawValues)
            case "category": Schema.oneOf([""] + ConversationCategory.rawValues)
            case "priority": Schema.oneOf([""] + ConversationPriority.rawValues)
            case "unread": Schema.oneOf(["", "true", "false"])
            case "limit": Schema.integer(1...200)
            default: Schema.string(length: 0...200)
            }
            return OpenAPIParameter(name, "Filter: \(name)", schema: schema)
        }
        return [
            OpenAPIOperation(.post, "/v1/admin/login", summary: "Sign in: a session cookie and a CSRF token", tag: "cutie-admin",
                             request: Schema.object([("email", Schema.string(length: 1...254)), ("password", Schema.string(length: 1...72))], required: ["email", "password"]),
                             responses: [(200, "Signed in", Schema.object([("admin", adminBody), ("csrf_token", Schema.string)], required: ["admin", "csrf_token"])),
                                         (401, "Wrong e-mail or password", Schema.error), (429, "Too many attempts", Schema.error), (400, "Invalid", Schema.error),
                                         (403, "Cross-site", Schema.error), (415, "Not JSON", Schema.error)]),
            OpenAPIOperation(.post, "/v1/admin/logout", summary: "Sign out", tag: "cutie-admin", responses: [(200, "Signed out", success)] + adminRefused,
                             headers: csrf, requestRequired: false),
            OpenAPIOperation(.get, "/v1/admin/me", summary: "The signed-in admin", tag: "cutie-admin",
                             responses: [(200, "Admin", Schema.object([("admin", adminBody), ("csrf_token", Schema.string)], required: ["admin", "csrf_token"]))] + adminRefused),
            OpenAPIOperation(.get, "/v1/admin/conversations", summary: "Conversations with filters and search", tag: "cutie-admin",
                             responses: [(200, "Conversations", Schema.object([("conversations", Schema.array(conversation)), ("total_unread", Schema.integer)],
                                                                             required: ["conversations", "total_unread"]))] + adminRefused, query: filters),
            OpenAPIOperation(.get, "/v1/admin/conversations/{id}", summary: "A thread (internal notes included) and its pushes", tag: "cutie-admin",
                             responses: [(200, "Thread", Schema.object([("conversation", conversation), ("pushes", Schema.array(["type": "object"]))],
                                                                      required: ["conversation", "pushes"])), (404, "Unknown", Schema.error)] + adminRefused),
            OpenAPIOperation(.post, "/v1/admin/conversations/{id}/messages", summary: "Answer (pushed to the user's devices) or add an internal note", tag: "cutie-admin",
                             request: Schema.object([("message", text), ("is_internal_note", Schema.boolean), ("client_id", Schema.string(length: 1...64))], required: ["message"]),
                             responses: [(201, "Sent", Schema.object([("message", message), ("pushes_queued", Schema.integer)], required: ["message", "pushes_queued"])),
                                         (404, "Unknown", Schema.error), (413, "Too long", Schema.error)] + adminRefused, headers: csrf),
            OpenAPIOperation(.patch, "/v1/admin/conversations/{id}", summary: "Change status, priority, category or assignee", tag: "cutie-admin",
                             request: Schema.object([("status", Schema.oneOf(ConversationStatus.rawValues)), ("priority", Schema.oneOf(ConversationPriority.rawValues)),
                                                     ("category", Schema.oneOf(ConversationCategory.rawValues)), ("assigned_admin_id", Schema.string)]),
                             responses: [(200, "Changed", conversation), (404, "Unknown", Schema.error)] + adminRefused, headers: csrf),
            OpenAPIOperation(.post, "/v1/admin/conversations/{id}/tags", summary: "Tag a conversation", tag: "cutie-admin",
                             request: Schema.object([("tag", Schema.string(length: 1...40))], required: ["tag"]),
                             responses: [(200, "Tags", Schema.object([("tags", Schema.array(tag))], required: ["tags"])), (404, "Unknown", Schema.error)] + adminRefused,
                             headers: csrf),
            OpenAPIOperation(.delete, "/v1/admin/conversations/{id}/tags/{tag}", summary: "Remove a tag", tag: "cutie-admin",
                             responses: [(200, "Tags", Schema.object([("tags", Schema.array(tag))], required: ["tags"])), (404, "Unknown", Schema.error)] + adminRefused,
                             headers: csrf, requestRequired: false),
            OpenAPIOperation(.get, "/v1/admin/canned-responses", summary: "Canned responses", tag: "cutie-admin",
                             responses: [(200, "Canned responses", Schema.object([("canned_responses", Schema.array(["type": "object"]))], required: ["canned_responses"]))] + adminRefused),
            OpenAPIOperation(.post, "/v1/admin/canned-responses", summary: "Add a canned response (owners)", tag: "cutie-admin",
                             request: Schema.object([("title", Schema.string(length: 1...100)), ("body", text)], required: ["title", "body"]),
                             responses: [(201, "Added", ["type": "object"]), (413, "Too long", Schema.error)] + adminRefused, headers: csrf),
            OpenAPIOperation(.get, "/v1/admin/pushes", summary: "Pushes sent and their outcome", tag: "cutie-admin",
                             responses: [(200, "Pushes", Schema.object([("pushes", Schema.array(["type": "object"]))], required: ["pushes"]))] + adminRefused,
                             query: [OpenAPIParameter("conversation_id", "Only this conversation's")]),
            OpenAPIOperation(.get, "/v1/admin/admins", summary: "Support staff", tag: "cutie-admin",
                             responses: [(200, "Admins", Schema.object([("admins", Schema.array(adminBody))], required: ["admins"]))] + adminRefused),
            OpenAPIOperation(.get, "/v1/admin/apps", summary: "Apps", tag: "cutie-admin",
                             responses: [(200, "Apps", Schema.object([("apps", Schema.array(["type": "object"]))], required: ["apps"]))] + adminRefused),
            OpenAPIOperation(.post, "/v1/admin/apps", summary: "Create an app (owners)", tag: "cutie-admin",
                             request: Schema.object([("app_id", Schema.string(length: 1...64)), ("name", Schema.string(length: 1...100)), ("bundle_id", Schema.string(length: 3...155)),
                                                     ("apns_environment", Schema.oneOf(["sandbox", "production"])), ("team_id", Schema.pattern("^[A-Z0-9]{10}$")),
                                                     ("require_app_attest", Schema.boolean)], required: ["name", "bundle_id"]),
                             responses: [(201, "Created", ["type": "object"]), (409, "Exists", Schema.error), (413, "Too long", Schema.error)] + adminRefused, headers: csrf),
            OpenAPIOperation(.patch, "/v1/admin/apps/{id}", summary: "An app's App Attest settings (owners)", tag: "cutie-admin",
                             request: Schema.object([("team_id", Schema.pattern("^[A-Z0-9]{10}$")), ("require_app_attest", Schema.boolean),
                                                     ("attest_environment", Schema.oneOf(["development", "production"]))]),
                             responses: [(200, "Changed", ["type": "object"]), (404, "Unknown app", Schema.error), (413, "Too long", Schema.error)] + adminRefused, headers: csrf),
            OpenAPIOperation(.get, "/v1/admin/apps/{id}/usage", summary: "The month's quota: who spent it, by device and by network", tag: "cutie-admin",
                             responses: [(200, "Usage", Schema.object([
                                 ("app_id", Schema.string), ("period", Schema.string), ("tier", Schema.string), ("limit", ["type": ["integer", "null"]]),
                                 ("received", Schema.integer), ("address_share", ["type": ["integer", "null"]]),
                                 ("devices", Schema.array(spender)), ("addresses", Schema.array(spender)),
                             ], required: ["app_id", "period", "tier", "received", "devices", "addresses"])), (404, "Unknown app", Schema.error)] + adminRefused),
            OpenAPIOperation(.post, "/v1/admin/apps/{id}/blocks", summary: "Block a device or a network, optionally giving its month back (owners)", tag: "cutie-admin",
                             request: Schema.object([("kind", Schema.oneOf(["device", "address"])), ("id", Schema.string(length: 1...100)), ("give_back", Schema.boolean)],
                                                    required: ["kind", "id"]),
                             responses: [(201, "Blocked", Schema.object([("blocked", Schema.boolean), ("given_back", Schema.integer)], required: ["blocked", "given_back"])),
                                         (404, "Unknown app", Schema.error), (413, "Too long", Schema.error)] + adminRefused, headers: csrf),
            OpenAPIOperation(.delete, "/v1/admin/apps/{id}/blocks/{kind}/{value}", summary: "Lift a block (owners)", tag: "cutie-admin",
                             responses: [(200, "Lifted", Schema.object([("success", Schema.boolean)], required: ["success"])), (404, "No such block", Schema.error)] + adminRefused,
                             headers: csrf, requestRequired: false),
            OpenAPIOperation(.post, "/v1/admin/apps/{id}/usage/give-back", summary: "Give conversations back to the month's quota (owners)", tag: "cutie-admin",
                             request: Schema.object([("conversations", Schema.integer(1...1_000_000))], required: ["conversations"]),
                             responses: [(200, "Given back", Schema.object([("given_back", Schema.integer), ("received", Schema.integer)], required: ["given_back", "received"])),
                                         (404, "Unknown app", Schema.error), (413, "Too long", Schema.error)] + adminRefused, headers: csrf),
        ]
    }

    /// A device or network in the usage lists.
    static let spender = Schema.object([("id", Schema.string), ("conversations", Schema.integer), ("blocked", Schema.boolean)],
                                       required: ["id", "conversations", "blocked"])

    /// The dashboard's pages: HTML, refusals as pages, forms posted as
    /// application/x-www-form-urlencoded with the session's csrf_token.
    static var dashboard: [OpenAPIOperation] {
        let html = Schema.string
        let refusals: [(status: Int, description: String, schema: YAMLValue?)] = [
            (400, "Incomplete form", html), (401, "Not signed in", html), (403, "Wrong CSRF token, cross-site, or the role does not allow it", html),
            (404, "Unknown conversation", html), (413, "Too long", html),
        ]
        func form(_ path: String, _ summary: String) -> OpenAPIOperation {
            OpenAPIOperation(.post, path, summary: summary, tag: "cutie-dashboard", responses: [(303, "Back to the page", nil)] + refusals, produces: "text/html")
        }
        return [
            OpenAPIOperation(.get, "/cutie/admin", summary: "Conversations with filters and search (signed out: to the sign-in page)", tag: "cutie-dashboard",
                             responses: [(200, "Page", html), (303, "Sign in first", nil), (400, "Bad filter", html)], produces: "text/html"),
            OpenAPIOperation(.get, "/cutie/admin/login", summary: "The sign-in page", tag: "cutie-dashboard", responses: [(200, "Page", html)], produces: "text/html"),
            OpenAPIOperation(.post, "/cutie/admin/login", summary: "Sign in (form: email, password)", tag: "cutie-dashboard",
                             responses: [(303, "Signed in", nil), (400, "Incomplete form", html), (401, "Wrong e-mail or password", html),
                                         (403, "Cross-site", html), (429, "Too many attempts", html)], produces: "text/html"),
            form("/cutie/admin/logout", "Sign out"),
            OpenAPIOperation(.get, "/cutie/admin/conversations/{id}", summary: "A thread, the reply and change forms, its pushes", tag: "cutie-dashboard",
                             responses: [(200, "Page", html), (303, "Sign in first", nil), (404, "Unknown conversation", html)], produces: "text/html"),
            form("/cutie/admin/conversations/{id}/reply", "Answer (message or canned_id; is_internal_note)"),
            form("/cutie/admin/conversations/{id}/update", "Change status, priority, category, assignee"),
            form("/cutie/admin/conversations/{id}/tags", "Add a tag"),
            form("/cutie/admin/conversations/{id}/tags/remove", "Remove a tag"),
            OpenAPIOperation(.get, "/cutie/admin/pushes", summary: "Pushes sent, and what the APNs sandbox received", tag: "cutie-dashboard",
                             responses: [(200, "Page", html), (303, "Sign in first", nil)], produces: "text/html"),
        ]
    }

    /// Cuti-E's subscription products.
    static let products = Schema.oneOf(["starter", "pro", "business"].flatMap { ["com.cutie.\($0).monthly", "com.cutie.\($0).yearly"] })

    /// App Attest, subscriptions and usage.
    static var trust: [OpenAPIOperation] {
        let subscription = Schema.object([("tier", Schema.oneOf(["starter", "pro", "business"])), ("status", Schema.oneOf(["active", "grace_period", "expired", "revoked"])),
                                          ("product_id", Schema.nullableString), ("expires_at", ["type": ["integer", "null"]]),
                                          ("grace_period_expires_at", ["type": ["integer", "null"]])], required: ["tier", "status"])
        return [
            OpenAPIOperation(.post, "/v1/device/attest/challenge", summary: "A single-use App Attest challenge for this device", tag: "cutie",
                             responses: [(200, "Challenge", Schema.object([("challenge", Schema.string), ("expires_at", ms), ("expires_in", Schema.integer)],
                                                                          required: ["challenge", "expires_at", "expires_in"]))] + refused,
                             headers: signedHeaders, requestRequired: false),
            OpenAPIOperation(.post, "/v1/device/attest", summary: "Register an App Attest key: its attestation over SHA-256(challenge|keyId)", tag: "cutie",
                             request: Schema.object([("key_id", Schema.string(length: 1...64)), ("attestation", Schema.string(length: 1...24_576)),
                                                     ("challenge", Schema.string(length: 1...100))], required: ["key_id", "attestation"]),
                             responses: [(200, "Attested", Schema.object([("success", Schema.boolean), ("attestation_id", Schema.string), ("attested", Schema.boolean),
                                                                          ("key_id", Schema.string), ("environment", Schema.string)],
                                                                         required: ["success", "attestation_id", "attested", "key_id"])),
                                         (409, "Challenge used, or key attested for another device", Schema.error)] + refused, headers: signedHeaders),
            OpenAPIOperation(.post, "/v1/device/attest/assert", summary: "Check one App Attest assertion: X-App-Assertion, or one over client_data in the body", tag: "cutie",
                             request: Schema.object([("key_id", Schema.string(length: 1...64)), ("assertion", Schema.string(length: 1...4096)),
                                                     ("client_data", Schema.string(length: 0...8192))], required: ["key_id", "assertion", "client_data"]),
                             responses: [(200, "Valid", Schema.object([("success", Schema.boolean), ("counter", Schema.integer)], required: ["success", "counter"]))] + refused,
                             headers: signedHeaders, requestRequired: false),
            OpenAPIOperation(.get, "/v1/device/attest/status", summary: "Whether this device has an attested key, and its counter", tag: "cutie",
                             responses: [(200, "Status", Schema.object([("attested", Schema.boolean), ("attestation", ["oneOf": .array([Schema.object([
                                 ("key_id", Schema.string), ("environment", Schema.string), ("sign_count", Schema.integer), ("created_at", ms),
                                 ("last_assertion_at", ["type": ["integer", "null"]]),
                             ], required: ["key_id", "environment", "sign_count", "created_at"]), ["type": "null"]])])], required: ["attested"]))] + refused,
                             headers: signedHeaders),
            OpenAPIOperation(.delete, "/v1/device/attest", summary: "Forget this device's attested key", tag: "cutie",
                             responses: [(200, "Forgotten", Schema.object([("success", Schema.boolean)], required: ["success"]))] + refused,
                             headers: signedHeaders, requestRequired: false),
            OpenAPIOperation(.post, "/v1/subscription/verify", summary: "Verify a StoreKit 2 signed transaction and record the app's tier", tag: "cutie",
                             request: Schema.object([("platform", Schema.oneOf(["ios", "macos"])), ("signed_transaction", Schema.string(length: 1...65_536)),
                                                     ("product_id", products)], required: ["platform", "signed_transaction", "product_id"]),
                             responses: [(200, "Verified", subscription)] + refused, headers: signedHeaders),
            OpenAPIOperation(.get, "/v1/usage", summary: "The app's tier and this month's feedback against its limit", tag: "cutie",
                             responses: [(200, "Usage", Schema.object([
                                 ("tier", Schema.oneOf(["free", "starter", "pro", "business"])), ("status", Schema.string), ("period", Schema.string),
                                 ("period_start", ms), ("period_end", ms), ("feedback_received", Schema.integer), ("limit", ["type": ["integer", "null"]]),
                                 ("remaining", ["type": ["integer", "null"]]),
                             ], required: ["tier", "status", "period", "feedback_received"]))] + refused, headers: signedHeaders),
            OpenAPIOperation(.post, "/v1/appstore/notifications", summary: "App Store Server Notifications V2 (signedPayload), idempotent by notification UUID", tag: "cutie",
                             request: Schema.object([("signedPayload", Schema.string(length: 1...65_536))], required: ["signedPayload"]),
                             responses: [(200, "Received", Schema.object([("received", Schema.boolean), ("duplicate", Schema.boolean)], required: ["received", "duplicate"])),
                                         (400, "Not verified", Schema.error), (413, "Too long", Schema.error), (415, "Not JSON", Schema.error)]),
        ]
    }

    /// Optional fields that may also be null.
    static func optionalText(_ length: ClosedRange<Int>) -> YAMLValue {
        ["type": ["string", "null"], "minLength": .int(length.lowerBound), "maxLength": .int(length.upperBound)]
    }

    static func optionalInteger(_ range: ClosedRange<Int>) -> YAMLValue {
        ["type": ["integer", "null"], "minimum": .int(range.lowerBound), "maximum": .int(range.upperBound)]
    }

    /// Development stand-ins for Apple's attestation CA and StoreKit's signer.
    static var trustSandbox: [OpenAPIOperation] {
        let refusedHere: [(status: Int, description: String, schema: YAMLValue?)] = [(400, "Invalid", Schema.error), (413, "Too long", Schema.error), (415, "Not JSON", Schema.error)]
        return [
            OpenAPIOperation(.post, "/sandbox/appattest/certificate", summary: "Issue an App Attest credential certificate (development CA)", tag: "appattest-sandbox",
                             request: Schema.object([("public_key", Schema.string(length: 1...200)), ("nonce", Schema.string(length: 1...100))], required: ["public_key", "nonce"]),
                             responses: [(200, "x5c", Schema.object([("x5c", Schema.array(Schema.string))], required: ["x5c"]))] + refusedHere),
            OpenAPIOperation(.get, "/sandbox/appattest/apps/{id}", summary: "An app's App Attest identifier and environment (what its entitlements say)", tag: "appattest-sandbox",
                             responses: [(200, "App", Schema.object([("app_identifier", Schema.string), ("environment", Schema.string)], required: ["app_identifier", "environment"])),
                                         (404, "No such app with a team id", Schema.error)]),
            OpenAPIOperation(.get, "/sandbox/appattest/root", summary: "The development root (PEM)", tag: "appattest-sandbox",
                             responses: [(200, "PEM", Schema.string)], produces: "application/x-pem-file"),
            OpenAPIOperation(.post, "/sandbox/storekit/transactions", summary: "A StoreKit 2 signed transaction from the development signer", tag: "storekit-sandbox",
                             request: Schema.object([("bundle_id", Schema.string(length: 1...155)), ("product_id", products),
                                                     ("original_transaction_id", optionalText(1...40)), ("days", optionalInteger(1...3660)),
                                                     ("revoked", ["type": ["boolean", "null"]])],
                                                    required: ["bundle_id", "product_id"]),
                             responses: [(200, "Signed", Schema.object([("signed_transaction", Schema.string), ("transaction_id", Schema.string),
                                                                       ("original_transaction_id", Schema.string)], required: ["signed_transaction"]))] + refusedHere),
            OpenAPIOperation(.post, "/sandbox/storekit/notifications", summary: "An App Store Server Notification V2 from the development signer", tag: "storekit-sandbox",
                             request: Schema.object([("notification_type", Schema.string(length: 1...40)), ("subtype", optionalText(1...40)),
                                                     ("bundle_id", Schema.string(length: 1...155)), ("product_id", products),
                                                     ("original_transaction_id", Schema.string(length: 1...40)), ("days", optionalInteger(1...3660)),
                                                     ("grace_days", optionalInteger(1...60))],
                                                    required: ["notification_type", "bundle_id", "product_id", "original_transaction_id"]),
                             responses: [(200, "Signed", Schema.object([("signedPayload", Schema.string), ("notification_uuid", Schema.string)],
                                                                      required: ["signedPayload"]))] + refusedHere),
        ]
    }

    static var apnsSandbox: [OpenAPIOperation] { APNsSandbox.openAPI(path: "/sandbox/apns", tag: "apns-sandbox") }
}

import HTTPTypes
import PurseServer

extension APNsSandbox {
    static let reason = Schema.object([("reason", Schema.string), ("timestamp", Schema.integer)], required: ["reason"])

    /// The sandbox's operations under `path`, for the mounting service's OpenAPI document.
    public static func openAPI(path: String, tag: String) -> [OpenAPIOperation] {
        [
            OpenAPIOperation(.post, path + "/3/device/{token}", summary: "APNs' provider API: send a notification (token-based authentication)", tag: tag,
                             request: Schema.object([("aps", ["type": "object"])], required: ["aps"]),
                             responses: [(200, "Accepted (apns-id header)", nil), (400, "Bad request (reason)", reason), (403, "Provider token missing, invalid or expired", reason),
                                         (404, "Unknown path", reason), (405, "Not POST", reason), (410, "Unregistered device token", reason),
                                         (413, "Payload too large", reason), (415, "Not JSON", Schema.error)],
                             headers: [OpenAPIParameter("authorization", "bearer and the ES256 provider token"), OpenAPIParameter("apns-topic", "The app's bundle id"),
                                       OpenAPIParameter("apns-push-type", "alert, background …"), OpenAPIParameter("apns-priority", "10, 5 or 1"),
                                       OpenAPIParameter("apns-expiration", "Unix seconds or 0"), OpenAPIParameter("apns-collapse-id", "At most 64 bytes"),
                                       OpenAPIParameter("apns-id", "A UUID")],
                             errorSchema: reason, requestRequired: false),
            OpenAPIOperation(.get, path + "/deliveries", summary: "Pushes the APNs sandbox accepted, newest first", tag: tag,
                             responses: [(200, "Deliveries", Schema.object([("data", Schema.array(["type": "object"]))], required: ["data"])),
                                         (400, "Unknown query parameter", Schema.error)],
                             query: [OpenAPIParameter("device_token", "Only this device's")]),
            OpenAPIOperation(.post, path + "/unregister", summary: "Make a device token answer 410 Unregistered from now on", tag: tag,
                             request: Schema.object([("device_token", Schema.pattern("^[0-9a-fA-F]{64}$"))], required: ["device_token"]),
                             responses: [(200, "Unregistered", ["type": "object"]), (400, "Invalid", Schema.error), (415, "Not JSON", Schema.error)]),
        ]
    }
}

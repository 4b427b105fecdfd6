import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import PurseDatabase
import PurseKit
import PurseServer
import SQLKit

/// An APNs-compatible endpoint inside `purse serve`: `POST /sandbox/apns/3/device/{token}`
/// checks a request as APNs does — the provider token (ES256 with the sandbox key, its key and
/// team ids, at most an hour old), the topic (the bundle id of an app this server knows), the
/// headers and the device token — answers with APNs' statuses and `reason`s, and records every
/// accepted push (`GET /sandbox/apns/deliveries`, and the admin dashboard).
///
/// A device token the sandbox was told is gone (`POST /sandbox/apns/unregister`, as when the app
/// is deleted from the phone) gets `410 Unregistered`.
struct APNsSandbox: Sendable {
    let environment: ServerEnvironment
    let credentials: APNsCredentials
    var publicKey: P256.Signing.PublicKey { credentials.privateKey.publicKey }

    func mount(on router: Router<PurseRequestContext>) {
        let group = router.group("sandbox/apns")
        group.post("3/device/{token}") { request, context in
            var request = request
            let body = try await request.collectLimitedBody(context: context)
            var headers: [String: String] = [:]
            for field in request.headers { headers[field.name.canonicalName] = field.value }
            let token = try context.parameters.require("token")
            let answer = await handle(deviceToken: token, headers: headers, body: Data(buffer: body))
            var responseHeaders = HTTPFields()
            for (name, value) in answer.headers { if let field = HTTPField.Name(name) { responseHeaders[field] = value } }
            responseHeaders[.contentType] = "application/json"
            return Response(status: .init(code: answer.status), headers: responseHeaders, body: .init(byteBuffer: ByteBuffer(data: answer.body)))
        }
        group.get("deliveries") { request, _ in
            try request.requireOnlyQuery(["device_token"])
            let token = request.uri.queryParameters.get("device_token")
            let deliveries = try await environment.database.read { db in try await Self.deliveries(deviceToken: token, limit: 100, in: db) }
            return try Response.json(DeliveryList(data: deliveries))
        }
        group.post("unregister") { request, context in
            var request = request
            let body = try await request.decodeJSON(as: UnregisterRequest.self, context: context)
            guard Self.isDeviceToken(body.device_token) else { throw APIError.badRequest("device_token must be 64 hexadecimal characters") }
            let now = environment.now().epochMillis
            try await environment.database.transaction { db in
                try await db.raw("""
                    INSERT INTO cutie_apns_sandbox_unregistered (device_token, unregistered_at) VALUES (\(bind: body.device_token.lowercased()), \(bind: now))
                    ON CONFLICT (device_token) DO NOTHING
                    """).run()
            }
            return try Response.json(["unregistered": body.device_token.lowercased()])
        }
    }

    struct UnregisterRequest: Decodable { var device_token: String }

    static func isDeviceToken(_ text: String) -> Bool {
        text.utf8.count == 64 && text.allSatisfy(\.isHexDigit)
    }

    /// APNs' answer to one request.
    func handle(deviceToken: String, headers: [String: String], body: Data) async -> TransportResponse {
        @Sendable func header(_ name: String) -> String? { headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value }
        @Sendable func refuse(_ status: Int, _ reason: String, timestamp: Int64? = nil) -> TransportResponse {
            var object = #"{"reason":"\#(reason)""#
            if let timestamp { object += #","timestamp":\#(timestamp)"# }
            var answerHeaders: [String: String] = [:]
            if let id = header("apns-id") { answerHeaders["apns-id"] = id }
            return TransportResponse(status: status, headers: answerHeaders, body: Data((object + "}").utf8))
        }
        let now = environment.now()
        // The provider token.
        guard let authorization = header("authorization") else { return refuse(403, "MissingProviderToken") }
        guard authorization.lowercased().hasPrefix("bearer "),
              let claims = APNsProviderToken.verify(String(authorization.dropFirst(7)), publicKey: publicKey),
              claims.keyID == credentials.keyID, claims.teamID == credentials.teamID else {
            return refuse(403, "InvalidProviderToken")
        }
        if now.timeIntervalSince(claims.issuedAt) > 3600 { return refuse(403, "ExpiredProviderToken") }
        if claims.issuedAt.timeIntervalSince(now) > 300 { return refuse(403, "InvalidProviderToken") }
        // The headers.
        if let id = header("apns-id"), UUID(uuidString: id) == nil { return refuse(400, "BadMessageId") }
        let pushType = header("apns-push-type") ?? "alert"
        guard ["alert", "background", "voip", "complication", "fileprovider", "mdm", "location", "liveactivity", "pushtotalk"].contains(pushType) else {
            return refuse(400, "InvalidPushType")
        }
        let priority = header("apns-priority").map { Int($0) } ?? 10
        guard let priority, [1, 5, 10].contains(priority), !(pushType == "background" && priority == 10) else { return refuse(400, "BadPriority") }
        let expiration = header("apns-expiration").map { Int64($0) } ?? 0
        guard let expiration, expiration >= 0 else { return refuse(400, "BadExpirationDate") }
        if let collapse = header("apns-collapse-id"), collapse.utf8.count > 64 { return refuse(400, "BadCollapseId") }
        guard let topic = header("apns-topic"), !topic.isEmpty else { return refuse(400, "MissingTopic") }
        // The device token and the topic.
        guard Self.isDeviceToken(deviceToken) else { return refuse(400, "BadDeviceToken") }
        // The payload.
        guard !body.isEmpty else { return refuse(400, "PayloadEmpty") }
        guard body.count <= 4096 else { return refuse(413, "PayloadTooLarge") }
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any], object["aps"] is [String: Any] else {
            return refuse(400, "BadPayload")
        }
        do {
            return try await environment.database.transaction { db in
                guard try await db.raw("SELECT 1 AS known FROM cutie_apps WHERE bundle_id = \(bind: topic)").first() != nil else {
                    return refuse(400, "TopicDisallowed")
                }
                if let gone = try await db.raw("SELECT unregistered_at FROM cutie_apns_sandbox_unregistered WHERE device_token = \(bind: deviceToken.lowercased())").first() {
                    return refuse(410, "Unregistered", timestamp: try gone.decode(column: "unregistered_at", as: Int64.self))
                }
                let apnsID = header("apns-id")?.lowercased() ?? UUID().uuidString.lowercased()
                try await db.raw("""
                    INSERT INTO cutie_apns_sandbox (apns_id, device_token, topic, push_type, priority, collapse_id, expiration, payload, received_at)
                    VALUES (\(bind: apnsID), \(bind: deviceToken.lowercased()), \(bind: topic), \(bind: pushType), \(bind: priority),
                            \(bind: header("apns-collapse-id")), \(bind: expiration), \(bind: String(decoding: body, as: UTF8.self)), \(bind: now.epochMillis))
                    ON CONFLICT (apns_id) DO NOTHING
                    """).run()
                return TransportResponse(status: 200, headers: ["apns-id": apnsID, "apns-unique-id": UUID().uuidString.lowercased()])
            }
        } catch {
            return refuse(500, "InternalServerError")
        }
    }

    struct Delivery: Codable, Sendable {
        var apns_id: String
        var device_token: String
        var topic: String
        var push_type: String
        var priority: Int
        var collapse_id: String?
        var payload: String
        var received_at: Int64
    }

    struct DeliveryList: Encodable { var data: [Delivery] }

    static func deliveries(deviceToken: String?, limit: Int, in db: any DatabaseSession) async throws -> [Delivery] {
        let rows: [any SQLRow]
        if let deviceToken {
            rows = try await db.raw("""
                SELECT * FROM cutie_apns_sandbox WHERE device_token = \(bind: deviceToken.lowercased()) ORDER BY received_at DESC, apns_id LIMIT \(bind: limit)
                """).all()
        } else {
            rows = try await db.raw("SELECT * FROM cutie_apns_sandbox ORDER BY received_at DESC, apns_id LIMIT \(bind: limit)").all()
        }
        return try rows.map { row in
            Delivery(apns_id: try row.decode(column: "apns_id", as: String.self), device_token: try row.decode(column: "device_token", as: String.self),
                     topic: try row.decode(column: "topic", as: String.self), push_type: try row.decode(column: "push_type", as: String.self),
                     priority: try row.decode(column: "priority", as: Int.self), collapse_id: try row.decode(column: "collapse_id", as: String?.self),
                     payload: try row.decode(column: "payload", as: String.self), received_at: try row.decode(column: "received_at", as: Int64.self))
        }
    }
}

/// The push client's way into the sandbox in this process: the same requests, no socket.
struct InProcessAPNsTransport: HTTPTransport {
    let sandbox: APNsSandbox

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard request.method == "POST", let range = request.url.path.range(of: "/3/device/") else {
            return TransportResponse(status: 405, body: Data(#"{"reason":"MethodNotAllowed"}"#.utf8))
        }
        return await sandbox.handle(deviceToken: String(request.url.path[range.upperBound...]), headers: request.headers, body: request.body ?? Data())
    }
}

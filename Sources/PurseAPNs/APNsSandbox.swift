import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOFoundationCompat
import PurseDatabase
import PurseHTTP
import PurseServer
import SQLKit

/// An APNs-compatible endpoint inside `purse serve`: `POST PATH/3/device/{token}` (Cuti-E's at
/// `/sandbox/apns`, MyCHIPs' at `/sandbox/chips/apns`) checks a request as APNs does — the provider token (ES256 with the sandbox key, its key and
/// team ids, at most an hour old), the topic (the bundle id of an app this server knows), the
/// headers and the device token — answers with APNs' statuses and `reason`s, and records every
/// accepted push (`GET PATH/deliveries`, and Cuti-E's admin dashboard). Which topics it takes
/// is the mounting service's to say (its apps' bundle ids); each service keeps what its sandbox
/// received in tables of its own.
///
/// A device token the sandbox was told is gone (`POST PATH/unregister`, as when the app is
/// deleted from the phone) gets `410 Unregistered`.
public struct APNsSandbox: Sendable {
    /// The sandbox's two tables: what it received, and the device tokens it was told are gone.
    public struct Tables: Sendable {
        public var deliveries: String
        public var unregistered: String

        public init(prefix: String) {
            deliveries = prefix
            unregistered = prefix + "_unregistered"
        }

        /// The tables' schema, for the mounting service's migrations.
        public var statements: [String] {
            [
                """
                CREATE TABLE \(deliveries) (
                    apns_id TEXT PRIMARY KEY,
                    device_token TEXT NOT NULL,
                    topic TEXT NOT NULL,
                    push_type TEXT NOT NULL,
                    priority BIGINT NOT NULL,
                    collapse_id TEXT,
                    expiration BIGINT,
                    payload TEXT NOT NULL,
                    received_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX \(deliveries)_token ON \(deliveries) (device_token, received_at)",
                """
                CREATE TABLE \(unregistered) (
                    device_token TEXT PRIMARY KEY,
                    unregistered_at BIGINT NOT NULL
                )
                """,
            ]
        }
    }

    let environment: ServerEnvironment
    let credentials: APNsCredentials
    let tables: Tables
    let allowsTopic: @Sendable (String, any DatabaseSession) async throws -> Bool
    var publicKey: P256.Signing.PublicKey { credentials.privateKey.publicKey }

    public init(environment: ServerEnvironment, credentials: APNsCredentials, tables: Tables,
                allowsTopic: @escaping @Sendable (String, any DatabaseSession) async throws -> Bool) {
        self.environment = environment
        self.credentials = credentials
        self.tables = tables
        self.allowsTopic = allowsTopic
    }

    /// A refusal the shared layers make on the sandbox mounted at `mountPath` (a NUL character
    /// in the request), in APNs' wire format: `{"reason"}` with the same status.
    public static func reshape(_ refusal: APIError, path: String, mountPath: String) -> APIError {
        guard refusal.status == .badRequest, path.hasPrefix("/" + mountPath + "/3/device/") else { return refusal }
        return APIError(refusal.status, body: ["reason": "BadRequest"], headers: refusal.headers)
    }

    public func mount(on router: Router<PurseRequestContext>, at path: String) {
        let group = router.group(RouterPath(path))
        let tables = tables
        group.post("3/device/{token}") { request, context in
            var request = request
            let body = try await request.collectLimitedBody(context: context)
            let token = try context.parameters.require("token")
            let answer = await handle(deviceToken: token, headerFields: request.headers, body: Data(buffer: body))
            var responseHeaders = answer.headerFields
            responseHeaders[.contentType] = "application/json"
            return Response(status: answer.status, headers: responseHeaders, body: .init(byteBuffer: ByteBuffer(data: answer.body)))
        }
        group.get("deliveries") { request, _ in
            try request.requireOnlyQuery(["device_token"])
            let token = request.uri.queryParameters.get("device_token")
            let deliveries = try await environment.database.read { db in try await Self.deliveries(in: tables, deviceToken: token, limit: 100, on: db) }
            return try Response.json(DeliveryList(data: deliveries))
        }
        group.post("unregister") { request, context in
            var request = request
            let body = try await request.decodeJSON(as: UnregisterRequest.self, context: context)
            guard Self.isDeviceToken(body.device_token) else { throw APIError.badRequest("device_token must be 64 hexadecimal characters") }
            let now = environment.now().epochMillis
            try await environment.database.transaction { db in
                try await db.raw("""
                    INSERT INTO \(unsafeRaw: tables.unregistered) (device_token, unregistered_at) VALUES (\(bind: body.device_token.lowercased()), \(bind: now))
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
    func handle(deviceToken: String, headerFields: HTTPFields, body: Data) async -> TransportResponse {
        @Sendable func header(_ name: HTTPField.Name) -> String? { headerFields[name] }
        @Sendable func refuse(_ status: HTTPResponse.Status, _ reason: String, timestamp: Int64? = nil) -> TransportResponse {
            var object = #"{"reason":"\#(reason)""#
            if let timestamp { object += #","timestamp":\#(timestamp)"# }
            var answerHeaders = HTTPFields()
            if let id = header(.apnsID) { answerHeaders[.apnsID] = id }
            return TransportResponse(status: status, headerFields: answerHeaders, body: Data((object + "}").utf8))
        }
        let now = environment.now()
        // The provider token.
        guard let authorization = header(.authorization) else { return refuse(403, "MissingProviderToken") }
        guard authorization.lowercased().hasPrefix("bearer "),
              let claims = APNsProviderToken.verify(String(authorization.dropFirst(7)), publicKey: publicKey),
              claims.keyID == credentials.keyID, claims.teamID == credentials.teamID else {
            return refuse(403, "InvalidProviderToken")
        }
        if now.timeIntervalSince(claims.issuedAt) > 3600 { return refuse(403, "ExpiredProviderToken") }
        if claims.issuedAt.timeIntervalSince(now) > 300 { return refuse(403, "InvalidProviderToken") }
        // The headers.
        if let id = header(.apnsID), UUID(uuidString: id) == nil { return refuse(400, "BadMessageId") }
        let pushType = header(.apnsPushType) ?? "alert"
        guard ["alert", "background", "voip", "complication", "fileprovider", "mdm", "location", "liveactivity", "pushtotalk"].contains(pushType) else {
            return refuse(400, "InvalidPushType")
        }
        let priority = header(.apnsPriority).map { Int($0) } ?? 10
        guard let priority, [1, 5, 10].contains(priority), !(pushType == "background" && priority == 10) else { return refuse(400, "BadPriority") }
        let expiration = header(.apnsExpiration).map { Int64($0) } ?? 0
        guard let expiration, expiration >= 0 else { return refuse(400, "BadExpirationDate") }
        if let collapse = header(.apnsCollapseID), collapse.utf8.count > 64 { return refuse(400, "BadCollapseId") }
        guard let topic = header(.apnsTopic), !topic.isEmpty else { return refuse(400, "MissingTopic") }
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
                guard try await allowsTopic(topic, db) else {
                    return refuse(400, "TopicDisallowed")
                }
                if let gone = try await db.raw("SELECT unregistered_at FROM \(unsafeRaw: tables.unregistered) WHERE device_token = \(bind: deviceToken.lowercased())").first() {
                    return refuse(410, "Unregistered", timestamp: try gone.decode(column: "unregistered_at", as: Int64.self))
                }
                let apnsID = header(.apnsID)?.lowercased() ?? UUID().uuidString.lowercased()
                try await db.raw("""
                    INSERT INTO \(unsafeRaw: tables.deliveries) (apns_id, device_token, topic, push_type, priority, collapse_id, expiration, payload, received_at)
                    VALUES (\(bind: apnsID), \(bind: deviceToken.lowercased()), \(bind: topic), \(bind: pushType), \(bind: priority),
                            \(bind: header(.apnsCollapseID)), \(bind: expiration), \(bind: String(decoding: body, as: UTF8.self)), \(bind: now.epochMillis))
                    ON CONFLICT (apns_id) DO NOTHING
                    """).run()
                return TransportResponse(status: 200, headerFields: [.apnsID: apnsID, .apnsUniqueID: UUID().uuidString.lowercased()])
            }
        } catch {
            return refuse(500, "InternalServerError")
        }
    }

    public struct Delivery: Codable, Sendable {
        public var apns_id: String
        public var device_token: String
        public var topic: String
        public var push_type: String
        public var priority: Int
        public var collapse_id: String?
        public var payload: String
        public var received_at: Int64
    }

    struct DeliveryList: Encodable { var data: [Delivery] }

    /// The latest pushes the sandbox received (for one device token, or all).
    public static func deliveries(in tables: Tables, deviceToken: String?, limit: Int, on db: any DatabaseSession) async throws -> [Delivery] {
        let rows: [any SQLRow]
        if let deviceToken {
            rows = try await db.raw("""
                SELECT * FROM \(unsafeRaw: tables.deliveries) WHERE device_token = \(bind: deviceToken.lowercased()) ORDER BY received_at DESC, apns_id LIMIT \(bind: limit)
                """).all()
        } else {
            rows = try await db.raw("SELECT * FROM \(unsafeRaw: tables.deliveries) ORDER BY received_at DESC, apns_id LIMIT \(bind: limit)").all()
        }
        return try rows.map { row in
            Delivery(apns_id: try row.decode(column: "apns_id", as: String.self), device_token: try row.decode(column: "device_token", as: String.self),
                     topic: try row.decode(column: "topic", as: String.self), push_type: try row.decode(column: "push_type", as: String.self),
                     priority: try row.decode(column: "priority", as: Int.self), collapse_id: try row.decode(column: "collapse_id", as: String?.self),
                     payload: try row.decode(column: "payload", as: String.self), received_at: try row.decode(column: "received_at", as: Int64.self))
        }
    }
}

extension APNsSandbox {
    /// The push client's way into this sandbox in this process: the same requests through the
    /// same routes (mounted at `path`), no socket.
    public func inProcessTransport(at path: String) -> InProcessTransport {
        InProcessTransport(logger: environment.logger) { router in mount(on: router, at: path) }
    }

    /// The base URL an ``APNsClient`` uses with ``inProcessTransport(at:)`` for the same `path`
    /// (the transport reads only the path).
    public static func inProcessBaseURL(at path: String) -> URL {
        URL(string: "http://in-process.invalid/" + path)!
    }
}

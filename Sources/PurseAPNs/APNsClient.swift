import Foundation
import HTTPTypes
import PurseFormats
import PurseHTTP

/// One notification for one device.
public struct APNsNotification: Sendable, Equatable {
    public enum PushType: String, Sendable { case alert, background }

    /// The device token, 64 hex characters (the 32 bytes iOS hands the app).
    public var deviceToken: String
    /// `apns-topic`: the app's bundle id.
    public var topic: String
    public var pushType: PushType = .alert
    /// `apns-priority`: 10 delivers at once, 5 when the device sees fit.
    public var priority: Int = 10
    /// `apns-expiration`: until when APNs keeps trying; nil sends `0` (deliver once, now or never).
    public var expiration: Date?
    /// `apns-collapse-id`: a newer notification with the same id replaces an older one on the device.
    public var collapseID: String?
    /// `apns-id`: a UUID naming this notification (APNs echoes it).
    public var id: String = UUID().uuidString.lowercased()
    /// The JSON payload: `{"aps": {…}, …}`, at most 4 KB.
    public var payload: Data

    public init(deviceToken: String, topic: String, pushType: PushType = .alert, priority: Int = 10, expiration: Date? = nil,
                collapseID: String? = nil, payload: Data) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.payload = payload
    }

    /// The payload of a visible alert: `{aps: {alert: {title, body}, badge, sound}, …extra}`.
    public static func alertPayload(title: String, body: String, badge: Int?, sound: String? = "default", extra: [String: JSONValue] = [:]) -> Data {
        var alert: [String: JSONValue] = [:]
        if !title.isEmpty { alert["title"] = .string(title) }
        if !body.isEmpty { alert["body"] = .string(body) }
        var aps: [String: JSONValue] = ["alert": .object(alert)]
        if let badge { aps["badge"] = .int(Int64(badge)) }
        if let sound { aps["sound"] = .string(sound) }
        var object = extra
        object["aps"] = .object(aps)
        return Data(JavaScriptJSON.stringify(.object(object)).utf8)
    }
}

/// What APNs did with a notification.
public enum APNsOutcome: Sendable, Equatable {
    /// 200: accepted; APNs' `apns-id`.
    case sent(apnsID: String)
    /// 410 `Unregistered` (or `BadDeviceToken`): the token is no longer valid and must not be used again.
    case unregistered(reason: String)
    /// 429 or 5xx, or no answer: try again later.
    case retry(reason: String)
    /// Any other refusal: Apple's `reason`, recorded; sending again will not help.
    case failed(status: Int, reason: String)
}

/// The APNs provider API client: `POST /3/device/{token}` with token-based authentication.
///
/// Production talks HTTP/2 to `api.push.apple.com` (or `api.sandbox.push.apple.com` for
/// development builds) through AsyncHTTPClient, which negotiates HTTP/2 by ALPN; the built-in
/// sandbox answers the same requests inside `purse serve`.
public struct APNsClient: Sendable {
    public static let production = URL(string: "https://api.push.apple.com")!
    public static let development = URL(string: "https://api.sandbox.push.apple.com")!

    public let baseURL: URL
    public let transport: any HTTPTransport
    public let token: APNsProviderToken
    let now: @Sendable () -> Date

    public init(baseURL: URL, transport: any HTTPTransport, credentials: APNsCredentials, now: @escaping @Sendable () -> Date = Date.init) {
        self.baseURL = baseURL
        self.transport = transport
        self.token = APNsProviderToken(credentials: credentials)
        self.now = now
    }

    /// Sends one notification. A 403 `ExpiredProviderToken` signs a fresh token and tries once more.
    public func send(_ notification: APNsNotification) async -> APNsOutcome {
        var outcome = await attempt(notification)
        if case .failed(403, "ExpiredProviderToken") = outcome {
            token.invalidate()
            outcome = await attempt(notification)
        }
        return outcome
    }

    func attempt(_ notification: APNsNotification) async -> APNsOutcome {
        guard notification.deviceToken.utf8.count <= 200, notification.deviceToken.allSatisfy(\.isHexDigit) else {
            return .unregistered(reason: "BadDeviceToken")
        }
        let bearer: String
        do { bearer = try token.token(now: now()) } catch { return .failed(status: 0, reason: "could not sign the provider token: \(error)") }
        let base = baseURL.absoluteString.hasSuffix("/") ? String(baseURL.absoluteString.dropLast()) : baseURL.absoluteString
        guard let url = URL(string: "\(base)/3/device/\(notification.deviceToken)") else { return .failed(status: 0, reason: "bad APNs URL") }
        var headerFields: HTTPFields = [
            .authorization: "bearer \(bearer)",
            .apnsTopic: notification.topic,
            .apnsPushType: notification.pushType.rawValue,
            .apnsPriority: String(notification.priority),
            .apnsExpiration: String(notification.expiration.map { Int64($0.timeIntervalSince1970) } ?? 0),
            .apnsID: notification.id,
            .contentType: "application/json",
        ]
        if let collapse = notification.collapseID { headerFields[.apnsCollapseID] = collapse }
        let request = TransportRequest(method: .post, url: url, headerFields: headerFields, body: notification.payload, timeout: .seconds(15))
        let response: TransportResponse
        do {
            response = try await transport.send(request)
        } catch {
            return .retry(reason: "\(error)")
        }
        if response.status == .ok { return .sent(apnsID: response.headerFields[.apnsID] ?? notification.id) }
        let reason = (try? JSONDecoder().decode(Reason.self, from: response.body))?.reason ?? "HTTP \(response.status.code)"
        switch response.status {
        case .gone: return .unregistered(reason: reason)
        case .badRequest where reason == "BadDeviceToken": return .unregistered(reason: reason)
        case .tooManyRequests: return .retry(reason: reason)
        case _ where response.status.kind == .serverError: return .retry(reason: reason)
        default: return .failed(status: response.status.code, reason: reason)
        }
    }

    private struct Reason: Decodable { var reason: String }
}

import ChipsProtocol
import Foundation
import Logging
import PurseAPNs
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit
import Synchronization

/// Tally and chit notices as APNs pushes, for users whose app is not connected.
///
/// Each notice to a user with registered devices queues one push per device, in the transaction
/// that made the change (a change that rolls back pushes nothing). The push job sends it through
/// the APNs client Cuti-E uses — unless the user's app has been connected within the presence
/// window, in which case the websocket notice already reached it and the push is skipped.
/// `410 Unregistered` retires the device; `429`/`5xx` are retried with backoff.
struct ChipsPushes: Sendable {
    static let jobKind = "chips.push"

    struct Payload: Codable { var push_id: String }

    let environment: ServerEnvironment
    let configuration: ChipsConfiguration

    /// Queues pushes of `notice` to its user's devices.
    func enqueue(_ notice: ChipsNotifier.Notice, in db: any DatabaseSession) async throws {
        guard configuration.apns != nil, let route = ChipsPushRoute(notice.data), let code = Self.messageCode(of: route) else { return }
        let devices = try await db.raw("SELECT device_token FROM chips_devices WHERE username = \(bind: notice.username) AND active = TRUE")
            .all().map { try $0.decode(column: "device_token", as: String.self) }
        // The words are read only for a user who has devices to push to.
        guard !devices.isEmpty,
              let (title, body) = Self.text(code, of: notice.data, messages: try await Self.messages(for: notice.username, in: db)) else { return }
        let now = environment.now()
        let data = JavaScriptJSON.stringify(.object(route.members))
        for device in devices {
            let id = UUID().uuidString.lowercased()
            try await db.raw("""
                INSERT INTO chips_pushes (id, username, device_token, title, body, data, created_at, updated_at)
                VALUES (\(bind: id), \(bind: notice.username), \(bind: device), \(bind: title), \(bind: body), \(bind: data),
                        \(bind: now.epochMillis), \(bind: now.epochMillis))
                """).run()
            try await environment.jobs.enqueue(kind: Self.jobKind, payload: Payload(push_id: id), runAt: now, maxAttempts: 8, in: db)
        }
    }

    /// The app's texts (`mychips.chark` messages) in the user's language, English where it
    /// has none: `code → (title, help)`.
    static func messages(for username: String, in db: any DatabaseSession) async throws -> [String: (title: String, help: String)] {
        let language = try await db.raw("SELECT language FROM chips_users WHERE username = \(bind: username)").first()?
            .decode(column: "language", as: String.self) ?? "eng"
        var messages: [String: (title: String, help: String)] = [:]
        for code in language == "eng" ? ["eng"] : ["eng", language] {
            guard let row = try await db.raw("SELECT messages FROM chips_lang WHERE obj = 'mychips.chark' AND language = \(bind: code)").first(),
                  let list = try? StrictJSON.parse(try row.decode(column: "messages", as: String.self).utf8).arrayValue else { continue }
            for item in list {
                guard let code = item["code"]?.stringValue, let title = item["title"]?.stringValue else { continue }
                messages[code] = (title, item["help"]?.stringValue ?? title)
            }
        }
        return messages
    }

    /// Which of the app's push messages a notice is: a tally offer, a request to pay, a payment
    /// received, a tally opened or closed. Nil for notices the user needs no push for.
    static func messageCode(of route: ChipsPushRoute) -> String? {
        switch route.state {
        case .tally(let state):
            if route.reason == "invoice" { return "pshinvoice" }
            switch state {
            case .partnerOffer: return "pshoffer"
            case .partnerDraft: return "pshjoined"
            case .open: return "pshopen"
            case .void: return "pshvoid"
            case .closing, .close: return "pshclose"
            default: return nil
            }
        case .chit(let state):
            switch state {
            case .requestToPay: return "pshreq"
            case .assetGood: return "pshpaid"
            case .assetVoid, .liabilityVoid: return "pshrefused"
            case .liabilityGood: return "pshreqpaid"
            default: return nil
            }
        }
    }

    /// What the push with message `code` says, from the app's messages in the user's language.
    static func text(_ code: String, of data: JSONValue, messages: [String: (title: String, help: String)]) -> (title: String, body: String)? {
        guard let message = messages[code] else { return nil }
        let partner = partnerName(data["object"], holder: data["tally_type"]?.stringValue) ?? messages["partner"]?.title ?? "Your partner"
        let units = data["object"]?["units"]?.int64Value.map { DecimalAmount.format($0, decimals: 3) + " CHIP" } ?? ""
        let memo = (data["object"]?["memo"] ?? data["memo"])?.stringValue.map { ": " + String($0.prefix(120)) } ?? ""
        let body = message.help.replacingOccurrences(of: "{partner}", with: partner).replacingOccurrences(of: "{units}", with: units)
            .replacingOccurrences(of: "{memo}", with: memo)
        return (message.title, body)
    }

    /// The partner's name from a tally notice's record: the certificate of the end the
    /// notified holder does not hold.
    static func partnerName(_ object: JSONValue?, holder: String?) -> String? {
        let side = holder == "stock" ? "foil" : "stock"
        guard let name = object?[side]?["cert"]?["name"] else { return nil }
        if let text = name.stringValue { return text }
        let parts = [name["first"]?.stringValue, name["surname"]?.stringValue].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: " ")
    }

    /// The push job: sends one queued push, or skips it while the user's app is connected.
    func run(_ job: Job, client: APNsClient) async throws {
        let payload = try job.decode(Payload.self)
        let database = environment.database
        let window = Int64(configuration.presenceWindow * 1000)
        let now = environment.now().epochMillis
        guard let push = try await database.read({ db -> (username: String, token: String, title: String, body: String, data: String, present: Bool)? in
            guard let row = try await db.raw("SELECT username, device_token, title, body, data FROM chips_pushes WHERE id = \(bind: payload.push_id) AND status = 'queued'").first()
            else { return nil }
            let username = try row.decode(column: "username", as: String.self)
            let present = try await db.raw("SELECT 1 AS present FROM chips_presence WHERE username = \(bind: username) AND seen_at > \(bind: now - window)").first() != nil
            return (username, try row.decode(column: "device_token", as: String.self), try row.decode(column: "title", as: String.self),
                    try row.decode(column: "body", as: String.self), try row.decode(column: "data", as: String.self), present)
        }) else { return }
        if push.present {
            try await database.transaction { db in
                try await db.raw("UPDATE chips_pushes SET status = 'skipped', reason = 'connected', updated_at = \(bind: now) WHERE id = \(bind: payload.push_id)").run()
            }
            return
        }
        let extra = (try? StrictJSON.parse(push.data.utf8))?.objectValue ?? [:]
        var notification = APNsNotification(deviceToken: push.token, topic: configuration.pushTopic, pushType: .alert, priority: 10,
                                             expiration: environment.now().addingTimeInterval(24 * 3600), collapseID: nil,
                                             payload: APNsNotification.alertPayload(title: push.title, body: push.body, badge: nil, extra: extra))
        notification.id = payload.push_id
        let outcome = await client.send(notification)
        let lastTry = job.attempts + 1 >= job.maxAttempts
        try await database.transaction { db in
            try await outcome.record(in: "chips_pushes", id: payload.push_id, lastTry: lastTry, now: now, on: db)
            if case .unregistered = outcome {
                try await db.raw("""
                    UPDATE chips_devices SET active = FALSE, updated_at = \(bind: now) WHERE username = \(bind: push.username) AND device_token = \(bind: push.token)
                    """).run()
            }
        }
        if case .retry(let reason) = outcome {
            environment.logger.warning("APNs asked to retry a MyCHIPs push", metadata: ["push": "\(payload.push_id)", "reason": "\(reason)"])
            throw APNsRetryLater(reason)
        }
    }

    /// Registers (or retires) a device of the user for pushes: the `push` action of
    /// `mychips.users_v_me` with options `{device_token, enable}`.
    static func register(username: String, token: String, enable: Bool, now: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO chips_devices (username, device_token, active, created_at, updated_at)
            VALUES (\(bind: username), \(bind: token), \(bind: enable), \(bind: now), \(bind: now))
            ON CONFLICT (username, device_token) DO UPDATE SET active = excluded.active, updated_at = excluded.updated_at
            """).run()
    }
}

/// The open websocket connections, by user: a connection is seen when it opens and every
/// minute while it stays open, and removed when it closes. A replica that stops without closing
/// its connections leaves rows that age out of the presence window.
struct ChipsPresence: Sendable {
    let database: Database
    let now: @Sendable () -> Date

    func seen(_ connection: String, username: String) async {
        let millis = now().epochMillis
        try? await database.transaction { db in
            try await db.raw("""
                INSERT INTO chips_presence (connection_id, username, seen_at) VALUES (\(bind: connection), \(bind: username), \(bind: millis))
                ON CONFLICT (connection_id) DO UPDATE SET seen_at = excluded.seen_at
                """).run()
        }
    }

    func gone(_ connection: String) async {
        try? await database.transaction { db in
            try await db.raw("DELETE FROM chips_presence WHERE connection_id = \(bind: connection)").run()
        }
    }
}

/// The APNs client, made when the module mounts, for the push jobs.
final class ChipsPushClient: Sendable {
    let client = Mutex<APNsClient?>(nil)
}

import Foundation
import PurseAPNs
import Logging
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// The push job: sends one queued push (`cutie_pushes`) through APNs and records what happened.
///
/// `410 Unregistered` deactivates the device's push registration; `429` and `5xx` (and no
/// answer) throw, so the job queue tries again with backoff; any other refusal is recorded with
/// Apple's `reason` and not retried. The push's row id is its `apns-id`, the same on every try.
struct PushDelivery: Sendable {
    static let jobKind = "cutie.push"

    struct Payload: Codable { var push_id: String }

    let environment: ServerEnvironment
    let client: APNsClient

    func run(_ job: Job) async throws {
        let payload = try job.decode(Payload.self)
        let database = environment.database
        guard let push = try await database.read({ db in try await Self.pending(payload.push_id, in: db) }) else { return }
        let notification = APNsNotification(
            deviceToken: push.token, topic: push.topic, pushType: .alert, priority: 10,
            expiration: environment.now().addingTimeInterval(24 * 3600), collapseID: nil,
            payload: APNsNotification.alertPayload(
                title: push.title, body: Self.preview(push.body), badge: push.badge, extra: ["conversation_id": .string(push.conversationID.rawValue)]))
        var sending = notification
        sending.id = payload.push_id
        let outcome = await client.send(sending)
        let now = environment.now().epochMillis
        let lastTry = job.attempts + 1 >= job.maxAttempts
        try await database.transaction { db in
            try await outcome.record(in: "cutie_pushes", id: payload.push_id, lastTry: lastTry, now: now, on: db)
            if case .unregistered = outcome {
                try await db.raw("""
                    UPDATE cutie_push_tokens SET active = FALSE, updated_at = \(bind: now)
                    WHERE app_id = \(bind: push.appID) AND push_token = \(bind: push.token)
                    """).run()
            }
        }
        if case .retry(let reason) = outcome {
            environment.logger.warning("APNs asked to retry", metadata: ["push": "\(payload.push_id)", "reason": "\(reason)"])
            throw APNsRetryLater(reason)
        }
    }

    struct Pending {
        var appID: String
        var token: String
        var topic: String
        var conversationID: ConversationID
        var title: String
        var body: String
        var badge: Int
    }

    /// The push and what it says, while it is still queued.
    static func pending(_ id: String, in db: any DatabaseSession) async throws -> Pending? {
        guard let row = try await db.raw("""
            SELECT p.app_id, p.push_token, p.conversation_id, a.bundle_id, a.name AS app_name, c.title, c.group_id, m.message, m.sender_name
            FROM cutie_pushes p JOIN cutie_apps a ON a.id = p.app_id JOIN cutie_conversations c ON c.id = p.conversation_id
            JOIN cutie_messages m ON m.id = p.message_id
            WHERE p.id = \(bind: id) AND p.status = 'queued'
            """).first() else { return nil }
        let appName = try row.decode(column: "app_name", as: String.self)
        let sender = try row.decode(column: "sender_name", as: String?.self)
        let conversationTitle = try row.decode(column: "title", as: String?.self)
        let title = sender.map { "\($0) (\(appName) support)" } ?? "\(appName) support"
        let body = (conversationTitle.map { "\($0): " } ?? "") + (try row.decode(column: "message", as: String.self))
        return Pending(appID: try row.decode(column: "app_id", as: String.self), token: try row.decode(column: "push_token", as: String.self),
                       topic: try row.decode(column: "bundle_id", as: String.self),
                       conversationID: try row.decode(column: "conversation_id", as: ConversationID.self, of: "cutie_pushes"), title: title, body: body,
                       badge: try await ConversationStore().badge(group: try row.decode(column: "group_id", as: String.self), in: db))
    }

    /// At most 180 characters: the payload stays far below APNs' 4 KB whatever the message.
    static func preview(_ text: String) -> String {
        text.count <= 180 ? text : String(text.prefix(179)) + "…"
    }
}

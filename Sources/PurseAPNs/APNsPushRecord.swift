import PurseDatabase
import PurseFormats
import SQLKit

/// Where a push in a service's push table stands.
public enum PushStatus: String, WireChoice {
    /// Waiting for its (next) try.
    case queued
    /// APNs accepted it (`apns_id`).
    case sent
    /// APNs refused it for good, or its last try failed.
    case failed
    /// APNs says the device token is no longer valid.
    case unregistered
}

extension APNsOutcome {
    /// Records what APNs did with a push in a service's push table — a table with `id`,
    /// `status` (`queued`, `sent`, `unregistered`, `failed`), `apns_id`, `reason`, `attempts` and
    /// `updated_at` — in the caller's transaction. A push asked to be retried stays `queued` until
    /// its last try.
    public func record(in table: String, id: String, lastTry: Bool, now: Int64, on db: any DatabaseSession) async throws {
        switch self {
        case .sent(let apnsID):
            try await db.raw("""
                UPDATE \(unsafeRaw: table) SET status = \(bind: PushStatus.sent.rawValue), apns_id = \(bind: apnsID), reason = NULL, attempts = attempts + 1, updated_at = \(bind: now)
                WHERE id = \(bind: id)
                """).run()
        case .unregistered(let reason):
            try await db.raw("""
                UPDATE \(unsafeRaw: table) SET status = \(bind: PushStatus.unregistered.rawValue), reason = \(bind: reason), attempts = attempts + 1, updated_at = \(bind: now)
                WHERE id = \(bind: id)
                """).run()
        case .retry(let reason):
            try await db.raw("""
                UPDATE \(unsafeRaw: table) SET status = \(bind: (lastTry ? PushStatus.failed : .queued).rawValue), reason = \(bind: reason), attempts = attempts + 1,
                    updated_at = \(bind: now)
                WHERE id = \(bind: id)
                """).run()
        case .failed(let status, let reason):
            try await db.raw("""
                UPDATE \(unsafeRaw: table) SET status = \(bind: PushStatus.failed.rawValue), reason = \(bind: "\(status) \(reason)"), attempts = attempts + 1, updated_at = \(bind: now)
                WHERE id = \(bind: id)
                """).run()
        }
    }
}

/// A push APNs asked to be sent again later (429, 5xx, no answer): the job queue retries it with backoff.
public struct APNsRetryLater: Error, CustomStringConvertible {
    public var description: String

    public init(_ reason: String) { description = "APNs: " + reason }
}

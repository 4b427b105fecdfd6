import Foundation
import PurseDatabase
import PurseServer
import SQLKit

/// Who spent an app's monthly feedback, and what support does about it: the month's
/// conversations by device and by network, blocks on either, and quota given back. Each method
/// runs in the session it is given.
struct QuotaStore: Sendable {
    enum BlockKind: String, Sendable, CaseIterable { case device, address }

    struct Spender: Sendable, Encodable, Equatable {
        /// The identity's id (`device`) or the hashed network (`address`): neither is a credential.
        var id: String
        var conversations: Int64
        var blocked: Bool
    }

    /// The period's conversations of `app` (from `start` to `end`, Unix ms) by device and by
    /// network, most first, at most `limit` of each.
    func spenders(app: String, start: Int64, end: Int64, limit: Int, in db: any DatabaseSession) async throws -> (devices: [Spender], addresses: [Spender]) {
        func list(_ column: String, kind: BlockKind) async throws -> [Spender] {
            try await db.raw("""
                SELECT c.\(unsafeRaw: column) AS spender, COUNT(*) AS conversations, MAX(CASE WHEN b.value IS NULL THEN 0 ELSE 1 END) AS blocked
                FROM cutie_conversations c
                LEFT JOIN cutie_blocks b ON b.app_id = c.app_id AND b.kind = \(bind: kind.rawValue) AND b.value = c.\(unsafeRaw: column)
                WHERE c.app_id = \(bind: app) AND c.created_at >= \(bind: start) AND c.created_at < \(bind: end) AND c.\(unsafeRaw: column) IS NOT NULL
                GROUP BY c.\(unsafeRaw: column) ORDER BY conversations DESC, spender LIMIT \(bind: limit)
                """).all().map { row in
                Spender(id: try row.decode(column: "spender", as: String.self), conversations: try row.decode(column: "conversations", as: Int64.self),
                        blocked: try row.decode(column: "blocked", as: Int64.self) != 0)
            }
        }
        return (try await list("device_id", kind: .device), try await list("address_key", kind: .address))
    }

    /// The period's conversations from one device or network.
    func conversations(app: String, kind: BlockKind, value: String, start: Int64, end: Int64, in db: any DatabaseSession) async throws -> Int64 {
        let column = kind == .device ? "device_id" : "address_key"
        return try await db.raw("""
            SELECT COUNT(*) AS n FROM cutie_conversations
            WHERE app_id = \(bind: app) AND \(unsafeRaw: column) = \(bind: value) AND created_at >= \(bind: start) AND created_at < \(bind: end)
            """).first()?.decode(column: "n", as: Int64.self) ?? 0
    }

    /// Blocks a device or a network; false when it was blocked already.
    func block(app: String, kind: BlockKind, value: String, by admin: String, now: Int64, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            INSERT INTO cutie_blocks (app_id, kind, value, created_at, created_by) VALUES (\(bind: app), \(bind: kind.rawValue), \(bind: value), \(bind: now), \(bind: admin))
            ON CONFLICT (app_id, kind, value) DO NOTHING RETURNING value
            """).first() != nil
    }

    func unblock(app: String, kind: BlockKind, value: String, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            DELETE FROM cutie_blocks WHERE app_id = \(bind: app) AND kind = \(bind: kind.rawValue) AND value = \(bind: value) RETURNING value
            """).first() != nil
    }

    func isBlocked(app: String, kind: BlockKind, value: String, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            SELECT 1 AS found FROM cutie_blocks WHERE app_id = \(bind: app) AND kind = \(bind: kind.rawValue) AND value = \(bind: value)
            """).first() != nil
    }

    /// Gives back up to `count` of the period's counted conversations (never below zero), and as
    /// much of a network's share when `addressKey` is given; how many were given back.
    func giveBack(app: String, period: String, count: Int64, addressKey: String?, in db: any DatabaseSession) async throws -> Int64 {
        guard count > 0 else { return 0 }
        let before = try await db.raw("SELECT received FROM cutie_usage WHERE app_id = \(bind: app) AND period = \(bind: period)").first()
            .map { try $0.decode(column: "received", as: Int64.self) } ?? 0
        let returned = min(count, before)
        guard returned > 0 else { return 0 }
        try await db.raw("""
            UPDATE cutie_usage SET received = received - \(bind: returned) WHERE app_id = \(bind: app) AND period = \(bind: period) AND received >= \(bind: returned)
            """).run()
        if let addressKey {
            try await db.raw("""
                UPDATE cutie_address_usage SET received = CASE WHEN received > \(bind: returned) THEN received - \(bind: returned) ELSE 0 END
                WHERE app_id = \(bind: app) AND period = \(bind: period) AND address_key = \(bind: addressKey)
                """).run()
        }
        return returned
    }
}

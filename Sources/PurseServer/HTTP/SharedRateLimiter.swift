import Foundation
import PurseDatabase
import SQLKit

/// A token bucket per key that holds for the whole service, whichever replica a request reaches:
/// `burst` requests at once, refilled at `perSecond`.
///
/// On PostgreSQL (several replicas on one database) the buckets are rows of `rate_buckets`, each
/// taken by one upsert that refills and draws in the same statement, so concurrent requests on
/// any replicas draw exactly `burst` tokens between them. A SQLite database has one server, so
/// there the buckets are that process's memory (``RateLimiter``) and a request costs no write.
/// Token counts are integers in millionths, so the arithmetic is exact on both engines.
public struct SharedRateLimiter: Sendable {
    /// The buckets' namespace (`cutie.admin.login`): limiters with different names never share.
    public let name: String
    public let perSecond: Double
    public let burst: Int
    let database: Database
    let local: RateLimiter

    static let unit: Int64 = 1_000_000

    public init(name: String, perSecond: Double, burst: Int, database: Database) {
        self.name = name
        self.perSecond = max(0.001, perSecond)
        self.burst = max(1, burst)
        self.database = database
        self.local = RateLimiter(perSecond: perSecond, burst: burst)
    }

    /// Takes a token for `key`: nil when the request may go, else the whole seconds to wait (at
    /// least 1, for `Retry-After`).
    public func take(_ key: String, now: Date = Date()) async throws -> Int? {
        if database.dialect.writesAreSerial { return local.take(key) }
        return try await database.transaction { db in try await draw(key, now: now, in: db) }
    }

    /// As ``take(_:now:)``, inside the caller's transaction: on PostgreSQL the token is drawn only
    /// if that transaction commits (a request refused later, or answered from its idempotency
    /// record, costs nothing), and the bucket's row stays locked until then, so keep `key` narrow.
    public func take(_ key: String, now: Date = Date(), in db: any DatabaseSession) async throws -> Int? {
        if database.dialect.writesAreSerial { return local.take(key) }
        return try await draw(key, now: now, in: db)
    }

    func draw(_ key: String, now: Date, in db: any DatabaseSession) async throws -> Int? {
        let capacity = Int64(burst) * Self.unit
        let perMillisecond = max(1, Int64((perSecond * 1000).rounded()))
        // No refill needs longer than this (and elapsed times are capped to it, so no overflow).
        let refillMillis = capacity / perMillisecond + 1
        let values: [SQLValue] = [.text(name + ":" + key), .integer(capacity), .integer(now.epochMillis), .integer(perMillisecond),
                                  .integer(refillMillis), .integer(Self.unit)]
        let rows = try await db.query(Self.draw, values)
        guard let row = rows.first else { return 1 }
        if try row.decode(column: "taken", as: Int64.self) == 1 {
            if Int.random(in: 0..<1000) == 0 { Task { try? await prune(now: now) } }
            return nil
        }
        let left = try row.decode(column: "micro_tokens", as: Int64.self)
        let millis = (Self.unit - left + perMillisecond - 1) / perMillisecond
        return max(1, Int((millis + 999) / 1000))
    }

    /// Forgets buckets idle for a day (they would be full again long before).
    func prune(now: Date) async throws {
        let cutoff = now.addingTimeInterval(-86_400).epochMillis
        _ = try await database.transaction { db in try await db.query(Self.forget, [.integer(cutoff)]) }
    }

    // $1 key, $2 capacity, $3 now (ms), $4 refill per ms, $5 longest useful elapsed time (ms), $6 one token.
    // Every SET expression reads the row as it was, so the refilled level is written out in each.
    static let refilled = """
        CASE WHEN rate_buckets.micro_tokens + (CASE WHEN $3 - rate_buckets.updated_at > $5 THEN $5
                                                    WHEN $3 > rate_buckets.updated_at THEN $3 - rate_buckets.updated_at ELSE 0 END) * $4 > $2
             THEN $2
             ELSE rate_buckets.micro_tokens + (CASE WHEN $3 - rate_buckets.updated_at > $5 THEN $5
                                                    WHEN $3 > rate_buckets.updated_at THEN $3 - rate_buckets.updated_at ELSE 0 END) * $4 END
        """
    static let draw = DatabaseStatement("""
        INSERT INTO rate_buckets (key, micro_tokens, updated_at, taken) VALUES ($1, $2 - $6, $3, 1)
        ON CONFLICT (key) DO UPDATE SET
            micro_tokens = CASE WHEN \(refilled) >= $6 THEN \(refilled) - $6 ELSE \(refilled) END,
            taken = CASE WHEN \(refilled) >= $6 THEN 1 ELSE 0 END,
            updated_at = CASE WHEN $3 > rate_buckets.updated_at THEN $3 ELSE rate_buckets.updated_at END
        RETURNING micro_tokens, taken
        """)
    static let forget = DatabaseStatement("DELETE FROM rate_buckets WHERE updated_at < $1 RETURNING key")
}

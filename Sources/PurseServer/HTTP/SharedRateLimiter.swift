import Foundation
import PurseDatabase
import SQLKit
import Synchronization

/// A token bucket per key that holds for the whole service, whichever replica a request reaches:
/// `burst` requests at once, refilled at `perSecond`.
///
/// On PostgreSQL (several replicas on one database) the buckets are rows of `rate_buckets`, each
/// taken by one upsert that refills and draws in the same statement, so concurrent requests on
/// any replicas draw exactly `burst` tokens between them. A SQLite database has one server, so
/// there the buckets are that process's memory (``RateLimiter``) and a request costs no write.
/// Token counts are integers in billionths, so the arithmetic is exact on both engines and a slow
/// refill (20 a day is 0.00023 a second) is kept as it is, not rounded up to a floor.
///
/// With a `batch` above one, a busy key does not queue every replica on its row: a draw takes up
/// to that many tokens, and the replica spends them from memory for the next requests until they
/// run out or ``leaseLifetime`` passes. Tokens a replica drew and did not spend are dropped, never
/// handed back or to another replica, so the service still admits no more than the bucket gives;
/// a busy replica may be refused while another holds a few tokens, which is the stricter side.
/// How many a draw asks for follows the demand: it doubles (up to `batch`) when a replica spent
/// its last draw in time, and halves when tokens were left over, so a quiet key draws one at a time.
public struct SharedRateLimiter: Sendable {
    /// The buckets' namespace (`cutie.admin.login`): limiters with different names never share.
    public let name: String
    public let perSecond: Double
    public let burst: Int
    /// The most tokens one draw takes from the shared bucket (1: exactly one per request).
    public let batch: Int
    let database: Database
    let local: RateLimiter
    let leases: Leases

    static let unit: Int64 = 1_000_000_000
    /// The slowest refill a bucket keeps: one billionth of a token a millisecond (0.086 a day).
    static let slowest = 1e-6
    /// How long a replica may spend tokens it drew.
    static let leaseLifetime: TimeInterval = 0.25

    public init(name: String, perSecond: Double, burst: Int, batch: Int = 1, database: Database) {
        self.name = name
        self.perSecond = max(Self.slowest, perSecond)
        self.burst = max(1, burst)
        self.batch = min(max(1, batch), max(1, burst))
        self.database = database
        self.local = RateLimiter(perSecond: perSecond, burst: burst)
        self.leases = Leases()
    }

    /// Takes a token for `key`: nil when the request may go, else the whole seconds to wait (at
    /// least 1, for `Retry-After`).
    public func take(_ key: String, now: Date = Date()) async throws -> Int? {
        if database.dialect.writesAreSerial { return local.take(key) }
        guard batch > 1 else { return try await database.transaction { db in try await draw(key, now: now, in: db) } }
        let want = leases.spend(key, now: now, batch: batch)
        guard want > 0 else { return nil }
        let (drawn, wait) = try await database.transaction { db in try await draw(key, upTo: want, now: now, in: db) }
        guard drawn > 0 else { return wait }
        leases.keep(key, drawn - 1, now: now)
        return nil
    }

    /// As ``take(_:now:)``, inside the caller's transaction: on PostgreSQL the token is drawn only
    /// if that transaction commits (a request refused later, or answered from its idempotency
    /// record, costs nothing), and the bucket's row stays locked until then, so keep `key` narrow.
    public func take(_ key: String, now: Date = Date(), in db: any DatabaseSession) async throws -> Int? {
        if database.dialect.writesAreSerial { return local.take(key) }
        return try await draw(key, now: now, in: db)
    }

    func draw(_ key: String, now: Date, in db: any DatabaseSession) async throws -> Int? {
        let (drawn, wait) = try await draw(key, upTo: 1, now: now, in: db)
        return drawn > 0 ? nil : wait
    }

    /// Draws up to `want` tokens (as many as the bucket holds, at most `want`): how many it drew,
    /// and when it drew none, the whole seconds until one is back.
    func draw(_ key: String, upTo want: Int, now: Date, in db: any DatabaseSession) async throws -> (drawn: Int, wait: Int) {
        let capacity = Int64(burst) * Self.unit
        let perMillisecond = max(1, Int64((perSecond * Double(Self.unit) / 1000).rounded()))
        // No refill needs longer than this (and elapsed times are capped to it, so no overflow).
        let refillMillis = capacity / perMillisecond + 1
        let values: [SQLValue] = [.text(name + "#" + key), .integer(capacity), .integer(now.epochMillis), .integer(perMillisecond),
                                  .integer(refillMillis), .integer(Self.unit), .integer(Int64(want))]
        let rows = try await db.query(Self.draw, values)
        guard let row = rows.first else { return (0, 1) }
        let drawn = try row.decode(column: "drawn", as: Int64.self)
        if drawn > 0 {
            if Int.random(in: 0..<1000) == 0 { Task { try? await prune(now: now) } }
            return (Int(min(drawn, Int64(want))), 0)
        }
        let left = try row.decode(column: "micro_tokens", as: Int64.self)
        let millis = (Self.unit - left + perMillisecond - 1) / perMillisecond
        return (0, max(1, Int((millis + 999) / 1000)))
    }

    /// Forgets buckets idle for a day (they would be full again long before).
    func prune(now: Date) async throws {
        let cutoff = now.addingTimeInterval(-86_400).epochMillis
        _ = try await database.transaction { db in try await db.query(Self.forget, [.integer(cutoff)]) }
    }

    // $1 key, $2 capacity, $3 now (ms), $4 refill per ms, $5 longest useful elapsed time (ms), $6 one token,
    // $7 the most tokens to draw (1 ≤ $7 ≤ burst).
    // Every SET expression reads the row as it was, so the refilled level is written out in each.
    static let refilled = """
        CASE WHEN rate_buckets.micro_tokens + (CASE WHEN $3 - rate_buckets.updated_at > $5 THEN $5
                                                    WHEN $3 > rate_buckets.updated_at THEN $3 - rate_buckets.updated_at ELSE 0 END) * $4 > $2
             THEN $2
             ELSE rate_buckets.micro_tokens + (CASE WHEN $3 - rate_buckets.updated_at > $5 THEN $5
                                                    WHEN $3 > rate_buckets.updated_at THEN $3 - rate_buckets.updated_at ELSE 0 END) * $4 END
        """
    /// Whole tokens drawn from the refilled level: as many as it holds, at most $7.
    static let drawable = "CASE WHEN (\(refilled)) / $6 < $7 THEN (\(refilled)) / $6 ELSE $7 END"
    static let draw = DatabaseStatement("""
        INSERT INTO rate_buckets (key, micro_tokens, updated_at, taken, drawn) VALUES ($1, $2 - $7 * $6, $3, 1, $7)
        ON CONFLICT (key) DO UPDATE SET
            micro_tokens = \(refilled) - (\(drawable)) * $6,
            taken = CASE WHEN \(drawable) >= 1 THEN 1 ELSE 0 END,
            drawn = \(drawable),
            updated_at = CASE WHEN $3 > rate_buckets.updated_at THEN $3 ELSE rate_buckets.updated_at END
        RETURNING micro_tokens, drawn
        """)
    static let forget = DatabaseStatement("DELETE FROM rate_buckets WHERE updated_at < $1 RETURNING key")
}

extension SharedRateLimiter {
    /// The tokens this replica drew and has not spent yet, per key, and how many its next draw
    /// asks for.
    final class Leases: Sendable {
        struct Lease {
            var tokens = 0
            var drawnAt: Date = .distantPast
            /// What the next draw asks for: doubles when a draw was spent in time, halves when
            /// one expired with tokens left.
            var nextDraw = 1
        }
        /// Leases kept at most; when there are more, the expired ones are dropped.
        static let maxLeases = 10_000
        private let leases = Mutex<[String: Lease]>([:])

        /// Spends a leased token: 0 when there was one, else how many tokens to draw.
        func spend(_ key: String, now: Date, batch: Int) -> Int {
            leases.withLock { leases in
                var lease = leases[key] ?? Lease()
                let live = now.timeIntervalSince(lease.drawnAt) < SharedRateLimiter.leaseLifetime && now >= lease.drawnAt
                if live, lease.tokens > 0 {
                    lease.tokens -= 1
                    leases[key] = lease
                    return 0
                }
                if lease.drawnAt != .distantPast {
                    lease.nextDraw = lease.tokens > 0 || !live ? max(1, lease.nextDraw / 2) : min(batch, lease.nextDraw * 2)
                }
                lease.tokens = 0
                leases[key] = lease
                return lease.nextDraw
            }
        }

        /// Keeps `tokens` drawn at `now` for the next requests of `key`.
        func keep(_ key: String, _ tokens: Int, now: Date) {
            leases.withLock { leases in
                var lease = leases[key] ?? Lease()
                lease.tokens += tokens
                lease.drawnAt = now
                leases[key] = lease
                if leases.count > Self.maxLeases {
                    leases = leases.filter { now.timeIntervalSince($0.value.drawnAt) < SharedRateLimiter.leaseLifetime }
                }
            }
        }
    }
}

import Synchronization

/// A token bucket per key: `burst` requests at once, refilled at `perSecond`. Answers whether a
/// request may go now, or how long until it may.
///
/// Kept in this process's memory: the buckets of a single server. A limit that must hold across
/// replicas is a ``SharedRateLimiter``, which uses this one where the database has one server.
public final class RateLimiter: Sendable {
    public let perSecond: Double
    public let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Buckets kept at most; full (idle) ones are dropped first when the map grows past it.
    static let maxBuckets = 100_000

    struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    public init(perSecond: Double, burst: Int) {
        self.perSecond = max(1e-6, perSecond)
        self.burst = Double(max(1, burst))
    }

    /// Takes a token for `key`: nil when the request may go, else the whole seconds to wait (at
    /// least 1, for `Retry-After`).
    public func take(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        buckets.withLock { buckets in
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = max(0, Double((now - bucket.updated).components.seconds) + Double((now - bucket.updated).components.attoseconds) / 1e18)
            bucket.tokens = min(burst, bucket.tokens + elapsed * perSecond)
            bucket.updated = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                buckets[key] = bucket
                if buckets.count > Self.maxBuckets { Self.prune(&buckets, now: now, perSecond: perSecond, burst: burst) }
                return nil
            }
            buckets[key] = bucket
            return max(1, Int(((1 - bucket.tokens) / perSecond).rounded(.up)))
        }
    }

    /// Drops the buckets that have refilled completely (they are as if new).
    static func prune(_ buckets: inout [String: Bucket], now: ContinuousClock.Instant, perSecond: Double, burst: Double) {
        buckets = buckets.filter { _, bucket in
            let idle = Double((now - bucket.updated).components.seconds)
            return bucket.tokens + idle * perSecond < burst
        }
    }
}

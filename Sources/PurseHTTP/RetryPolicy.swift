/// When and how long to wait before trying a request again.
///
/// Exponential backoff with jitter: attempt *n* (1-based) that failed waits
/// `min(maxDelay, baseDelay · 2^(n-1)) · jitter`, where jitter is a factor drawn from
/// `jitter` (default 0.5…1, "equal jitter"). A server's `Retry-After` replaces the computed
/// delay when it is at most `maxRetryAfter`; a longer one is not waited out but returned to the
/// caller as ``PurseError/rateLimited(retryAfter:message:)``.
public struct RetryPolicy: Sendable {
    /// Total tries, the first included. 1 disables retries.
    public var maxAttempts: Int
    public var baseDelay: Duration
    public var maxDelay: Duration
    public var maxRetryAfter: Duration
    public var jitter: ClosedRange<Double>
    /// Returns a number in 0..<1; injected for exact tests.
    public var random: @Sendable () -> Double

    public init(
        maxAttempts: Int = 3, baseDelay: Duration = .milliseconds(250), maxDelay: Duration = .seconds(8),
        maxRetryAfter: Duration = .seconds(30), jitter: ClosedRange<Double> = 0.5...1.0,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxRetryAfter = maxRetryAfter
        self.jitter = jitter
        self.random = random
    }

    public static let `default` = RetryPolicy()
    public static let none = RetryPolicy(maxAttempts: 1)

    /// The wait after failed attempt `attempt` (1-based), before jitter is applied to it.
    public func backoff(afterAttempt attempt: Int) -> Duration {
        let exponent = min(max(0, attempt - 1), 30)
        let raw = baseDelay * (1 << exponent)
        return raw > maxDelay ? maxDelay : raw
    }

    /// The wait after failed attempt `attempt`, jitter applied.
    public func delay(afterAttempt attempt: Int) -> Duration {
        let factor = jitter.lowerBound + (jitter.upperBound - jitter.lowerBound) * random()
        return backoff(afterAttempt: attempt) * factor
    }
}

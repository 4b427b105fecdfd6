/// What one poll found.
public enum PollStatus<Value: Sendable>: Sendable {
    /// Finished: stop polling and return the value.
    case done(Value)
    /// Not yet: poll again after the next interval.
    case pending
}

/// Polls an operation until it finishes, at a growing interval, a bounded number of times.
///
/// The first poll happens at once; after each `pending` the poller waits `interval`, then
/// `interval · multiplier`, … capped at `maxInterval`. Errors the operation throws end the polling
/// unless `retryErrors` accepts them (network blips), in which case they count as a pending poll.
public struct Poller: Sendable {
    public var interval: Duration
    public var multiplier: Double
    public var maxInterval: Duration
    public var maxAttempts: Int
    public var sleeper: Sleeper
    public var retryErrors: @Sendable (any Error) -> Bool

    public init(
        interval: Duration = .seconds(2), multiplier: Double = 1.5, maxInterval: Duration = .seconds(30),
        maxAttempts: Int = 30, sleeper: Sleeper = .live,
        retryErrors: @escaping @Sendable (any Error) -> Bool = { error in
            (error as? PurseError).map { [.offline, .timeout, .rateLimited].contains($0.kind) || $0.status == 503 } ?? false
        }
    ) {
        self.interval = interval
        self.multiplier = max(1, multiplier)
        self.maxInterval = maxInterval
        self.maxAttempts = max(1, maxAttempts)
        self.sleeper = sleeper
        self.retryErrors = retryErrors
    }

    /// Polls `operation` until it is done.
    /// - Returns: The value of the first `.done`.
    /// - Throws: ``PurseError/timeout`` after `maxAttempts` pending polls, ``PurseError/cancelled``
    ///   when the task is cancelled, or the operation's own error.
    public func poll<Value: Sendable>(_ operation: @Sendable () async throws -> PollStatus<Value>) async throws -> Value {
        var wait = interval
        for attempt in 1...maxAttempts {
            if Task.isCancelled { throw PurseError.cancelled }
            do {
                if case .done(let value) = try await operation() { return value }
            } catch let error where retryErrors(error) {
                // A transient failure: treated as "not yet".
            }
            guard attempt < maxAttempts else { break }
            do {
                try await sleeper.sleep(wait)
            } catch {
                throw PurseError.cancelled
            }
            wait = min(maxInterval, wait * multiplier)
        }
        throw PurseError.timeout("still pending after \(maxAttempts) checks")
    }
}

/// How client code waits. Injected so tests record waits instead of sleeping.
public struct Sleeper: Sendable {
    public var sleep: @Sendable (Duration) async throws -> Void

    public init(sleep: @escaping @Sendable (Duration) async throws -> Void) { self.sleep = sleep }

    /// Real time, via `ContinuousClock`. Throws `CancellationError` when the task is cancelled.
    public static let live = Sleeper { duration in try await Task.sleep(for: duration) }
}

extension Duration {
    /// Seconds as a `Double`, for display and arithmetic.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

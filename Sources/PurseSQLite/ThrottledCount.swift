/// Counts occurrences of something worth reporting, and says when to report: at the first one,
/// then at most once per `interval`, with how many happened since the last report.
struct ThrottledCount {
    let interval: Duration
    private var pending = 0
    private var lastReport: ContinuousClock.Instant?

    init(interval: Duration) { self.interval = interval }

    /// Counts one; returns the count to report (then starts again from zero), or nil to stay quiet.
    mutating func record(at now: ContinuousClock.Instant) -> Int? {
        pending += 1
        if let lastReport, now - lastReport < interval { return nil }
        defer { (pending, lastReport) = (0, now) }
        return pending
    }
}

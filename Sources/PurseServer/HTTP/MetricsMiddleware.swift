import HTTPTypes
import Foundation
import Hummingbird
import Metrics
import Prometheus
import PurseDatabase
import Synchronization

/// Request counts and latencies by route, method and status, recorded with swift-metrics into
/// the application's own Prometheus registry (no global bootstrap, so several servers can run
/// in one process, as tests do). The database's counters go to the same registry (``factory``).
public final class RequestMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// The factory every metric of this server is made with.
    public let factory: PrometheusMetricsFactory
    private let cache = Mutex<[Key: (Metrics.Counter, Metrics.Timer)]>([:])

    struct Key: Hashable { var route: String; var method: String; var status: Int }

    public init() {
        self.registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .seconds(2.5), .seconds(5),
        ]
        self.factory = factory
    }

    func record(route: String, method: String, status: Int, nanoseconds: Int64) {
        let key = Key(route: route, method: method, status: status)
        let (counter, timer) = cache.withLock { cache in
            if let found = cache[key] { return found }
            let dimensions = [("method", method), ("route", route), ("status", String(status))]
            let made = (
                Metrics.Counter(label: "purse_http_requests_total", dimensions: dimensions, factory: factory),
                Metrics.Timer(label: "purse_http_request_duration_seconds", dimensions: dimensions, factory: factory)
            )
            cache[key] = made
            return made
        }
        counter.increment()
        timer.recordNanoseconds(nanoseconds)
    }

    /// A job's failed attempt (`purse_jobs_failed_total`), and its death after the last one
    /// (`purse_jobs_dead_total`), by kind.
    func countJobFailure(kind: String, dead: Bool) {
        Metrics.Counter(label: "purse_jobs_failed_total", dimensions: [("kind", kind)], factory: factory).increment()
        if dead { Metrics.Counter(label: "purse_jobs_dead_total", dimensions: [("kind", kind)], factory: factory).increment() }
    }

    /// The Prometheus text exposition of everything recorded.
    public func exposition() -> String {
        var buffer = [UInt8]()
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}

public struct MetricsMiddleware: RouterMiddleware {
    public typealias Context = PurseRequestContext
    let metrics: RequestMetrics

    public init(metrics: RequestMetrics) { self.metrics = metrics }

    @concurrent public func handle(_ request: Request, context: Context, next: @concurrent (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        let (seconds, attoseconds) = elapsed.components
        // Unmatched paths share one label so scanners cannot blow up the series count.
        let route = context.endpointPath ?? "unmatched"
        metrics.record(
            route: route, method: request.method.rawValue, status: response.status.code,
            nanoseconds: seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        )
        return response
    }
}

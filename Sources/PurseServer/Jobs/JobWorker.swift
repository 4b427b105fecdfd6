import Foundation
import Logging
import PurseDatabase
import ServiceLifecycle

/// Handles one kind of job. Throwing schedules a retry.
public struct JobHandler: Sendable {
    public var kind: String
    /// Jobs of an ordered kind run one after another in the order they were enqueued (webhook
    /// deliveries, where a later event must not overtake an earlier one); others run concurrently.
    public var ordered: Bool
    /// Retry timing for this kind; the queue's when nil.
    public var backoff: JobBackoff?
    public var run: @Sendable (Job) async throws -> Void
    public init(kind: String, ordered: Bool = false, backoff: JobBackoff? = nil, run: @escaping @Sendable (Job) async throws -> Void) {
        self.kind = kind
        self.ordered = ordered
        self.backoff = backoff
        self.run = run
    }
}

/// Runs due jobs until graceful shutdown.
public struct JobWorker: Service {
    let queue: JobQueue
    let handlers: [String: JobHandler]
    let pollInterval: Duration
    let batchSize: Int
    let now: @Sendable () -> Date
    let logger: Logger
    /// Where failed attempts and dead jobs are counted (`purse_jobs_failed_total`,
    /// `purse_jobs_dead_total`, by kind), beside the requests' metrics.
    let metrics: RequestMetrics?

    public init(
        queue: JobQueue, handlers: [JobHandler], pollInterval: Duration = .milliseconds(250), batchSize: Int = 16,
        now: @escaping @Sendable () -> Date = Date.init, logger: Logger, metrics: RequestMetrics? = nil
    ) {
        self.queue = queue
        self.handlers = Dictionary(handlers.map { ($0.kind, $0) }, uniquingKeysWith: { _, last in last })
        self.pollInterval = pollInterval
        self.batchSize = batchSize
        self.now = now
        self.logger = logger
        self.metrics = metrics
    }

    public func run() async throws {
        guard !handlers.isEmpty else {
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                let worked = await self.runOnce()
                if worked == 0 {
                    await self.queue.wakeup.wait(upTo: self.pollInterval)
                }
            }
        }
    }

    /// Runs the jobs due now, batch after batch, until none is left or `batches` batches ran
    /// (a job that keeps failing is due again only after its backoff). Returns how many ran.
    @discardableResult
    public func runDue(batches: Int = 100) async -> Int {
        var total = 0
        for _ in 0..<batches {
            let ran = await runOnce()
            if ran == 0 { break }
            total += ran
        }
        return total
    }

    /// Claims and runs one batch. Returns how many jobs ran.
    @discardableResult
    public func runOnce() async -> Int {
        let jobs: [Job]
        do {
            jobs = try await queue.claim(kinds: Array(handlers.keys), limit: batchSize, now: now())
        } catch {
            logger.error("job claim failed", metadata: ["error": "\(error)"])
            return 0
        }
        let ordered = jobs.filter { handlers[$0.kind]?.ordered == true }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for job in ordered { await self.execute(job) }
            }
            for job in jobs where handlers[job.kind]?.ordered != true {
                group.addTask { await self.execute(job) }
            }
        }
        return jobs.count
    }

    private func execute(_ job: Job) async {
        guard let handler = handlers[job.kind] else { return }
        do {
            // The lease is renewed at a third of its length while the handler runs.
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await handler.run(job) }
                group.addTask {
                    while true {
                        try await Task.sleep(for: .seconds(self.queue.lease / 3))
                        do {
                            try await self.queue.renew(job, now: self.now())
                        } catch {
                            self.logger.warning("job lease renewal failed", metadata: ["job": "\(job.id)", "error": "\(error)"])
                        }
                    }
                }
                try await group.next()
                group.cancelAll()
            }
            try await queue.complete(job, now: now())
        } catch {
            let reason = String(String(describing: error).prefix(500))
            let state = try? await queue.fail(job, error: reason, now: now(), backoff: handler.backoff)
            metrics?.countJobFailure(kind: job.kind, dead: state == .dead)
            // The reason is what an operator needs first; it is also kept in jobs.last_error.
            let metadata: Logger.Metadata = [
                "job": "\(job.id)", "kind": "\(job.kind)", "attempt": "\(job.attempts)", "state": "\(state?.rawValue ?? "?")", "reason": "\(reason)",
            ]
            if state == .dead {
                logger.error("job dead after its last attempt", metadata: metadata)
            } else {
                logger.warning("job failed", metadata: metadata)
            }
        }
    }
}

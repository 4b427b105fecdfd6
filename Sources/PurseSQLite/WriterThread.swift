import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A thread of its own for SQLite's one writer: a `TaskExecutor` whose jobs run in order on one
/// OS thread, asked for at a higher scheduling priority than the rest of the process.
///
/// Every write waits for the writer, so while the kernel runs another thread in its place — an
/// event loop, the checkpointer, a request's JSON — every write waits for that thread too.
/// Measured before this (32 connections of write requests, 2 cores) the writer was runnable but not
/// running for ~30 % of its busy time. Its statements also block on file I/O, which no longer
/// takes one of the cooperative pool's few threads.
///
/// Raising the priority needs `CAP_SYS_NICE` (or a raised `RLIMIT_NICE`); without it the thread
/// runs at the normal priority and ``priorityRaised`` says so. Linux only: elsewhere it never changes.
final class WriterThread: TaskExecutor, @unchecked Sendable {
    /// Jobs waiting for the thread, and whether it was asked to stop; guarded by `condition`.
    private var jobs: [UnownedJob] = []
    private var stopping = false
    private var stopped = false
    private let condition = NSCondition()

    /// Whether the thread got the priority it asked for.
    private(set) var priorityRaised = false

    /// Starts the thread and returns once it has asked for its priority.
    /// - Parameter niceness: The thread's nice value (lower is more favoured; 0 is the default).
    init(name: String, niceness: Int32) {
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            #if canImport(Glibc)
            // On Linux a nice value belongs to a thread, and `who == 0` is the calling thread.
            priorityRaised = niceness != 0 && setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness) == 0
            #endif
            started.signal()
            run()
        }
        thread.name = name
        thread.start()
        started.wait()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        if stopped {
            condition.unlock()
            // Nothing runs here any more: the job (a task that still prefers this executor)
            // runs on the shared pool instead of waiting for ever.
            globalConcurrentExecutor.enqueue(job)
            return
        }
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Lets the thread finish: it runs what is queued and exits. Later jobs go to the shared pool.
    func stop() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        var batch: [UnownedJob] = []
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                stopped = true
                condition.unlock()
                return
            }
            swap(&batch, &jobs)
            condition.unlock()
            for job in batch { job.runSynchronously(on: executor) }
            batch.removeAll(keepingCapacity: true)
        }
    }
}

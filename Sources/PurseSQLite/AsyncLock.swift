import Synchronization

/// A mutual-exclusion lock for async code.
///
/// Released, the lock is free at once: a task that is already running may take it (“barging”)
/// while the longest waiter is woken to try again. Handing ownership straight to a waiter would
/// leave the lock held but idle until the scheduler got round to that waiter — under load that
/// wait was longer than the critical sections themselves, and every database session paid it.
/// A woken waiter that loses the race goes back to the head of the queue, so waiters are still
/// served in arrival order among themselves. Cancellation does not break the queue.
final class AsyncLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Bool, Never>] = []
        var head = 0

        mutating func enqueue(_ waiter: CheckedContinuation<Bool, Never>, first: Bool) {
            if !first {
                waiters.append(waiter)
            } else if head > 0 {
                head -= 1
                waiters[head] = waiter
            } else {
                waiters.insert(waiter, at: 0)
            }
        }

        mutating func dequeue() -> CheckedContinuation<Bool, Never>? {
            guard head < waiters.count else {
                waiters.removeAll(keepingCapacity: true)
                head = 0
                return nil
            }
            let next = waiters[head]
            head += 1
            if head > 64, head * 2 > waiters.count {
                waiters.removeFirst(head)
                head = 0
            }
            return next
        }
    }
    private let state = Mutex(State())

    init() {}

    func withLock<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        if tryAcquire() { return }
        var wokenBefore = false
        while true {
            // Resumed with `true` when the lock was taken while queueing, `false` when woken by
            // a release — then it must still be taken.
            let taken = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let takenNow = state.withLock { state -> Bool in
                    if !state.locked { state.locked = true; return true }
                    state.enqueue(continuation, first: wokenBefore)
                    return false
                }
                if takenNow { continuation.resume(returning: true) }
            }
            if taken || tryAcquire() { return }
            wokenBefore = true
        }
    }

    private func tryAcquire() -> Bool {
        state.withLock { state in
            if state.locked { return false }
            state.locked = true
            return true
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.locked = false
            return state.dequeue()
        }
        next?.resume(returning: false)
    }
}

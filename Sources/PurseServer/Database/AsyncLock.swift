import Synchronization

/// A FIFO mutual-exclusion lock for async code.
///
/// Waiters queue in arrival order, so a burst of requests cannot starve an earlier one.
/// Cancellation does not break the queue: a cancelled waiter still takes and releases its turn.
public final class AsyncLock: Sendable {
    private struct State {
        var locked = false
        var waiters: [CheckedContinuation<Void, Never>] = []
        var head = 0
    }
    private let state = Mutex(State())

    public init() {}

    public func withLock<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        await acquire()
        defer { release() }
        return try await body()
    }

    private func acquire() async {
        let acquired = state.withLock { state -> Bool in
            if !state.locked { state.locked = true; return true }
            return false
        }
        if acquired { return }
        await withCheckedContinuation { continuation in
            let acquiredNow = state.withLock { state -> Bool in
                if !state.locked { state.locked = true; return true }
                state.waiters.append(continuation)
                return false
            }
            if acquiredNow { continuation.resume() }
        }
    }

    private func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.head < state.waiters.count else {
                state.waiters.removeAll(keepingCapacity: true)
                state.head = 0
                state.locked = false
                return nil
            }
            let next = state.waiters[state.head]
            state.head += 1
            if state.head > 64, state.head * 2 > state.waiters.count {
                state.waiters.removeFirst(state.head)
                state.head = 0
            }
            return next  // ownership passes straight to the next waiter
        }
        next?.resume()
    }
}

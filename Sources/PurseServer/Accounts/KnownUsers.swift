import Foundation
import PurseDatabase
import Synchronization

/// Tells whether the user a valid session token names exists, for ``SessionAuthenticator``:
/// a token outlives nothing it was not meant to — a token signed for a user that is not in
/// this database (another deployment with the same secret, a database restored from before
/// the account) signs nobody in, on every route alike.
///
/// Every authenticated request asks. A request that changes something (any method but GET, HEAD
/// and OPTIONS) is always looked up, so a deleted user's session moves nothing and no write
/// meets a missing user; reads take users found in the last ``lifetime`` (5 s; a bounded set that
/// starts again empty when full). A user not found is asked about again each time.
public final class KnownUsers: Sendable {
    let accounts: AccountStore
    let lifetime: Duration
    let capacity: Int
    private let found = Mutex<[UserID: ContinuousClock.Instant]>([:])

    public init(accounts: AccountStore, lifetime: Duration = .seconds(5), capacity: Int = 100_000) {
        self.accounts = accounts
        self.lifetime = lifetime
        self.capacity = max(0, capacity)
    }

    /// Whether `id` names a user of this database; `fresh` asks the database whatever is remembered.
    public func exists(_ id: UserID, fresh: Bool = false) async throws -> Bool {
        let now = ContinuousClock.now
        if !fresh, found.withLock({ $0[id].map { now < $0 } ?? false }) { return true }
        guard try await accounts.find(id: id) != nil else { return false }
        guard capacity > 0 else { return true }
        found.withLock { found in
            if found.count >= capacity { found.removeAll(keepingCapacity: true) }
            found[id] = now + lifetime
        }
        return true
    }
}

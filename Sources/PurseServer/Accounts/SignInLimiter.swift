import Foundation
import PurseDatabase

/// Backs off password guessing on `/auth/login` without locking the real user out.
///
/// Every judged sign-in draws a token from two buckets that hold across replicas
/// (``SharedRateLimiter``): the account's (10 at once, then one every 3 s) and the client
/// address's (30 at once, then one a second). With either empty the answer is 429 with
/// `Retry-After`, before any password is checked, so 200 guesses at one account in half a minute
/// get about 20 verdicts instead of 200. Nothing is locked: the real user, from any address,
/// waits at most a few seconds for the account's bucket to refill, and a right password is
/// judged like a wrong one.
public struct SignInLimiter: Sendable {
    let perAccount: SharedRateLimiter
    let perAddress: SharedRateLimiter

    public init(name: String, database: Database, accountBurst: Int = 10, accountPerSecond: Double = 1.0 / 3,
                addressBurst: Int = 30, addressPerSecond: Double = 1) {
        perAccount = SharedRateLimiter(name: name + ".account", perSecond: accountPerSecond, burst: accountBurst, database: database)
        perAddress = SharedRateLimiter(name: name + ".address", perSecond: addressPerSecond, burst: addressBurst, database: database)
    }

    /// Draws for one sign-in attempt at `account` from `address`.
    /// - Throws: ``APIError`` 429 with `Retry-After` when either bucket is empty.
    public func admit(account: String, address: String?, now: Date) async throws {
        if let address, let wait = try await perAddress.take(address, now: now) {
            throw APIError.tooManyRequests("Too many sign-in attempts from this address; try again in \(wait) s", retryAfter: wait)
        }
        if let wait = try await perAccount.take(account, now: now) {
            throw APIError.tooManyRequests("Too many sign-in attempts for this account; try again in \(wait) s", retryAfter: wait)
        }
    }
}

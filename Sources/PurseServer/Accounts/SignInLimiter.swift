import Foundation
import PurseDatabase
import PurseFormats

/// Backs off password guessing without locking the real user out (OWASP's "device cookies").
///
/// Every judged sign-in draws tokens, before any password is checked, from buckets that hold
/// across replicas (``SharedRateLimiter``). Which buckets depends on whether the client has signed
/// in to this account before:
///
/// - **A known client** presents the *sign-in device* credential it was given at its last good
///   sign-in (``deviceCredential(for:)``): sealed by the server, naming the account, unforgeable.
///   It draws only from that credential's own bucket (10 at once, then one every 3 s). Guessing
///   from anywhere else never touches it, so the real user on a device they used before always
///   gets a verdict.
/// - **An unknown client** draws from its address's bucket (30 at once, then one a second), the
///   account's bucket at that address (10, then one every 3 s), and the account's bucket for
///   unknown clients everywhere (20, then one every 3 s). Guessing from many addresses slows every
///   unknown client of the account, never a known one.
///
/// An account has one set of buckets whatever identifier it is named by (e-mail or phone): the
/// caller passes the account's id when the identifier names one. A right password is judged like
/// a wrong one and draws alike, so the buckets tell nothing about which attempts were right.
public struct SignInLimiter: Sendable {
    let perAddress: SharedRateLimiter
    let perAccountAddress: SharedRateLimiter
    let perAccount: SharedRateLimiter
    let perDevice: SharedRateLimiter
    let sealer: SecretSealer
    let purpose: String

    public init(name: String, database: Database, sealer: SecretSealer, accountBurst: Int = 10, accountPerSecond: Double = 1.0 / 3,
                addressBurst: Int = 30, addressPerSecond: Double = 1, unknownClientsBurst: Int = 20) {
        perAddress = SharedRateLimiter(name: name + ".address", perSecond: addressPerSecond, burst: addressBurst, database: database)
        perAccountAddress = SharedRateLimiter(name: name + ".account-address", perSecond: accountPerSecond, burst: accountBurst, database: database)
        perAccount = SharedRateLimiter(name: name + ".account", perSecond: accountPerSecond, burst: unknownClientsBurst, database: database)
        perDevice = SharedRateLimiter(name: name + ".device", perSecond: accountPerSecond, burst: accountBurst, database: database)
        self.sealer = sealer
        purpose = name + ".device"
    }

    /// Draws for one sign-in attempt at `account` (the account's id where the identifier names
    /// one) from `address`, by a client that presents `device` (a credential from
    /// ``deviceCredential(for:)``, or nil).
    /// - Throws: ``APIError`` 429 with `Retry-After` when a bucket is empty.
    public func admit(account: String, address: String?, device: String?, now: Date) async throws {
        if let device, let nonce = knownDevice(device, account: account) {
            if let wait = try await perDevice.take(nonce, now: now) {
                throw APIError.tooManyRequests("Too many sign-in attempts from this device; try again in \(wait) s", retryAfter: wait)
            }
            return
        }
        if let address, let wait = try await perAddress.take(address, now: now) {
            throw APIError.tooManyRequests("Too many sign-in attempts from this address; try again in \(wait) s", retryAfter: wait)
        }
        if let address, let wait = try await perAccountAddress.take(account + "|" + address, now: now) {
            throw APIError.tooManyRequests("Too many sign-in attempts for this account; try again in \(wait) s", retryAfter: wait)
        }
        if let wait = try await perAccount.take(account, now: now) {
            throw APIError.tooManyRequests(
                "Too many sign-in attempts for this account from new devices; try again in \(wait) s, or from a device that has signed in before",
                retryAfter: wait)
        }
    }

    /// The credential a client keeps after a good sign-in to `account`, and presents at the next
    /// one: the account and a random nonce, sealed (AES-GCM) so that no one can make or alter one.
    public func deviceCredential(for account: String) throws -> String {
        try sealer.seal(account + "\n" + RandomID.hex(bytes: 16), column: purpose)
    }

    /// The nonce of `credential` when it is one of ours for `account`.
    func knownDevice(_ credential: String, account: String) -> String? {
        guard credential.utf8.count <= 512, credential.hasPrefix(SecretSealer.prefix),
              let opened = try? sealer.open(credential, column: purpose) else { return nil }
        let parts = opened.split(separator: "\n", maxSplits: 1)
        guard parts.count == 2, parts[0] == account else { return nil }
        return String(parts[1])
    }
}

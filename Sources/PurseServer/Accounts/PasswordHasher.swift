import HummingbirdBcrypt
import NIOPosix
import PurseDatabase

/// bcrypt hashing off the event loops (a hash takes tens of milliseconds by design).
public struct PasswordHasher: Sendable {
    public let cost: UInt8

    public init(cost: UInt8) { self.cost = cost }

    public func hash(_ secret: String) async throws -> String {
        let cost = self.cost
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(secret, cost: cost) }
    }

    public func verify(_ secret: String, hash: String) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(secret, hash: hash) }
    }
}

import Foundation
import NexusPay
@testable import NexusService
import PurseDatabase
import PurseServer
import PurseTestSupport
import SQLKit
import Testing

@Suite("Nexus: challenge pruning")
struct ChallengePruningTests {
    /// Challenges a day past expiry are deleted in the background; newer ones, used or not, stay.
    @Test func longExpiredChallengesArePruned() async throws {
        try await NexusHarness.withServer { harness in
            let user = try await harness.enrolledUser()
            _ = try await user.nexus.authenticationOptions()
            _ = try await user.nexus.authenticationOptions()
            let pruner = ChallengePruner(store: NexusStore(), environment: harness.server.environment)
            #expect(try await pruner.prune() == 0)

            harness.server.clock.advance(by: 86_400 + 600)
            let fresh = try await user.nexus.authenticationOptions()
            #expect(try await pruner.prune() == 3)  // the enrolment's challenge and the first two options
            let left = try await harness.server.environment.database.read { db in
                try await db.raw("SELECT challenge FROM nexus_challenges").all().map { try $0.decode(column: "challenge", as: String.self) }
            }
            #expect(left == [fresh.challenge])
        }
    }
}

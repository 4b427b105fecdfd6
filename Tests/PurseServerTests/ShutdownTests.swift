import Foundation
import Hummingbird
import Logging
import PurseDatabase
import PurseServer
import PurseTestSupport
import SQLKit
import ServiceLifecycle
import Synchronization
import Testing

/// Graceful shutdown stops the server's services in reverse order, and the database must close
/// only after every service that uses it has returned. (Closing it first once left a PostgreSQL
/// server waiting forever for a connection from a pool that was gone.)
@Suite("Graceful shutdown")
struct ShutdownTests {
    /// What the module's service managed to do on its way out.
    final class Outcome: Sendable {
        let value = Mutex<Result<Int, any Error>?>(nil)
        let started = Mutex(false)
    }

    /// A module whose service writes to the database when asked to stop, as a write-behind cache
    /// flushing itself would.
    struct FlushOnShutdownModule: PurseModule {
        let outcome: Outcome
        let id = "shutdown-test"
        let title = "Shutdown test"
        let summary = "Writes to the database while the server stops."
        var migrations: [Migration] {
            [Migration("9000_shutdown_test", ["CREATE TABLE shutdown_test_flushes (id INTEGER PRIMARY KEY)"])]
        }

        func mount(on router: Router<PurseRequestContext>, environment: ServerEnvironment) async throws -> [any Service] {
            [FlushService(database: environment.database, outcome: outcome)]
        }
    }

    struct FlushService: Service {
        let database: Database
        let outcome: Outcome

        func run() async throws {
            outcome.started.withLock { $0 = true }
            try? await gracefulShutdown()
            let result: Result<Int, any Error>
            do {
                result = .success(try await database.transaction { db in
                    try await db.raw("INSERT INTO shutdown_test_flushes (id) VALUES (1)").run()
                    return try await db.raw("SELECT COUNT(*) AS n FROM shutdown_test_flushes").first()?.decode(column: "n", as: Int.self) ?? 0
                })
            } catch {
                result = .failure(error)
            }
            outcome.value.withLock { $0 = result }
        }
    }

    @Test(arguments: TestEngines.all)
    func servicesStillHaveTheDatabaseWhileTheyStop(engine: DatabaseEngine) async throws {
        let outcome = Outcome()
        let server = try await TestServer.make(engine: engine, modules: [FlushOnShutdownModule(outcome: outcome)])
        let application = server.app.application
        let group = ServiceGroup(configuration: .init(services: [application], logger: application.logger))
        let running = Task { try await group.run() }
        for _ in 0..<200 where !outcome.started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(outcome.started.withLock { $0 })
        await group.triggerGracefulShutdown()
        try await running.value
        await server.shutdown()
        let flushed = try #require(outcome.value.withLock { $0 })
        #expect(try flushed.get() == 1)
    }

    /// Once shut down, a database refuses new sessions at once, on either engine.
    @Test(arguments: TestEngines.all)
    func sessionsAfterShutdownFailAtOnce(engine: DatabaseEngine) async throws {
        let testDatabase = try await TestDatabase.make(engine)
        let database = try await Database.open(url: testDatabase.url, logger: Logger(label: "test"))
        try await database.transaction { db in try await db.raw("SELECT 1 AS one").run() }
        await database.shutdown()
        await database.shutdown()
        for attempt in ["read", "transaction"] {
            let error = await #expect(throws: DatabaseClosedError.self, "\(attempt) after shutdown") {
                if attempt == "read" {
                    try await database.read { db in try await db.raw("SELECT 1 AS one").run() }
                } else {
                    try await database.transaction { db in try await db.raw("SELECT 1 AS one").run() }
                }
            }
            #expect(error.map { "\($0)" } == "the database is closed")
        }
        await testDatabase.dispose()
    }
}

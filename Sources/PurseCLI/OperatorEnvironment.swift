import Logging
import PurseDatabase
import PurseServer

/// Operator commands (`purse chippi keys …`, `purse cutie admin …`, `purse nexus products sync`)
/// open the server's database as `purse serve` does — DATABASE_URL, PURSE_DATA_DIR, the
/// migrations — but mount nothing: a command never changes what a running server set up, such
/// as its sandbox merchant's keys or their file.
enum OperatorEnvironment {
    /// Runs `work` on the server's database, then closes it.
    static func with<T: Sendable>(_ work: (ServerEnvironment) async throws -> T) async throws -> T {
        var configuration = try PurseConfiguration.fromEnvironment()
        configuration.logLevel = .error
        let environment = try await openEnvironment(configuration: configuration, modules: PurseModules.all(configuration: configuration))
        do {
            let result = try await work(environment)
            await environment.database.shutdown()
            return result
        } catch {
            await environment.database.shutdown()
            throw error
        }
    }
}

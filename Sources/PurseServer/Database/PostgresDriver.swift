import Foundation
import Logging
import NIOSSL
import PostgresKit
import PostgresNIO
import SQLKit
import Synchronization

/// PostgreSQL through postgres-nio's connection pool; each session leases one connection.
final class PostgresDriver: DatabaseDriver {
    let engine = DatabaseEngine.postgres
    private let client: PostgresClient
    private let runTask: Task<Void, Never>
    private let committed = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    /// One commit per transaction.
    var statistics: DatabaseStatistics {
        var statistics = DatabaseStatistics()
        statistics.committedTransactions = committed.load(ordering: .relaxed)
        statistics.commits = statistics.committedTransactions
        return statistics
    }

    init(url: String, logger: Logger) async throws {
        guard let components = URLComponents(string: url), let host = components.host else {
            throw DatabaseConfigurationError(message: "DATABASE_URL is not a postgres:// URL")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { $1 }
        )
        let tls: PostgresClient.Configuration.TLS
        switch query["sslmode"] ?? "disable" {
        case "require", "verify-full", "verify-ca":
            tls = .require(TLSConfiguration.makeClientConfiguration())
        case "prefer":
            tls = .prefer(TLSConfiguration.makeClientConfiguration())
        default:
            tls = .disable
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        var configuration = PostgresClient.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: components.user?.removingPercentEncoding ?? "postgres",
            password: components.password?.removingPercentEncoding,
            database: database.isEmpty ? nil : database,
            tls: tls
        )
        configuration.options.maximumConnections = Int(query["pool_size"] ?? "") ?? 16
        // No session waits without bound: a statement or lock wait that runs away fails its request,
        // and a connection left inside a transaction is closed by the server.
        configuration.options.additionalStartupParameters = [
            ("statement_timeout", query["statement_timeout"] ?? "30s"),
            ("lock_timeout", query["lock_timeout"] ?? "10s"),
            ("idle_in_transaction_session_timeout", query["idle_in_transaction_session_timeout"] ?? "60s"),
        ]
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        // The pool must be running before the first lease (postgres-nio warns otherwise): wait
        // until the task is about to call `run()`, which marks the client running before it
        // first suspends.
        let (started, signal) = AsyncStream<Never>.makeStream()
        self.runTask = Task {
            signal.finish()
            await client.run()
        }
        for await _ in started {}
    }

    func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        guard !closed.load(ordering: .relaxed) else { throw DatabaseClosedError() }
        return try await client.withConnection { connection in
            try await body(connection.sql(queryLogLevel: .trace))
        }
    }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        guard !closed.load(ordering: .relaxed) else { throw DatabaseClosedError() }
        return try await client.withConnection { connection in
            let db = connection.sql(queryLogLevel: .trace)
            try await db.raw("BEGIN").run()
            do {
                let result = try await body(db)
                try await db.raw("COMMIT").run()
                committed.add(1, ordering: .relaxed)
                return result
            } catch {
                do {
                    try await db.raw("ROLLBACK").run()
                } catch {
                    // A connection whose transaction could not be ended (and may still hold locks)
                    // must not go back to the pool for another session to inherit.
                    try? await connection.close()
                }
                throw error
            }
        }
    }

    /// PostgreSQL checkpoints and vacuums on its own.
    func maintain() async throws -> MaintenancePace { .idle }

    /// Closes the pool; sessions asked for afterwards fail with `DatabaseClosedError` at once
    /// rather than waiting for a connection that will never come.
    func shutdown() async {
        closed.store(true, ordering: .relaxed)
        runTask.cancel()
        _ = await runTask.value
    }
}

struct DatabaseConfigurationError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

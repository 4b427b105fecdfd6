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

    /// One commit per transaction.
    var statistics: DatabaseStatistics {
        var statistics = DatabaseStatistics()
        statistics.committedTransactions = committed.load(ordering: .relaxed)
        statistics.commits = statistics.committedTransactions
        return statistics
    }

    init(url: String, logger: Logger) throws {
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
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.runTask = Task { await client.run() }
    }

    func read<T: Sendable>(_ body: @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await client.withConnection { connection in
            try await body(connection.sql(queryLogLevel: .trace))
        }
    }

    func transaction<T: Sendable>(_ body: @escaping @Sendable (any SQLDatabase) async throws -> T) async throws -> T {
        try await client.withConnection { connection in
            let db = connection.sql(queryLogLevel: .trace)
            try await db.raw("BEGIN").run()
            do {
                let result = try await body(db)
                try await db.raw("COMMIT").run()
                committed.add(1, ordering: .relaxed)
                return result
            } catch {
                try? await db.raw("ROLLBACK").run()
                throw error
            }
        }
    }

    /// PostgreSQL checkpoints and vacuums on its own.
    func maintain() async throws {}

    func shutdown() async {
        runTask.cancel()
        _ = await runTask.value
    }
}

struct DatabaseConfigurationError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

import Foundation
import Logging
import SQLKit

/// One schema change, written once for both engines — or, where the engines cannot share the
/// text (SQLite changes a table's layout by rebuilding it; PostgreSQL alters it in place), once
/// for each.
public struct Migration: Sendable {
    /// Unique and stable forever, e.g. `"0001_core_users"`.
    public let id: String
    private let sqlite: [String]
    private let postgres: [String]

    public init(_ id: String, _ statements: [String]) {
        self.id = id
        self.sqlite = statements
        self.postgres = statements
    }

    /// A change whose statements differ by engine; either list may be empty (nothing to do there).
    public init(_ id: String, sqlite: [String], postgres: [String]) {
        self.id = id
        self.sqlite = sqlite
        self.postgres = postgres
    }

    /// The statements to run on `engine`.
    public func statements(for engine: DatabaseEngine) -> [String] {
        switch engine {
        case .sqlite: sqlite
        case .postgres: postgres
        }
    }
}

/// Applies migrations in order, each in its own transaction, recording what ran.
public struct Migrator: Sendable {
    let database: Database
    let logger: Logger

    public init(database: Database, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    public func run(_ migrations: [Migration]) async throws {
        var seen = Set<String>()
        for migration in migrations where !seen.insert(migration.id).inserted {
            throw DatabaseConfigurationError(message: "duplicate migration id \(migration.id)")
        }
        try await database.transaction { db in
            try await db.raw(
                "CREATE TABLE IF NOT EXISTS purse_migrations (id TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)"
            ).run()
        }
        let lock = database.dialect.migrationLock
        for migration in migrations {
            let applied = try await database.transaction { db -> Bool in
                if let lock { try await db.raw(SQLQueryString(lock)).run() }
                let rows = try await db.raw("SELECT id FROM purse_migrations WHERE id = \(bind: migration.id)").all()
                if !rows.isEmpty { return false }
                for statement in migration.statements(for: database.dialect.engine) {
                    try await db.raw(SQLQueryString(statement)).run()
                }
                let now = Int64(Date().timeIntervalSince1970 * 1000)
                try await db.raw("INSERT INTO purse_migrations (id, applied_at) VALUES (\(bind: migration.id), \(bind: now))").run()
                return true
            }
            if applied { logger.info("applied migration", metadata: ["migration": "\(migration.id)"]) }
        }
    }
}

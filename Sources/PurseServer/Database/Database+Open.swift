import Foundation
import Logging
import Metrics
import PurseDatabase
import PurseSQLite

/// How the server opens its database, whichever the engine.
public struct DatabaseOptions: Sendable {
    /// SQLite's hooks (``SQLiteTuning``); the process-wide ones are installed when the first
    /// SQLite database opens. PostgreSQL ignores them.
    public var sqliteTuning: SQLiteTuning
    /// Where the engine's counters go (`/metrics`); nowhere by default.
    public var metrics: any MetricsFactory

    public init(sqliteTuning: SQLiteTuning = .all, metrics: any MetricsFactory = NOOPMetricsHandler.instance) {
        self.sqliteTuning = sqliteTuning
        self.metrics = metrics
    }
}

extension Database {
    /// Opens the database named by `url`: `postgres://user:pass@host:port/db` (also
    /// `postgresql://`) for PostgreSQL; a path, `sqlite:///path`, or `sqlite::memory:` for SQLite.
    /// Before it opens SQLite it installs the process-wide hooks `options.sqliteTuning` asks for
    /// (``SQLiteTuning/installProcessHooks()``), and logs which hooks are in force.
    /// - Throws: ``DatabaseConfigurationError`` for an unusable URL; the engine's error when it
    ///   cannot open or connect.
    /// Whether `url` names a PostgreSQL database.
    static func isPostgres(_ url: String) -> Bool { url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") }

    /// The file an SQLite `url` names; nil for PostgreSQL and for an in-memory database.
    static func sqliteFilePath(_ url: String) -> String? {
        if isPostgres(url) || url == "sqlite::memory:" || url == ":memory:" { return nil }
        return url.hasPrefix("sqlite://") ? String(url.dropFirst("sqlite://".count)) : url
    }

    public static func open(url: String, options: DatabaseOptions = DatabaseOptions(), logger: Logger) async throws -> Database {
        if isPostgres(url) {
            return Database(driver: try await PostgresDriver(url: url, metrics: options.metrics, logger: logger))
        }
        let path = sqliteFilePath(url)
        let tuning = options.sqliteTuning.installProcessHooks()
        if tuning != options.sqliteTuning {
            logger.notice("SQLite was initialised before its process-wide hooks could be installed", metadata: [
                "asked": "\(options.sqliteTuning)", "in_force": "\(tuning)",
            ])
        }
        logger.debug("SQLite hooks", metadata: ["hooks": "\(tuning)"])
        let driver = try await SQLiteDriver.open(path: path, options: SQLiteOptions(tuning: tuning, metrics: options.metrics), logger: logger)
        return Database(driver: driver)
    }
}

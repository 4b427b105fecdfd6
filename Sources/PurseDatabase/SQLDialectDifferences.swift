import SQLKit

/// Which SQL engine a ``Database`` runs on.
public enum DatabaseEngine: String, Sendable {
    case sqlite
    case postgres
}

/// The one place where SQLite and PostgreSQL must be told apart.
///
/// Everything else — schema, queries, upserts (`ON CONFLICT`), `RETURNING` — is written once.
public struct SQLDialectDifferences: Sendable {
    public let engine: DatabaseEngine

    public init(engine: DatabaseEngine) {
        self.engine = engine
    }

    /// The differences for the engine behind a session (code that is handed a `db`, not the
    /// ``Database``).
    public init(_ db: any SQLDatabase) {
        self.engine = db.dialect.name == "postgresql" ? .postgres : .sqlite
    }

    /// Appended to a `SELECT` that claims rows for exclusive work (job claiming).
    /// PostgreSQL locks the rows and lets other replicas skip them; SQLite has already taken
    /// the database write lock with `BEGIN IMMEDIATE`, so it needs nothing here.
    public var claimRowsClause: String {
        switch engine {
        case .postgres: " FOR UPDATE SKIP LOCKED"
        case .sqlite: ""
        }
    }

    /// Appended to a `SELECT` that reads rows a transaction is about to change on what it read
    /// (both copies of a tally before a chit moves their balances). PostgreSQL locks them until
    /// commit; SQLite's write transaction already holds the database.
    public var lockRowsClause: String {
        switch engine {
        case .postgres: " FOR UPDATE"
        case .sqlite: ""
        }
    }

    /// True where a write transaction runs alone from its first statement to its commit (SQLite's
    /// one writer), so what it read cannot be changed by another writer before it commits.
    /// PostgreSQL runs them side by side: a row that must exist once is claimed, not looked up,
    /// and a row that every transaction would change (a house account's balance) is spread
    /// over several.
    public var writesAreSerial: Bool { engine == .sqlite }

    /// Serialises concurrent migration runs of several replicas.
    var migrationLock: String? {
        switch engine {
        case .postgres: "SELECT pg_advisory_xact_lock(7305307)"
        case .sqlite: nil
        }
    }
}

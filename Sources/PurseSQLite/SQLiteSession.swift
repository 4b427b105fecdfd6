import Logging
import NIOCore
import PurseDatabase
import SQLKit
import SQLiteKit
import SQLiteNIO

/// ``SQLiteConnectionHandle`` seen through SQLKit, so queries are written the same way for
/// SQLite and PostgreSQL.
struct SQLiteSession: DatabaseSession {
    let connection: SQLiteConnectionHandle
    let logger: Logger
    let eventLoop: any EventLoop
    let queryLogLevel: Logger.Level?
    private let encoder = SQLiteDataEncoder()

    init(connection: SQLiteConnectionHandle, logger: Logger, eventLoop: any EventLoop, queryLogLevel: Logger.Level?) {
        self.connection = connection
        self.logger = logger
        self.eventLoop = eventLoop
        self.queryLogLevel = queryLogLevel
    }

    var dialect: any SQLDialect { SQLiteDialect() }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        do {
            try run(query, onRow)
            return eventLoop.makeSucceededVoidFuture()
        } catch {
            return eventLoop.makeFailedFuture(error)
        }
    }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) async throws {
        try run(query, onRow)
    }

    func withSession<R>(_ closure: @escaping @Sendable (any SQLDatabase) async throws -> R) async throws -> R {
        try await closure(self)
    }

    /// A bound value as SQLite stores it: the common types directly, the rest through SQLiteKit's
    /// encoder (which gives the same results for these: text, integer, 1/0 for booleans, real).
    static func sqliteData(_ value: any Encodable & Sendable, encoder: SQLiteDataEncoder) throws -> SQLiteData {
        switch value {
        case let text as String: return .text(text)
        case let bool as Bool: return .integer(bool ? 1 : 0)
        case let integer as Int: return .integer(integer)
        case let integer as Int64: return .integer(Int(integer))
        case let double as Double: return .float(double)
        default: return try encoder.encode(value)
        }
    }

    /// A ``DatabaseStatement`` straight to the connection: its SQLite text (the prepared-statement
    /// cache's key) and its values, with no serialisation and no boxing.
    func query(_ statement: DatabaseStatement, _ values: [SQLValue]) throws -> [any SQLRow] {
        guard values.count == statement.parameterCount else {
            throw SQLStatementValuesError(statement: statement.text, expected: statement.parameterCount, given: values.count)
        }
        if let queryLogLevel {
            logger.log(level: queryLogLevel, "Executing query", metadata: ["sql": .string(statement.sqliteText)])
        }
        var rows: [any SQLRow] = []
        try connection.execute(statement, values) { rows.append($0) }
        return rows
    }

    /// Each column as stored: SQLite's text, integer and NULL are the values a declared column
    /// holds; a real or a blob is not one.
    func rows<Query: PreparedDatabaseQuery>(_ query: Query.Type, _ values: [SQLValue]) throws -> [Query.Row] {
        try Query.check(values)
        if let queryLogLevel {
            logger.log(level: queryLogLevel, "Executing query", metadata: ["sql": .string(Query.statement.sqliteText)])
        }
        var rows: [Query.Row] = []
        try connection.execute(Query.statement, values) { row in
            try Query.checkColumnCount(row.values.count)
            var columns: [SQLValue] = []
            columns.reserveCapacity(row.values.count)
            for (index, value) in row.values.enumerated() {
                switch value {
                case .text(let text): columns.append(.text(text))
                case .integer(let integer): columns.append(.integer(Int64(integer)))
                case .null: columns.append(.null)
                default: throw DatabaseColumnError(statement: Query.statement.text, column: index, expected: Query.columnTypes[index])
                }
            }
            rows.append(try Query.row(DatabaseColumns(columns, of: Query.statement)))
        }
        return rows
    }

    /// SQLite counts the rows itself (`sqlite3_changes`): a `RETURNING` clause would make every
    /// run build an in-memory table for the rows it returns — a B-tree with its own pager and page
    /// cache, ~3 µs of the one writer's time.
    func insertedRows(_ statement: DatabaseStatement, _ values: [SQLValue]) throws -> Int {
        _ = try query(statement, values)
        return connection.changes
    }

    private func run(_ query: any SQLExpression, _ onRow: (any SQLRow) -> Void) throws {
        let (sql, rawBinds) = serialize(query)
        if let queryLogLevel {
            // Statement text only: bound values can be secrets (hashes, tokens).
            logger.log(level: queryLogLevel, "Executing query", metadata: ["sql": .string(sql)])
        }
        let binds = try rawBinds.map { try Self.sqliteData($0, encoder: encoder) }
        try connection.execute(sql, binds) { onRow($0) }
    }
}

import SQLKit

/// A ``PreparedDatabaseStatement`` whose rows come back as a type of its own: each column is read
/// by its position as its declared type, and ``row(_:)`` makes the value.
///
/// A statement run through ``DatabaseSession/query(_:_:)`` hands back `SQLRow`s, read by column
/// name through a `Decodable` decoder; on PostgreSQL that is postgres-kit's row wrapper and
/// decoder, boxing every cell. The hot statements (every money-moving request runs them) declare
/// their columns instead, and the engine reads each cell straight into a `String` or an `Int64`
/// (``DatabaseSession/rows(_:_:)``).
public protocol PreparedDatabaseQuery: PreparedDatabaseStatement {
    associatedtype Row: Sendable
    /// The type of each column the statement returns, the first first.
    static var columnTypes: [SQLValueType] { get }
    /// A row from its columns' values: as many as ``columnTypes``, each of its type or NULL.
    static func row(_ columns: DatabaseColumns) throws -> Row
}

/// One result row of a ``PreparedDatabaseQuery``, its columns in the statement's order.
public struct DatabaseColumns: Sendable {
    public let values: [SQLValue]
    /// The statement's text, for the error when a column is not what it declared.
    let statement: String

    public init(_ values: [SQLValue], of statement: DatabaseStatement) {
        self.values = values
        self.statement = statement.text
    }

    /// The text in column `index` (0-based).
    /// - Throws: ``DatabaseColumnError`` when it is NULL or not text.
    public func text(_ index: Int) throws -> String {
        guard case .text(let text) = values[index] else { throw DatabaseColumnError(statement: statement, column: index, expected: .text) }
        return text
    }

    /// The text in column `index`, nil for NULL.
    public func optionalText(_ index: Int) throws -> String? {
        switch values[index] {
        case .text(let text): text
        case .null: nil
        case .integer: throw DatabaseColumnError(statement: statement, column: index, expected: .text)
        }
    }

    /// The integer in column `index`.
    /// - Throws: ``DatabaseColumnError`` when it is NULL or not an integer.
    public func integer(_ index: Int) throws -> Int64 {
        guard case .integer(let integer) = values[index] else { throw DatabaseColumnError(statement: statement, column: index, expected: .integer) }
        return integer
    }

    /// The integer in column `index`, nil for NULL.
    public func optionalInteger(_ index: Int) throws -> Int64? {
        switch values[index] {
        case .integer(let integer): integer
        case .null: nil
        case .text: throw DatabaseColumnError(statement: statement, column: index, expected: .integer)
        }
    }
}

/// A column of a ``PreparedDatabaseQuery``'s row that is not of its declared type (or is missing):
/// the statement and its declaration disagree, a server fault.
public struct DatabaseColumnError: Error, CustomStringConvertible {
    public let statement: String
    /// 0-based.
    public let column: Int
    public let expected: SQLValueType

    public init(statement: String, column: Int, expected: SQLValueType) {
        self.statement = statement
        self.column = column
        self.expected = expected
    }

    public var description: String { "column \(column + 1) is not \(expected) (or is NULL where that is not allowed): \(statement)" }
}

extension PreparedDatabaseQuery {
    /// Checks that a row has as many columns as the statement declares, before an engine reads
    /// them.
    /// - Throws: ``DatabaseColumnError`` naming the first column missing or undeclared.
    public static func checkColumnCount(_ count: Int) throws {
        guard count == columnTypes.count else {
            let first = min(count, columnTypes.count)
            throw DatabaseColumnError(statement: statement.text, column: first, expected: first < columnTypes.count ? columnTypes[first] : .text)
        }
    }

    /// A row from an engine's `SQLRow`, its columns read by name in order: for an engine without
    /// a positional path of its own.
    public static func row(from sqlRow: any SQLRow) throws -> Row {
        let names = sqlRow.allColumns
        try checkColumnCount(names.count)
        var values: [SQLValue] = []
        values.reserveCapacity(names.count)
        for (name, type) in zip(names, columnTypes) {
            switch type {
            case .text: values.append(.text(try sqlRow.decode(column: name, as: String?.self)))
            case .integer: values.append(try sqlRow.decode(column: name, as: Int64?.self).map(SQLValue.integer) ?? .null)
            }
        }
        return try row(DatabaseColumns(values, of: statement))
    }
}

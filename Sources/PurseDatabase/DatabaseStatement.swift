import SQLKit
import Synchronization

/// A statement written once with numbered parameters — `$1`, `$2`, … as PostgreSQL spells them —
/// and run with a list of ``SQLValue``s.
///
/// `db.raw("… \(bind: x) …")` builds the statement's text and boxes every value each time it
/// runs; on the hot write path (a payment runs seven statements with ~70 values inside SQLite's
/// one writer) that was a fifth of the writer's time. A `DatabaseStatement` is parsed once: on SQLite
/// its text goes to the connection's prepared-statement cache as is and its values are bound
/// directly; on PostgreSQL it goes to the server as written, with one binary bind per parameter
/// (an engine without a path of its own hands it to SQLKit, ``NumberedParameters``), so it reads
/// and behaves the same on both. Sessions run it (``DatabaseSession/query(_:_:)``).
///
/// A parameter may appear more than once and in any order. The text must not contain `$` other
/// than in parameters (no string literals with dollar signs, no dollar quoting).
public struct DatabaseStatement: Sendable, CustomStringConvertible {
    /// The text as written.
    public let text: String
    /// SQLite's spelling: `?1`, `?2`, … (SQLite numbers `$name` parameters by first appearance).
    public let sqliteText: String
    /// The text between parameters and the parameter numbers (1-based) in order of appearance:
    /// `segments.count == parameters.count + 1`.
    public let segments: [String]
    public let parameters: [Int]
    /// The highest parameter number: how many values a run takes.
    public let parameterCount: Int
    /// This statement's own number in the process, for a connection's prepared-statement cache
    /// (hashing an integer rather than the whole text each run).
    public let cacheKey: Int

    private static let statementsMade = Atomic<Int>(0)

    public init(_ text: String) {
        var segments: [String] = []
        var parameters: [Int] = []
        var current = ""
        var scalars = text.unicodeScalars[...]
        while let scalar = scalars.popFirst() {
            guard scalar == "$", let digit = scalars.first, ("1"..."9").contains(digit) else {
                current.unicodeScalars.append(scalar)
                continue
            }
            var number = 0
            while let next = scalars.first, ("0"..."9").contains(next) {
                number = number * 10 + Int(next.value - 48)
                scalars.removeFirst()
            }
            segments.append(current)
            parameters.append(number)
            current = ""
        }
        segments.append(current)
        self.text = text
        self.segments = segments
        self.parameters = parameters
        self.parameterCount = parameters.max() ?? 0
        var sqlite = segments[0]
        for (index, number) in parameters.enumerated() {
            sqlite += "?\(number)" + segments[index + 1]
        }
        self.sqliteText = sqlite
        self.cacheKey = Self.statementsMade.add(1, ordering: .relaxed).newValue
    }

    public var description: String { text }
}

/// A value bound to a ``DatabaseStatement`` parameter: the types the schema uses (text, 64-bit
/// integers — money, times, counts — and NULL).
public enum SQLValue: Sendable, Equatable {
    case text(String)
    case integer(Int64)
    case null

    public static func text(_ value: String?) -> SQLValue { value.map(SQLValue.text) ?? .null }
    public static func integer(_ value: Int) -> SQLValue { .integer(Int64(value)) }

    public var encodable: any Encodable & Sendable {
        switch self {
        case .text(let text): text
        case .integer(let integer): integer
        case .null: String?.none
        }
    }
}

/// A statement's values did not match its parameters.
public struct SQLStatementValuesError: Error, CustomStringConvertible {
    public init(statement: String, expected: Int, given: Int) {
        self.statement = statement
        self.expected = expected
        self.given = given
    }

    public let statement: String
    public let expected: Int
    public let given: Int
    public var description: String { "statement takes \(expected) values, given \(given): \(statement)" }
}

/// A ``DatabaseStatement`` for SQLKit: the text between parameters as written, one bind per
/// parameter in the dialect's own placeholder. Engines without a faster path run statements
/// through it.
public struct NumberedParameters: SQLExpression {
    public let statement: DatabaseStatement
    public let values: [SQLValue]

    public init(statement: DatabaseStatement, values: [SQLValue]) throws {
        guard values.count == statement.parameterCount else {
            throw SQLStatementValuesError(statement: statement.text, expected: statement.parameterCount, given: values.count)
        }
        self.statement = statement
        self.values = values
    }

    public func serialize(to serializer: inout SQLSerializer) {
        serializer.write(statement.segments[0])
        for (index, number) in statement.parameters.enumerated() {
            serializer.write(bind: values[number - 1].encodable)
            serializer.write(statement.segments[index + 1])
        }
    }
}

/// A stored value a store cannot read as its type (a status no case names, a malformed hash):
/// the schema's checks should make it impossible, so it is a server fault, never the client's.
public struct UnreadableColumn: Error, CustomStringConvertible {
    public var table: String
    public var column: String

    public init(_ table: String, _ column: String) {
        self.table = table
        self.column = column
    }

    public var description: String { "\(table).\(column) holds an unreadable value" }
}

extension SQLRow {
    /// Reads a column stored as the raw value of `T` (a status, a kind, a typed id).
    /// - Throws: ``UnreadableColumn`` when the stored value names no `T`.
    public func decode<T: RawRepresentable>(column: String, as type: T.Type, of table: String) throws -> T where T.RawValue: Decodable {
        guard let value = T(rawValue: try decode(column: column, as: T.RawValue.self)) else { throw UnreadableColumn(table, column) }
        return value
    }

    /// Reads a nullable column stored as the raw value of `T`.
    public func decode<T: RawRepresentable>(column: String, as type: T?.Type, of table: String) throws -> T? where T.RawValue: Decodable {
        guard let raw = try decode(column: column, as: T.RawValue?.self) else { return nil }
        guard let value = T(rawValue: raw) else { throw UnreadableColumn(table, column) }
        return value
    }
}

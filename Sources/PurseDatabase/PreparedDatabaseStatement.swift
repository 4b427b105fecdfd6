/// A ``DatabaseStatement`` declared as a type, so that an engine can keep it prepared on each
/// connection under one name: PostgreSQL parses and plans it once per connection (postgres-nio's
/// `PostgresPreparedStatement`) and runs it by name after, where a plain statement is parsed and
/// planned on every run. SQLite keeps every statement prepared already and runs it as any other.
///
/// For the hot statements whose planning costs more than their execution (a ledger posting's
/// one statement); the parameter types are fixed once, for every run.
public protocol PreparedDatabaseStatement {
    static var statement: DatabaseStatement { get }
    /// The type of each parameter, `$1` first: as many as the statement has.
    static var parameterTypes: [SQLValueType] { get }
}

/// A parameter's type in a ``PreparedDatabaseStatement``: the types ``SQLValue`` carries.
public enum SQLValueType: Sendable, Equatable {
    case text
    case integer
}

/// A value given for a ``PreparedDatabaseStatement`` parameter of another type.
public struct SQLValueTypeError: Error, CustomStringConvertible {
    public let statement: String
    public let parameter: Int
    public let expected: SQLValueType

    public init(statement: String, parameter: Int, expected: SQLValueType) {
        self.statement = statement
        self.parameter = parameter
        self.expected = expected
    }

    public var description: String { "parameter $\(parameter) takes \(expected): \(statement)" }
}

extension PreparedDatabaseStatement {
    /// Checks `values` against the declared parameters: their count and each one's type (NULL
    /// fits any).
    public static func check(_ values: [SQLValue]) throws {
        guard values.count == statement.parameterCount, parameterTypes.count == statement.parameterCount else {
            throw SQLStatementValuesError(statement: statement.text, expected: statement.parameterCount, given: values.count)
        }
        for (index, (value, type)) in zip(values, parameterTypes).enumerated() {
            switch (value, type) {
            case (.null, _), (.text, .text), (.integer, .integer): continue
            default: throw SQLValueTypeError(statement: statement.text, parameter: index + 1, expected: type)
            }
        }
    }
}

import Foundation
import PurseFormats

/// A column's type as the view's metadata gives it, and how request values are read for it —
/// PostgreSQL casts a bound text parameter to the column's type, so `"42"` matches an integer 42.
enum ColumnType: String, Sendable {
    case text, int, float = "float8", bool, date, timestamp = "timestamptz", jsonb, numeric, bytea

    /// The request value as a value of this type, or the database's refusal.
    func coerce(_ value: JSONValue, column: String) throws(WysemanError) -> JSONValue {
        switch (self, value) {
        case (_, .null): return .null
        case (.int, .int), (.int, .uint), (.bool, .bool), (.jsonb, _): return value
        case (.int, .string(let text)):
            guard let number = Int64(text.trimmingCharacters(in: .whitespaces)) else { throw .database("invalid input syntax for type integer: \"\(text)\"", sqlState: "22P02") }
            return .int(number)
        case (.int, .double(let number)):
            // 1e19 and 1e400 (infinity) are whole but not bigints: PostgreSQL's own refusal.
            guard number == number.rounded() else {
                throw .database("invalid input syntax for type bigint: \"\(JavaScriptJSON.stringify(value))\"", sqlState: "22P02")
            }
            guard let whole = CheckedAmount.exactInteger(number) else { throw .database("bigint out of range", sqlState: "22003") }
            return .int(whole)
        case (.float, .double), (.float, .int), (.float, .uint): return value
        case (.float, .string(let text)):
            guard let number = Double(text.trimmingCharacters(in: .whitespaces)), number.isFinite else {
                throw .database("invalid input syntax for type double precision: \"\(text)\"", sqlState: "22P02")
            }
            return .double(number)
        case (.bool, .string(let text)):
            switch text.lowercased() {
            case "t", "true", "yes", "on", "1": return .bool(true)
            case "f", "false", "no", "off", "0": return .bool(false)
            default: throw .database("invalid input syntax for type boolean: \"\(text)\"", sqlState: "22P02")
            }
        case (.text, .string), (.timestamp, .string), (.bytea, .string): return value
        case (.numeric, .int), (.numeric, .uint): return value
        case (.numeric, .string(let text)):
            guard let number = Int64(text.trimmingCharacters(in: .whitespaces)) else { throw .database("invalid input syntax for type numeric: \"\(text)\"", sqlState: "22P02") }
            return .int(number)
        case (.text, .int(let number)): return .string(String(number))
        case (.text, .bool(let flag)): return .string(flag ? "true" : "false")
        case (.date, .string(let text)):
            guard ColumnType.isDate(text) else { throw .database("invalid input syntax for type date: \"\(text)\"", sqlState: "22007") }
            return value
        default:
            throw .database("invalid input for column \"\(column)\" of type \(rawValue): \(JavaScriptJSON.stringify(value))", sqlState: "22P02")
        }
    }

    /// `YYYY-MM-DD`, a day that exists.
    static func isDate(_ text: String) -> Bool {
        let parts = text.split(separator: "-")
        guard text.utf8.count == 10, parts.count == 3, let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              (1...9999).contains(year), (1...12).contains(month), day >= 1 else { return false }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: 1)),
              let days = calendar.range(of: .day, in: .month, for: date) else { return false }
        return days.contains(day)
    }
}

/// A `where` of the Wyseman API in any of its forms, resolved against a view's columns:
/// - an array of clauses `"field oper value"` or `[field, oper, value]`, and-ed;
/// - `{items: [...], and: true|false}`, a list of nested logic joined by and (the default) or or;
/// - `{left, oper, entry}` (or `right`), one comparison, `oper` defaulting to `=`; `nop` is none;
/// - `{field: value, …}`, equalities and-ed.
/// Operators: `= != < <= > >= ~ diff in isnull notnull true`.
indirect enum WhereClause: Sendable {
    case all([WhereClause])
    case any([WhereClause])
    case compare(column: String, oper: String, value: JSONValue)
    case nothing

    static let operators: Set<String> = ["=", "!=", "<", "<=", ">", ">=", "~", "diff", "in", "isnull", "notnull", "true"]

    static func parse(_ logic: JSONValue?, columns: [String: ColumnType]) throws(WysemanError) -> WhereClause {
        guard let logic, !logic.isNull else { return .nothing }
        switch logic {
        case .array(let items):
            var clauses: [WhereClause] = []
            for item in items {
                let left: String, oper: String, right: JSONValue
                switch item {
                case .string(let text):
                    let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true).map(String.init)
                    guard parts.count >= 2 else { throw .request("invalid clause: \(text)", "badLogic") }
                    (left, oper, right) = (parts[0], parts[1], parts.count > 2 ? .string(parts[2]) : .null)
                case .array(let parts):
                    guard parts.count >= 2, case .string(let field) = parts[0], case .string(let op) = parts[1] else {
                        throw .request("invalid null or undefined left hand side", "badLeft")
                    }
                    (left, oper, right) = (field, op, parts.count > 2 ? parts[2] : .null)
                default:
                    throw .request("mangled logic: \(JavaScriptJSON.stringify(item))", "badLogic")
                }
                clauses.append(try compare(left, oper, right, columns: columns))
            }
            return .all(clauses)
        case .object(let members):
            if case .array(let items)? = members["items"] {
                var and = true
                if case .bool(let flag)? = members["and"] { and = flag }
                let clauses = try items.map { (item) throws(WysemanError) -> WhereClause in try parse(item, columns: columns) }
                return and ? .all(clauses) : .any(clauses)
            }
            if let left = members["left"] {
                guard case .string(let field) = left else { throw .request("invalid null or undefined field", "badFieldName") }
                var oper = "="
                if case .string(let op)? = members["oper"] { oper = op }
                if oper == "nop" { return .nothing }
                return try compare(field, oper, members["entry"] ?? members["right"] ?? .string(""), columns: columns)
            }
            let clauses = try members.keys.sorted().map { (key) throws(WysemanError) -> WhereClause in try compare(key, "=", members[key]!, columns: columns) }
            return .all(clauses)
        default:
            throw .request("mangled logic: \(JavaScriptJSON.stringify(logic))", "badLogic")
        }
    }

    private static func compare(_ column: String, _ oper: String, _ value: JSONValue, columns: [String: ColumnType]) throws(WysemanError) -> WhereClause {
        guard operators.contains(oper) else { throw .request("invalid operator: \(oper)", "badOperator") }
        guard let type = columns[column] else { throw .undefinedColumn(column) }
        switch oper {
        case "isnull", "notnull", "true": return .compare(column: column, oper: oper, value: .null)
        case "in":
            let items: [JSONValue]
            switch value {
            case .array(let list): items = list
            case .string(let text): items = text.split(separator: ",").map { .string($0.trimmingCharacters(in: .whitespaces)) }
            default: items = [value]
            }
            return .compare(column: column, oper: oper, value: .array(try items.map { (item) throws(WysemanError) -> JSONValue in try type.coerce(item, column: column) }))
        case "~":
            guard case .string(let pattern) = value, (try? NSRegularExpression(pattern: pattern)) != nil else {
                throw .database("invalid regular expression: \(JavaScriptJSON.stringify(value))", sqlState: "2201B")
            }
            return .compare(column: column, oper: oper, value: value)
        default:
            return .compare(column: column, oper: oper, value: try type.coerce(value, column: column))
        }
    }

    /// Whether a row passes, with SQL's rule that a comparison with null is not true.
    func matches(_ row: [String: JSONValue]) -> Bool {
        switch self {
        case .nothing: return true
        case .all(let clauses): return clauses.allSatisfy { $0.matches(row) }
        case .any(let clauses): return clauses.isEmpty || clauses.contains { $0.matches(row) }
        case .compare(let column, let oper, let value):
            let field = row[column] ?? .null
            switch oper {
            case "isnull": return field.isNull
            case "notnull": return !field.isNull
            case "true": return field == .bool(true)
            case "diff": return field != value
            case "in":
                guard !field.isNull, case .array(let items) = value else { return false }
                return items.contains { Self.order(field, $0) == .orderedSame }
            case "~":
                guard case .string(let text) = field, case .string(let pattern) = value,
                      let regex = try? NSRegularExpression(pattern: pattern) else { return false }
                return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            default:
                guard !field.isNull, !value.isNull, let order = Self.order(field, value) else { return false }
                switch oper {
                case "=": return order == .orderedSame
                case "!=": return order != .orderedSame
                case "<": return order == .orderedAscending
                case "<=": return order != .orderedDescending
                case ">": return order == .orderedDescending
                default: return order != .orderedAscending
                }
            }
        }
    }

    /// Numbers by value, strings by code point, booleans false before true; other pairs are
    /// incomparable (nil).
    static func order(_ a: JSONValue, _ b: JSONValue) -> ComparisonResult? {
        func number(_ value: JSONValue) -> Double? {
            switch value {
            case .int(let n): Double(n)
            case .uint(let n): Double(n)
            case .double(let n): n
            default: nil
            }
        }
        if case .int(let x) = a, case .int(let y) = b { return x == y ? .orderedSame : (x < y ? .orderedAscending : .orderedDescending) }
        // A numeric column's value is decimal text (as PostgreSQL's numeric reaches a client); a
        // condition on it was read as a number.
        if case .string(let text) = a, case .int = b, let x = Int64(text) { return order(.int(x), b) }
        if let x = number(a), let y = number(b) { return x == y ? .orderedSame : (x < y ? .orderedAscending : .orderedDescending) }
        if case .string(let x) = a, case .string(let y) = b { return x == y ? .orderedSame : (x.unicodeScalars.lexicographicallyPrecedes(y.unicodeScalars) ? .orderedAscending : .orderedDescending) }
        if case .bool(let x) = a, case .bool(let y) = b { return x == y ? .orderedSame : (!x ? .orderedAscending : .orderedDescending) }
        if a == b { return .orderedSame }
        return nil
    }
}

/// A `select`'s shape: fields, where, order and limit, applied to a view's rows.
struct ViewQuery: Sendable {
    var fields: [String]?
    var filter: WhereClause
    var order: [(column: String, ascending: Bool)]
    var limit: Int?

    init(_ request: WysemanRequest, columns: [String: ColumnType], columnOrder: [String]) throws(WysemanError) {
        switch request["fields"] {
        case nil, .null?: fields = nil
        case .string("*")?: fields = nil
        case .string(let one)?: fields = [one]
        case .array(let list)?:
            fields = try list.map { (item) throws(WysemanError) -> String in
                guard case .string(let name) = item else { throw .request("invalid null or undefined field", "badFieldName") }
                return name
            }
        default: throw .request("fields must be a list of column names", "badFieldName")
        }
        // `["*"]` is every column, as Wyseman reads it (the real app sends it).
        if fields == ["*"] { fields = nil }
        for name in fields ?? [] where columns[name] == nil { throw .undefinedColumn(name) }
        filter = try WhereClause.parse(request["where"], columns: columns)
        order = []
        var items: [JSONValue] = []
        switch request["order"] {
        case nil, .null?: break
        case .array(let list)?: items = list
        case let single?: items = [single]
        }
        for item in items {
            switch item {
            case .string(let name):
                guard columns[name] != nil else { throw .undefinedColumn(name) }
                order.append((name, true))
            case .int(let position):
                guard position >= 1, position <= columnOrder.count else {
                    throw .database("ORDER BY position \(position) is not in select list", sqlState: "42P10")
                }
                order.append((columnOrder[Int(position) - 1], true))
            case .object(let spec):
                guard case .string(let name)? = spec["field"] ?? spec["column"] ?? spec["columnId"] else { throw .request("an order needs a field", "badOrder") }
                guard columns[name] != nil else { throw .undefinedColumn(name) }
                let ascending = spec["asc"] == .bool(true) || spec["sortAsc"] == .bool(true)
                order.append((name, ascending))
            default:
                throw .request("mangled order: \(JavaScriptJSON.stringify(item))", "badOrder")
            }
        }
        switch request["limit"] {
        case nil, .null?: limit = nil
        case .int(let count)? where count >= 0: limit = Int(count)
        default: throw .request("limit must be a whole number", "badLimit")
        }
    }

    /// The rows that pass, ordered (nulls last, as PostgreSQL sorts ascending), limited, and cut to `fields`.
    func apply(to rows: [[String: JSONValue]]) -> [JSONValue] {
        var kept = rows.filter(filter.matches)
        if !order.isEmpty {
            kept.sort { left, right in
                for (column, ascending) in order {
                    let a = left[column] ?? .null, b = right[column] ?? .null
                    if a.isNull != b.isNull { return ascending ? b.isNull : a.isNull }
                    guard let result = WhereClause.order(a, b), result != .orderedSame else { continue }
                    return (result == .orderedAscending) == ascending
                }
                return false
            }
        }
        if let limit { kept = Array(kept.prefix(limit)) }
        return kept.map { row in
            guard let fields else { return .object(row) }
            var cut: [String: JSONValue] = [:]
            for name in fields { cut[name] = row[name] ?? .null }
            return .object(cut)
        }
    }
}

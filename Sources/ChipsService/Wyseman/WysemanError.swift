import PurseFormats

/// An error as Wyseman sends it in a response's `error` member: `{message, code, detail,
/// pgCode}`. Codes are `!wylib.data.<reason>` for the protocol's own refusals (`badAction`,
/// `badWhere`, `badTuples` …), `!wylib.data.<SQLSTATE>` for what the database refused (with
/// `pgCode` the SQLSTATE and the message prefixed `from database: `), or a view's own
/// `!schema.table:CODE` where a constraint of the real schema names one.
struct WysemanError: Error, Equatable, Sendable {
    var message: String
    var code: String
    var detail: String?
    var pgCode: String?

    /// A refusal of the protocol layer (`reason` like `badAction`).
    static func wylib(_ message: String, _ reason: String) -> WysemanError {
        WysemanError(message: message, code: "!wylib.data." + reason)
    }

    /// What PostgreSQL would have answered, by SQLSTATE.
    static func database(_ message: String, sqlState: String, detail: String? = nil) -> WysemanError {
        WysemanError(message: "from database: " + message, code: "!wylib.data." + sqlState, detail: detail, pgCode: sqlState)
    }

    /// A check of the real schema that carries its own code (`!mychips.users:BDT`).
    static func constraint(_ message: String, code: String, sqlState: String = "23514", detail: String? = nil) -> WysemanError {
        WysemanError(message: "from database: " + message, code: code, detail: detail, pgCode: sqlState)
    }

    static func undefinedColumn(_ column: String) -> WysemanError {
        database("column \"\(column)\" does not exist", sqlState: "42703")
    }

    static func undefinedTable(_ name: String) -> WysemanError {
        database("relation \"\(name)\" does not exist", sqlState: "42P01")
    }

    static func permissionDenied(_ name: String) -> WysemanError {
        database("permission denied for view \(name)", sqlState: "42501")
    }

    static func unexpectedRows(_ count: Int, expected: Int) -> WysemanError {
        wylib("unexpected rows: \(count) != \(expected)", "badTuples")
    }

    var json: JSONValue {
        var members: [String: JSONValue] = ["message": .string(message), "code": .string(code)]
        if let detail { members["detail"] = .string(detail) }
        if let pgCode { members["pgCode"] = .string(pgCode) }
        return .object(members)
    }
}

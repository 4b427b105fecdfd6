import PurseFormats

/// An error as Wyseman sends it in a response's `error` member: `{message, code, detail,
/// pgCode}`, in the real handler's forms:
///
/// - the protocol's own refusals: code `!wm.lang:<reason>` (`badAction`, `badWhere`,
///   `badOperator`, `badTuples` …);
/// - what the database refused: code the bare SQLSTATE (`42P01`, `22003`), `pgCode` the same, the
///   message `from database; ` and PostgreSQL's text;
/// - a check constraint of the real schema named like `!mychips.users:BDT`: that name as the code;
/// - an exception the schema raises (`!mychips.chits:LMT …`): code `P0001`, the `!schema.table:CODE`
///   leading PostgreSQL's text in the message, where clients find it.
struct WysemanError: Error, Equatable, Sendable {
    var message: String
    var code: String
    var detail: String?
    var pgCode: String?

    /// A refusal of the protocol layer (`reason` like `badAction`).
    static func request(_ message: String, _ reason: String) -> WysemanError {
        WysemanError(message: message, code: "!wm.lang:" + reason)
    }

    /// What PostgreSQL would have answered, by SQLSTATE.
    static func database(_ message: String, sqlState: String, detail: String? = nil) -> WysemanError {
        WysemanError(message: "from database; " + message, code: sqlState, detail: detail, pgCode: sqlState)
    }

    /// A refusal of the real schema that carries its own code (`!mychips.users:BDT`): a check
    /// constraint so named (`sqlState` 23514), or an exception the schema raises (`P0001`).
    static func constraint(_ message: String, code: String, sqlState: String = "23514", detail: String? = nil) -> WysemanError {
        if sqlState == "P0001" {
            return WysemanError(message: "from database; " + code + " " + message, code: sqlState, detail: detail, pgCode: sqlState)
        }
        return WysemanError(message: "from database; " + message, code: code, detail: detail, pgCode: sqlState)
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
        request("unexpected rows: \(count) != \(expected)", "badTuples")
    }

    var json: JSONValue {
        var members: [String: JSONValue] = ["message": .string(message), "code": .string(code)]
        if let detail { members["detail"] = .string(detail) }
        if let pgCode { members["pgCode"] = .string(pgCode) }
        return .object(members)
    }
}

import Foundation
import Logging
import PurseFormats

/// Answers request frames: the protocol's actions (`tuple`, `select`, `insert`, `update`,
/// `delete`, `lang`, `meta`) on the views the provider serves, and the views' named actions.
/// Every request gets exactly one response frame; nothing a client sends ends its connection.
struct WysemanDispatcher: Sendable {
    let views: [String: ServedView]
    let logger: Logger

    /// A view with its column types and column order, made once (every request reads them).
    struct ServedView: Sendable {
        let view: any ChipsView
        let columnTypes: [String: ColumnType]
        let columnOrder: [String]

        init(_ view: any ChipsView) {
            self.view = view
            columnTypes = view.columnTypes
            columnOrder = view.columns.map(\.name)
        }
    }

    init(views: [any ChipsView], logger: Logger) {
        self.views = Dictionary(uniqueKeysWithValues: views.map { ($0.name, ServedView($0)) })
        self.logger = logger
    }

    func respond(to message: [UInt8], context: ViewContext) async -> [UInt8] {
        let request: WysemanRequest
        switch WysemanRequest.parse(message) {
        case .failure(let refusal): return WysemanResponse.error(refusal.error, id: refusal.id)
        case .success(let parsed): request = parsed
        }
        do {
            return WysemanResponse.data(try await answer(request, context: context), to: request)
        } catch let error as WysemanError {
            return WysemanResponse.error(error, id: request.id, view: request.view, action: request.action)
        } catch {
            logger.error("MyCHIPs request failed", metadata: ["view": "\(request.view)", "action": "\(request.action)", "error.type": "\(type(of: error))"])
            return WysemanResponse.error(.request("from database; the request could not be completed", "unknown"), id: request.id,
                                         view: request.view, action: request.action)
        }
    }

    private func answer(_ request: WysemanRequest, context: ViewContext) async throws -> JSONValue {
        switch request.action {
        case "lang":
            let language = request["language"]?.stringValue ?? context.user.language
            guard let texts = try await LanguageCatalog.lang(of: request.view, language: language, database: context.database) else {
                throw WysemanError.unexpectedRows(0, expected: 1)
            }
            return texts
        case "meta":
            guard let served = views[request.view] else { throw WysemanError.unexpectedRows(0, expected: 1) }
            return served.view.meta
        default:
            break
        }
        let (served, parameters) = try resolve(request)
        let (view, types, order) = (served.view, served.columnTypes, served.columnOrder)
        switch request.action {
        case "tuple", "select":
            let query = try ViewQuery(request, columns: types, columnOrder: order)
            let rows = query.apply(to: try await view.rows(parameters: parameters, context: context))
            if request.action == "select" { return .array(rows) }
            guard rows.count == 1 else { throw WysemanError.unexpectedRows(rows.count, expected: 1) }
            return rows[0]
        case "update":
            guard case .object(let fields)? = request["fields"] else { throw WysemanError.request("empty update", "badUpdate") }
            let filter = try WhereClause.parse(request["where"], columns: types)
            if case .nothing = filter { throw WysemanError.request("empty where clause", "badWhere") }
            if case .all(let clauses) = filter, clauses.isEmpty { throw WysemanError.request("empty where clause", "badWhere") }
            return try await view.update(fields: fields, filter: filter, context: context)
        case "insert":
            guard case .object(let fields)? = request["fields"], !fields.isEmpty else { throw WysemanError.request("empty insert", "badInsert") }
            return try await view.insert(fields: fields, context: context)
        case "delete":
            let filter = try WhereClause.parse(request["where"], columns: types)
            if case .nothing = filter { throw WysemanError.request("unbounded delete", "badDelete") }
            if case .all(let clauses) = filter, clauses.isEmpty { throw WysemanError.request("unbounded delete", "badDelete") }
            try await view.delete(filter: filter, context: context)
            return .null
        case "action":
            guard case .string(let name)? = request["name"],
                  let result = try await view.perform(NamedAction(name: name, data: request["data"]), context: context) else {
                throw WysemanError.request("Unhandled: action", "badAction")
            }
            return result
        default:
            throw WysemanError.request("Unhandled: \(request.action)", "badAction")
        }
    }

    /// The view a request reads (`table` where given, else `view`), and a table function's
    /// parameters: `schema.name(type,…)` with `params`.
    private func resolve(_ request: WysemanRequest) throws -> (ServedView, [JSONValue]) {
        let target = request["table"]?.stringValue ?? request.view
        var name = target
        var declared: [String]?
        if let open = target.firstIndex(of: "(") {
            guard target.hasSuffix(")") else { throw WysemanError.database("syntax error at or near \"(\"", sqlState: "42601") }
            name = String(target[..<open])
            let inner = target[target.index(after: open)..<target.index(before: target.endIndex)]
            declared = inner.isEmpty ? [] : inner.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        }
        if !name.contains(".") { name = "public." + name }
        guard let served = views[name] else { throw WysemanError.undefinedTable(name) }
        let view = served.view
        var parameters: [JSONValue] = []
        if case .array(let given)? = request["params"] { parameters = given }
        if let types = view.parameterTypes {
            guard parameters.count == types.count else {
                let signature = parameters.map { _ in "unknown" }.joined(separator: ", ")
                throw WysemanError.database("function \(name)(\(signature)) does not exist", sqlState: "42883")
            }
            parameters = try zip(parameters, types).enumerated().map { index, pair in
                let type = declared.flatMap { index < $0.count ? ColumnType(rawValue: $0[index]) : nil } ?? pair.1
                return try type.coerce(pair.0, column: "$\(index + 1)")
            }
        } else if !parameters.isEmpty || declared != nil {
            throw WysemanError.database("\(name) is not a function", sqlState: "42809")
        }
        return (served, parameters)
    }
}

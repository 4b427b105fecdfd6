import Foundation
import PurseDatabase
import PurseServer
import PurseFormats

/// A column of a view as its `meta` describes it.
struct ViewColumn: Sendable {
    var name: String
    var type: ColumnType
    var nonull = false
    var length: Int?
    var writable = false
    /// Shown in the default column list (`cols` of `meta`).
    var listed = true
    /// Display width in characters for the view's default form (`styles`).
    var size: Int?
    /// The values an enumerated column takes (`values` of its metadata).
    var values: [String]? = nil
}

/// Who a websocket connection is and what its views need to answer it.
struct ViewContext: Sendable {
    let user: ChipsUserRecord
    let database: Database
    let now: @Sendable () -> Date
    let configuration: ChipsConfiguration
    let notifier: ChipsNotifier
    let tickets: ChipsTickets
    /// Pushes of notices to the user's devices; nil when the provider has no APNs.
    var pushes: ChipsPushes? = nil
    /// Invoice requests a user may send (``ChipsEndpoint/invoiceRequests``).
    var invoiceRequests: SharedRateLimiter? = nil
}

/// A view (or table function) the provider serves over the Wyseman API. Views read the signed-in
/// user's own rows (`_me` views) or reference data; writes are whatever a view allows, checked
/// as the real schema's triggers and constraints check them.
protocol ChipsView: Sendable {
    var name: String { get }
    var columns: [ViewColumn] { get }
    var primaryKey: [String] { get }
    /// Types of the parameters when the view is a table function (`name(text,int)`), else nil.
    var parameterTypes: [ColumnType]? { get }
    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]]
    func update(fields: [String: JSONValue], filter: WhereClause, context: ViewContext) async throws -> JSONValue
    func insert(fields: [String: JSONValue], context: ViewContext) async throws -> JSONValue
    func delete(filter: WhereClause, context: ViewContext) async throws
    /// A named action; nil when the view has no action of that name.
    func perform(_ action: NamedAction, context: ViewContext) async throws -> JSONValue?
}

/// A view's named action as Wyseman's dispatcher hands it to a control function:
/// `{action: "action", name, view, data: {keys: [{…}], options: {…}}}`.
struct NamedAction: Sendable {
    var name: String
    var keys: [JSONValue]
    var options: [String: JSONValue]
    /// Column values an action writes (`data.fields`, as the `photo` action takes them).
    var fields: JSONValue?

    init(name: String, data: JSONValue?) {
        self.name = name
        switch data?["keys"] {
        case .array(let list)?: keys = list
        default: keys = data?["key"].map { [$0] } ?? []
        }
        options = data?["options"]?.objectValue ?? [:]
        fields = data?["fields"]
    }

    /// The one key a ticket action needs (`TMK`, too many or too few keys, otherwise).
    func singleKey(view: String) throws -> JSONValue {
        guard keys.count == 1 else { throw WysemanError.constraint("an action of this kind takes exactly one key", code: "!\(view):TMK") }
        return keys[0]
    }

    /// The content in each format asked for (`options.format`: one name, or a list answered as
    /// a list), as MyCHIPs' `buildContent` makes it.
    func content(_ make: (String?) throws -> JSONValue) rethrows -> JSONValue {
        switch options["format"] {
        case .array(let formats)?: return .array(try formats.map { try make($0.stringValue) })
        case .string(let format)?: return try make(format)
        default: return try make(nil)
        }
    }
}

extension ChipsView {
    var parameterTypes: [ColumnType]? { nil }
    var columnTypes: [String: ColumnType] { Dictionary(uniqueKeysWithValues: columns.map { ($0.name, $0.type) }) }

    func update(fields: [String: JSONValue], filter: WhereClause, context: ViewContext) async throws -> JSONValue { throw WysemanError.permissionDenied(name) }
    func insert(fields: [String: JSONValue], context: ViewContext) async throws -> JSONValue { throw WysemanError.permissionDenied(name) }
    func delete(filter: WhereClause, context: ViewContext) async throws { throw WysemanError.permissionDenied(name) }
    func perform(_ action: NamedAction, context: ViewContext) async throws -> JSONValue? { nil }

    /// The `meta` tuple as `wm.table_meta` has it: `{obj, pkey, cols, columns, styles, fkeys}`
    /// — `cols` the number of columns, `styles` the view's display styles (`display`: the
    /// columns a list shows), and per column `{col, field, type, nonull, length, pkey, values,
    /// styles}`, `field` its ordinal, `values` an enumeration's values, `styles` its display
    /// width and whether a client may write it.
    var meta: JSONValue {
        .object([
            "obj": .string(name),
            "pkey": .array(primaryKey.map(JSONValue.string)),
            "cols": .int(Int64(columns.count)),
            "columns": .array(columns.enumerated().map { index, column in
                var styles: [String: JSONValue] = ["write": .bool(column.writable), "state": .string(column.writable ? "writable" : "readonly")]
                if let size = column.size { styles["size"] = .int(Int64(size)) }
                return .object([
                    "col": .string(column.name), "field": .int(Int64(index + 1)), "type": .string(column.type.rawValue),
                    "nonull": .bool(column.nonull), "length": column.length.map { .int(Int64($0)) } ?? .null,
                    "pkey": .bool(primaryKey.contains(column.name)), "values": column.values.map { .array($0.map(JSONValue.string)) } ?? .null,
                    "styles": .object(styles),
                ])
            }),
            "styles": .object(["display": .array(columns.filter(\.listed).map { .string($0.name) })]),
            "fkeys": .null,
        ])
    }
}

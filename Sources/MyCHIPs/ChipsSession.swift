import Foundation
import PurseFormats
import PurseKit

/// Typed calls over a ``ChipsConnection`` for the views the app shows, with the language data
/// and metadata cached per language: switching language reloads labels from the provider, so a
/// language the provider adds needs no app change.
public actor ChipsSession {
    public static let usersView = "mychips.users_v_me"
    public static let languagesView = "base.language_v"
    /// The app's own texts (connection states, buttons), as MyCHIPs' CHARK app keeps them.
    public static let appTexts = "mychips.chark"
    static let languagePreference = "mychips.language"

    public nonisolated let connection: ChipsConnection
    let preferences: any Preferences
    private var languageCache: [String: [String: ViewLanguage]] = [:]
    private var metaCache: [String: ViewMeta] = [:]

    public init(connection: ChipsConnection, preferences: any Preferences) {
        self.connection = connection
        self.preferences = preferences
    }

    /// The language chosen on this device (ISO 639-2), English until one is chosen.
    public var language: String { preferences.string(forKey: Self.languagePreference) ?? "eng" }

    // MARK: Generic calls

    /// `select` on a view: rows matching `where` (any of Wyseman's forms), ordered and limited.
    /// `fields` defaults to `["*"]`, every column: Wyseman builds the statement from the list, so
    /// a select always names it. A table function called with `params` and no fields answers
    /// `[{function: value}]`, as in SQL.
    public func select(_ view: String, fields: [String]? = nil, where filter: JSONValue? = nil, order: JSONValue? = nil, limit: Int? = nil,
                       table: String? = nil, params: [JSONValue]? = nil) async throws -> [JSONValue] {
        var members: [String: JSONValue] = [:]
        if let fields { members["fields"] = .array(fields.map(JSONValue.string)) } else if params == nil { members["fields"] = ["*"] }
        if let filter { members["where"] = filter }
        if let order { members["order"] = order }
        if let limit { members["limit"] = .int(Int64(limit)) }
        if let table { members["table"] = .string(table) }
        if let params { members["params"] = .array(params) }
        guard case .array(let rows) = try await connection.request(view: view, action: "select", members) else {
            throw ChipsError.invalidResponse("a select on \(view) did not answer rows")
        }
        return rows
    }

    /// `tuple`: exactly one row.
    public func tuple(_ view: String, fields: [String]? = nil, where filter: JSONValue) async throws -> JSONValue {
        let members: [String: JSONValue] = ["where": filter, "fields": .array((fields ?? ["*"]).map(JSONValue.string))]
        return try await connection.request(view: view, action: "tuple", members)
    }

    /// `update`: the changed row.
    public func update(_ view: String, fields: [String: JSONValue], where filter: JSONValue) async throws -> JSONValue {
        try await connection.request(view: view, action: "update", ["fields": .object(fields), "where": filter])
    }

    /// A view's named action with `keys` and `options`, in Wyseman's form:
    /// `{action: "action", name, view, data: {keys, options}}`.
    public func action(_ view: String, _ name: String, keys: [JSONValue] = [], options: [String: JSONValue] = [:]) async throws -> JSONValue {
        try await connection.request(view: view, action: "action", ["name": .string(name), "data": .object(["keys": .array(keys), "options": .object(options)])])
    }

    // MARK: The user

    /// The user's own record and certificate.
    public func me() async throws -> ChipsUser {
        let rows = try await select(Self.usersView)
        guard let row = rows.first else { throw ChipsError.invalidResponse("the provider has no record for this user") }
        return try ChipsUser(row: row)
    }

    /// Changes profile fields (names, birth date, country, connections, addresses); the provider
    /// checks them and answers with the changed record.
    public func updateProfile(_ fields: [String: JSONValue]) async throws -> ChipsUser {
        let current = try await me()
        return try ChipsUser(row: try await update(Self.usersView, fields: fields, where: .object(["user_ent": .string(current.id)])))
    }

    /// A new connection ticket for this user (the `ticket` action), for moving to a new device:
    /// the device that logs in with it replaces the user's connection key, so this device's
    /// later logins are refused. To use two devices at once, export the key from one and import
    /// it in the other (``ChipsKeychain/importKey(jwk:account:)``).
    public func ticketForNewDevice() async throws -> ChipsTicket {
        let id = try await me().id
        let answer = try await action(Self.usersView, "ticket", keys: [.object(["id": .string(id)])], options: ["format": ["json"]])
        return try ChipsTicket.fromJSON(answer.arrayValue?.first ?? .null)
    }

    // MARK: Languages

    /// The languages the provider offers.
    public func languages() async throws -> [ChipsLanguage] {
        try await select(Self.languagesView, order: .array(["code"])).compactMap { row in
            guard let code = row["code"]?.stringValue else { return nil }
            return ChipsLanguage(code: code, iso2: row["iso_2"]?.stringValue, englishName: row["eng_name"]?.stringValue ?? code,
                                 name: row["name"]?.stringValue ?? code, tables: Int(row["tables"]?.int64Value ?? 0))
        }
    }

    /// A view's texts in `language` (default: the chosen one), from the cache or the provider.
    public func texts(_ view: String, language: String? = nil) async throws -> ViewLanguage {
        let code = language ?? self.language
        if let cached = languageCache[code]?[view] { return cached }
        let texts = try ViewLanguage(view: view, value: try await connection.request(view: view, action: "lang", ["language": .string(code)]))
        languageCache[code, default: [:]][view] = texts
        return texts
    }

    /// A view's metadata, cached (it does not depend on the language).
    public func meta(_ view: String) async throws -> ViewMeta {
        if let cached = metaCache[view] { return cached }
        let meta = try ViewMeta(view: view, value: try await connection.request(view: view, action: "meta"))
        metaCache[view] = meta
        return meta
    }

    /// Chooses the app's language: stored on the device, the labels of `views` loaded in it, and
    /// the user's record updated so the provider's pushes use it too.
    @discardableResult
    public func setLanguage(_ code: String, reloading views: [String] = [usersView, languagesView, appTexts]) async throws -> [String: ViewLanguage] {
        var loaded: [String: ViewLanguage] = [:]
        for view in views { loaded[view] = try await texts(view, language: code) }
        preferences.set(code, forKey: Self.languagePreference)
        languageCache = [code: languageCache[code] ?? [:]]
        _ = try? await updateProfile(["language": .string(code)])
        return loaded
    }
}

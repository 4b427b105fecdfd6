import Foundation
import PurseFormats

/// A CHIP address: `cuid:agent`, plus where the agent is reached.
public struct ChipsAddress: Sendable, Equatable, Hashable {
    public var cuid: String
    public var agent: String
    public var host: String?
    public var port: Int?

    public init(cuid: String, agent: String, host: String? = nil, port: Int? = nil) {
        self.cuid = cuid
        self.agent = agent
        self.host = host
        self.port = port
    }

    /// `cuid:agent`.
    public var text: String { cuid + ":" + agent }

    /// `cuid:agent`, or the JSON of `{cuid, agent, host, port}`.
    public init?(linkValue text: String) {
        if text.hasPrefix("{") {
            guard let value = try? StrictJSON.parse(Array(text.utf8)) else { return nil }
            self.init(chad: value)
            return
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return nil }
        self.init(cuid: String(parts[0]), agent: String(parts[1]))
    }

    /// The form `init(linkValue:)` reads back: `cuid:agent` where that says it all, otherwise the
    /// JSON of `{cuid, agent, host, port}` (an address that names where its agent is reached, or
    /// whose cuid or agent holds a colon).
    public var linkValue: String {
        if host == nil, port == nil, !cuid.contains(":"), !agent.contains(":") { return text }
        return JavaScriptJSON.stringify(json)
    }

    /// `{cuid, agent, host, port}` as a certificate's `chad`.
    public var json: JSONValue {
        var members: [String: JSONValue] = ["cuid": .string(cuid), "agent": .string(agent)]
        if let host { members["host"] = .string(host) }
        if let port { members["port"] = .int(Int64(port)) }
        return .object(members)
    }

    init?(chad: JSONValue?) {
        guard let chad, case .string(let cuid)? = chad["cuid"], case .string(let agent)? = chad["agent"] else { return nil }
        self.init(cuid: cuid, agent: agent, host: chad["host"]?.stringValue, port: chad["port"]?.int64Value.map(Int.init))
    }
}

/// The signed-in user's record (`mychips.users_v_me`) with its certificate.
public struct ChipsUser: Sendable, Equatable {
    public var id: String
    public var username: String
    public var address: ChipsAddress
    public var entityType: String
    public var surname: String
    public var firstName: String?
    public var birthDate: String?
    public var country: String?
    public var taxID: String?
    /// `[{media, address, comment}]`
    public var connect: [[String: String]]
    /// `[{type, address, city, state, post, country}]`
    public var place: [[String: String]]
    public var language: String
    /// The certificate as the provider sent it.
    public var certificate: JSONValue
    /// The row as the provider sent it, for fields this type does not name.
    public var row: JSONValue

    public init(row: JSONValue) throws(ChipsError) {
        guard case .object = row, let id = row["id"]?.stringValue, let username = row["username"]?.stringValue,
              let surname = row["ent_name"]?.stringValue else {
            throw .invalidResponse("the provider's user record lacks id, username or ent_name")
        }
        let certificate = row["cert"] ?? .null
        guard let address = ChipsAddress(chad: certificate["chad"]) ?? row["peer_cuid"]?.stringValue.flatMap({ cuid in
            row["peer_agent"]?.stringValue.map { ChipsAddress(cuid: cuid, agent: $0) }
        }) else {
            throw .invalidResponse("the provider's user record has no CHIP address")
        }
        func records(_ value: JSONValue?) -> [[String: String]] {
            (value?.arrayValue ?? []).compactMap { item in item.objectValue?.compactMapValues(\.stringValue) }
        }
        self.id = id
        self.username = username
        self.address = address
        self.entityType = row["ent_type"]?.stringValue ?? "p"
        self.surname = surname
        self.firstName = row["fir_name"]?.stringValue
        self.birthDate = row["born_date"]?.stringValue
        self.country = row["country"]?.stringValue
        self.taxID = row["tax_id"]?.stringValue
        // This provider's rows carry them; a real provider's only in the certificate.
        self.connect = records(row["connect"] ?? certificate["connect"])
        self.place = records(row["place"] ?? certificate["place"])
        self.language = row["language"]?.stringValue ?? "eng"
        self.certificate = certificate
        self.row = row
    }

    /// The name as the app shows it: "First Surname" for a person, the name for an organization.
    public var displayName: String {
        guard entityType == "p", let firstName, !firstName.isEmpty else { return surname }
        return firstName + " " + surname
    }
}

/// A language the provider offers (`base.language_v`).
public struct ChipsLanguage: Sendable, Equatable, Hashable {
    public var code: String
    public var iso2: String?
    public var englishName: String
    public var name: String
    /// How many views have labels in it.
    public var tables: Int
}

/// A view's texts in one language (the `lang` message): title, help, and labels of its columns
/// and messages.
public struct ViewLanguage: Sendable, Equatable {
    public struct Text: Sendable, Equatable {
        public var title: String
        public var help: String
    }

    public var view: String
    public var language: String
    public var title: String
    public var help: String
    public var columns: [String: Text]
    public var messages: [String: Text]

    init(view: String, value: JSONValue) throws(ChipsError) {
        guard case .string(let title)? = value["title"] else { throw .invalidResponse("the language data of \(view) has no title") }
        func texts(_ list: JSONValue?, key: String) -> [String: Text] {
            var result: [String: Text] = [:]
            for item in list?.arrayValue ?? [] {
                guard let name = item[key]?.stringValue else { continue }
                result[name] = Text(title: item["title"]?.stringValue ?? name, help: item["help"]?.stringValue ?? "")
            }
            return result
        }
        self.view = view
        self.language = value["language"]?.stringValue ?? ""
        self.title = title
        self.help = value["help"]?.stringValue ?? ""
        self.columns = texts(value["columns"], key: "col")
        self.messages = texts(value["messages"], key: "code")
    }

    /// A column's label, or its name when the language data has none.
    public func label(_ column: String) -> String { columns[column]?.title ?? column }

    /// A message's title, or its code.
    public func message(_ code: String) -> String { messages[code]?.title ?? code }
}

/// A view's metadata (the `meta` message): its key, default columns and column types.
public struct ViewMeta: Sendable, Equatable {
    public struct Column: Sendable, Equatable {
        public var name: String
        public var type: String
        public var required: Bool
        public var length: Int?
        public var writable: Bool
        /// An enumeration's values; empty for other columns.
        public var values: [String] = []
    }

    public var view: String
    public var primaryKey: [String]
    public var defaultColumns: [String]
    public var columns: [Column]

    init(view: String, value: JSONValue) throws(ChipsError) {
        guard let columns = value["columns"]?.arrayValue else { throw .invalidResponse("the metadata of \(view) has no columns") }
        self.view = view
        self.primaryKey = (value["pkey"]?.arrayValue ?? []).compactMap(\.stringValue)
        // The columns a list shows: the view's `display` style, as `wm.table_meta` gives it.
        self.defaultColumns = (value["styles"]?["display"]?.arrayValue ?? []).compactMap(\.stringValue)
        self.columns = columns.compactMap { item in
            guard let name = item["col"]?.stringValue else { return nil }
            let write = item["styles"]?["write"]
            return Column(name: name, type: item["type"]?.stringValue ?? "text", required: item["nonull"] == .bool(true),
                          length: item["length"]?.int64Value.map(Int.init), writable: write == .bool(true) || write == .int(1),
                          values: (item["values"]?.arrayValue ?? []).compactMap(\.stringValue))
        }
    }

    public func column(_ name: String) -> Column? { columns.first { $0.name == name } }
}

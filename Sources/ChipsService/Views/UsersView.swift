import Foundation
import ChipsProtocol
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit
import Synchronization

/// `mychips.users_v_me`: the signed-in user's own record, one row, with its certificate.
/// Updatable: names, birth date, country, tax id, connections, addresses and language, each
/// checked as the real schema checks it. The `ticket` action makes a new connection ticket for
/// the user (moving to a new phone): as in MyCHIPs, a user has one connection key, so the device
/// that logs in with the ticket replaces the key and the old device's logins stop working. Two
/// devices at once share one key by exporting and importing it.
struct UsersView: ChipsView {
    let name = "mychips.users_v_me"
    let primaryKey = ["id"]
    let columns: [ViewColumn] = [
        ViewColumn(name: "id", type: .text, nonull: true, size: 6),
        ViewColumn(name: "user_ent", type: .text, nonull: true, listed: false),
        ViewColumn(name: "ent_num", type: .int, listed: false),
        ViewColumn(name: "cas_name", type: .text, listed: false),
        ViewColumn(name: "frm_name", type: .text, listed: false),
        ViewColumn(name: "giv_name", type: .text, listed: false),
        ViewColumn(name: "mid_name", type: .text, listed: false),
        ViewColumn(name: "pref_name", type: .text, listed: false),
        ViewColumn(name: "ent_inact", type: .bool, nonull: true, listed: false),
        ViewColumn(name: "user_stat", type: .text, nonull: true, listed: false),
        ViewColumn(name: "title", type: .text, listed: false),
        ViewColumn(name: "gender", type: .text, listed: false),
        ViewColumn(name: "marital", type: .text, listed: false),
        ViewColumn(name: "ent_cmt", type: .text, listed: false),
        ViewColumn(name: "bank", type: .text, listed: false),
        ViewColumn(name: "age", type: .text, listed: false),
        ViewColumn(name: "user_host", type: .text, listed: false),
        ViewColumn(name: "user_port", type: .int, listed: false),
        ViewColumn(name: "peer_huid", type: .text, listed: false),
        ViewColumn(name: "user_named", type: .text, listed: false),
        ViewColumn(name: "user_cmt", type: .text, listed: false),
        ViewColumn(name: "crt_by", type: .text, listed: false),
        ViewColumn(name: "mod_by", type: .text, listed: false),
        ViewColumn(name: "agent_key", type: .bytea, listed: false),
        ViewColumn(name: "agent_ip", type: .text, listed: false),
        ViewColumn(name: "json", type: .jsonb, listed: false),
        ViewColumn(name: "username", type: .text, nonull: true, size: 12),
        ViewColumn(name: "peer_cuid", type: .text, nonull: true, size: 12),
        ViewColumn(name: "peer_agent", type: .text, nonull: true, listed: false),
        ViewColumn(name: "peer_host", type: .text, listed: false),
        ViewColumn(name: "peer_port", type: .int, listed: false),
        ViewColumn(name: "ent_type", type: .text, nonull: true, length: 1, listed: false, values: ["p", "o", "g", "r"]),
        ViewColumn(name: "ent_name", type: .text, nonull: true, length: 120, writable: true, size: 20),
        ViewColumn(name: "fir_name", type: .text, length: 120, writable: true, size: 14),
        ViewColumn(name: "std_name", type: .text, listed: false),
        ViewColumn(name: "born_date", type: .date, writable: true, size: 10),
        ViewColumn(name: "country", type: .text, length: 2, writable: true, size: 4),
        ViewColumn(name: "tax_id", type: .text, length: 40, writable: true, listed: false, size: 12),
        ViewColumn(name: "connect", type: .jsonb, writable: true, listed: false),
        ViewColumn(name: "place", type: .jsonb, writable: true, listed: false),
        ViewColumn(name: "conn_pub", type: .jsonb, listed: false),
        ViewColumn(name: "user_psig", type: .jsonb, writable: true, listed: false),
        ViewColumn(name: "language", type: .text, nonull: true, length: 3, writable: true, listed: false, size: 4),
        ViewColumn(name: "cert", type: .jsonb, listed: false),
        ViewColumn(name: "crt_date", type: .timestamp, listed: false),
        ViewColumn(name: "mod_date", type: .timestamp, listed: false),
    ]

    static let media: Set<String> = ["email", "phone", "cell", "web", "text", "fax", "pager", "other"]
    static let placeTypes: Set<String> = ["mail", "phys", "bill", "ship"]

    /// Rendered rows by username with the record's version: a read checks the version (one
    /// indexed column) and renders the row — its JSON members, dates and certificate — only when
    /// the record changed, on this replica or another.
    let rendered = RenderedRows()

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        let username = context.user.username
        let cache = rendered
        return try await context.database.read { db in
            guard let version = try await db.raw("SELECT version FROM chips_users WHERE username = \(bind: username)").first()?
                .decode(column: "version", as: Int64.self) else { return [] }
            if let row = cache.row(username, version: version) { return [row] }
            guard let user = try await ChipsUserRecord.load(username, in: db) else { return [] }
            let row = user.row(configuration: context.configuration)
            cache.store(row, for: username, version: user.version)
            return [row]
        }
    }

    func update(fields: [String: JSONValue], filter: WhereClause, context: ViewContext) async throws -> JSONValue {
        guard !fields.isEmpty else { throw WysemanError.request("empty update", "badUpdate") }
        let types = columnTypes
        var checked: [String: JSONValue] = [:]
        for (column, value) in fields {
            guard let type = types[column] else { throw WysemanError.undefinedColumn(column) }
            guard columns.first(where: { $0.name == column })?.writable == true else {
                throw WysemanError.database("column \"\(column)\" of view \(name) can only be changed by the provider", sqlState: "42501")
            }
            checked[column] = try Self.checked(column, try type.coerce(value, column: column))
        }
        let values = checked
        let configuration = context.configuration
        return .object(try await Self.write(context: context) { current in
            guard filter.matches(current.row(configuration: configuration)) else { throw WysemanError.unexpectedRows(0, expected: 1) }
            return values
        }.row(configuration: configuration))
    }

    /// Changes the user's record in one transaction, the user's row locked: `change` reads the
    /// record as stored and returns the checked columns to set. Drafts get the new certificate,
    /// and the user's channel hears of the change.
    static func write(context: ViewContext, _ change: @escaping @Sendable (ChipsUserRecord) throws -> [String: JSONValue]) async throws -> ChipsUserRecord {
        try await write(context: context) { current, _ in (try change(current), ()) }.record
    }

    /// ``write(context:_:)`` for changes that also write rows of their own (in `db`, the same
    /// transaction) and answer with what they wrote (`result`).
    static func write<Result: Sendable>(
        context: ViewContext,
        _ change: @escaping @Sendable (ChipsUserRecord, any DatabaseSession) async throws -> (values: [String: JSONValue], result: Result)
    ) async throws -> (record: ChipsUserRecord, result: Result) {
        let username = context.user.username
        let now = context.now().epochMillis
        let configuration = context.configuration
        let (updated, result, notice): (ChipsUserRecord, Result, ChipsNotifier.Notice) = try await context.database.transaction { db in
            _ = try await db.raw(SQLQueryString("SELECT version FROM chips_users WHERE username = \(bind: username)\(unsafeRaw: SQLDialectDifferences(db).lockRowsClause)")).first()
            guard let current = try await ChipsUserRecord.load(username, in: db) else { throw WysemanError.unexpectedRows(0, expected: 1) }
            let (values, result) = try await change(current, db)
            if case .string(let language)? = values["language"],
               try await db.raw("SELECT code FROM chips_languages WHERE code = \(bind: language)").first() == nil {
                throw WysemanError.database("insert or update on table \"users\" violates foreign key constraint \"users_language_fkey\"", sqlState: "23503",
                                            detail: "Key (language)=(\(language)) is not present in table \"language\".")
            }
            var assignments: [SQLQueryString] = []
            for column in values.keys.sorted() {
                switch values[column]! {
                case .null: assignments.append("\(ident: column) = NULL")
                case .string(let text): assignments.append("\(ident: column) = \(bind: text)")
                case let json: assignments.append("\(ident: column) = \(bind: JavaScriptJSON.stringify(json))")
                }
            }
            assignments.append("modified_at = \(bind: now)")
            let statement: SQLQueryString = "UPDATE chips_users SET " + assignments.joined(separator: ", ")
                + ", version = version + 1 WHERE username = \(bind: username)"
            try await db.raw(statement).run()
            guard let updated = try await ChipsUserRecord.load(username, in: db) else { throw WysemanError.unexpectedRows(0, expected: 1) }
            // Drafts carry the holder's certificate as it is now; offered and open tallies keep
            // the one that was signed.
            try await TallyStore.refreshCertificates(of: updated, configuration: configuration, now: now, in: db)
            // Clients hear of the view's columns: the certificate's files change `cert`.
            let fields = Set(values.keys.map { $0 == "cert_file" ? "cert" : $0 }).sorted()
            let notice = ChipsNotifier.Notice(username: username, channel: ChipsNotifier.channel(ofEntity: updated.userEnt),
                                              data: .object(["target": "users", "oper": "update", "time": .string(JavaScriptDate.string(Date(epochMillis: now))),
                                                             "fields": .array(fields.map(JSONValue.string))]))
            try await context.notifier.publish(notice, in: db)
            return (updated, result, notice)
        }
        context.notifier.deliverAfterCommit(notice)
        return (updated, result)
    }

    /// The checks of the real schema's columns and triggers, with its error shapes.
    static func checked(_ column: String, _ value: JSONValue) throws(WysemanError) -> JSONValue {
        func tooLong(_ limit: Int) -> WysemanError { .database("value too long for type character varying(\(limit))", sqlState: "22001") }
        switch column {
        case "ent_name":
            guard case .string(let text) = value, !text.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw .constraint("null value in column \"ent_name\" of relation \"users\" violates not-null constraint", code: "!mychips.users_v_me:NAM", sqlState: "23502")
            }
            guard text.count <= 120 else { throw tooLong(120) }
        case "fir_name":
            if case .string(let text) = value, text.count > 120 { throw tooLong(120) }
        case "tax_id":
            if case .string(let text) = value, text.count > 40 { throw tooLong(40) }
        case "born_date":
            break // typed as a date by `coerce`
        case "country":
            if case .string(let text) = value, text.range(of: "^[A-Z]{2}$", options: .regularExpression) == nil {
                throw .constraint("new row for relation \"users\" violates check constraint \"ent_country_check\"", code: "!mychips.users_v_me:CTY")
            }
        case "language":
            guard case .string(let text) = value, text.utf8.count == 3 else {
                throw .database("null value in column \"language\" of relation \"users\" violates not-null constraint", sqlState: "23502")
            }
        case "connect":
            guard case .array(let items) = value, items.count <= 20, items.allSatisfy({ item in
                guard case .string(let media)? = item["media"], media.count <= 12, Self.media.contains(media),
                      case .string(let address)? = item["address"], !address.isEmpty, address.count <= 200 else { return false }
                return item.objectValue?.keys.allSatisfy({ ["media", "address", "comment", "seq"].contains($0) }) == true && ContactList.validSeq(item)
            }) else {
                throw .constraint("invalid connection record", code: "!mychips.users_v_me:CON")
            }
        case "user_psig":
            // The public half of a P-521 signing key; MyCHIPs tallies carry it in the certificate.
            guard ChipsSignature.publicKey(value) != nil, case .object(let members) = value, members["d"] == nil else {
                throw .constraint("the signing key must be the public JWK of a P-521 key", code: "!mychips.users_v_me:PSG")
            }
        case "place":
            guard case .array(let items) = value, items.count <= 10, items.allSatisfy({ item in
                guard case .string(let type)? = item["type"], Self.placeTypes.contains(type),
                      case .string(let address)? = item["address"], !address.isEmpty, address.count <= 200,
                      let members = item.objectValue else { return false }
                return ContactList.validSeq(item) && members.allSatisfy { key, value in
                    key == "seq" || (["type", "address", "city", "state", "post", "country", "comment"].contains(key) && (value.stringValue?.count ?? 0) <= 200)
                }
            }) else {
                throw .constraint("invalid address record", code: "!mychips.users_v_me:PLA")
            }
        default: break
        }
        return value
    }

    /// The named actions: `ticket` (a connection ticket for another device, keys `[{id}]`, in
    /// each `options.format`: `json` `{ticket}`, `link`, `url`, `qr`), `chip` (a CHIP's value in
    /// `options.curr`, from `base.exchange`), and `push` (this provider's: `options
    /// {device_token, enable}` registers or retires the app's APNs token).
    func perform(_ action: NamedAction, context: ViewContext) async throws -> JSONValue? {
        switch action.name {
        case "graph":
            // The visual balance sheet as a page of its own (``ChipsReports``): `url` its link,
            // otherwise HTML that frames it.
            let link = try await ChipsReports.register(view: name, name: "graph", key: .null, context: context) + "/graph.html"
            let title = ChipsReports.Texts.of(context.user.language).balance
            return action.content { format in
                format == "url" ? .string(link)
                    : .string("<div>\(HTML.escape(title))</div><div style=\"height:100%; margin: 0;\"><iframe src=\"\(HTML.escape(link))\" style=\"width:100%; height:96%; border: 1px solid #808080;\"></iframe></div>")
            }
        case "push":
            guard case .string(let token)? = action.options["device_token"], (64...200).contains(token.utf8.count), token.allSatisfy(\.isHexDigit) else {
                throw WysemanError.request("the push action needs options {device_token}: the APNs token in hexadecimal", "badOptions")
            }
            let enable = action.options["enable"] != .bool(false)
            let username = context.user.username
            let now = context.now().epochMillis
            try await context.database.transaction { db in
                try await ChipsPushes.register(username: username, token: token.lowercased(), enable: enable, now: now, in: db)
            }
            return .object(["device_token": .string(token.lowercased()), "enabled": .bool(enable), "pushes": .bool(context.pushes != nil)])
        case "ticket":
            let key = try action.singleKey(view: name)
            guard key["id"] == nil || key["id"] == .string(context.user.userEnt) else {
                throw WysemanError.constraint("a ticket is for your own record", code: "!\(name):GTK")
            }
            let username = context.user.username
            let ticket = try await context.database.transaction { db in try await context.tickets.issue(for: username, in: db) }
            let texts = LanguagePack.actionTexts(language: context.user.language)
            return try action.content { format in
                switch format {
                case "json": return ticket.json
                case "qr": return .string(try QRCode.encode(text: ticket.link).svg())
                case "url": return .string("<a href=\"\(ticket.link)\">\(texts.connection)</a>")
                case "link": return .string("\(texts.connection):\n<a href=\"\(ticket.link)\">\(texts.connection)</a><p>\(texts.validUntil): \(JavaScriptDate.string(ticket.expires))")
                default: return .string(texts.unknownFormat)
                }
            }
        case "chip":
            // The value of a CHIP in `options.curr` (USD when none), from the exchange rates.
            let fiat = action.options["curr"]?.stringValue?.uppercased() ?? "USD"
            let rates = try await context.database.read { db in try await ExchangeView.all(in: db) }
            let value = ExchangeView.chipValue(fiat: fiat, rates: rates)
            return action.content { format in
                guard format != "json" else { return value }
                guard let rate = value["rate"]?.stringValue else { return .string("<div>1 CHIP: \(fiat) rate unknown</div>") }
                return .string("<div>1 CHIP ~ \(rate) \(fiat) as of \(value["fiat_sample"]?.stringValue ?? "")</div>")
            }
        default:
            return nil
        }
    }
}

/// The last rendered `users_v_me` row of each user, with the record version it shows.
final class RenderedRows: Sendable {
    private let rows = Mutex<[String: (version: Int64, row: [String: JSONValue])]>([:])
    /// A bound on memory: past it the cache starts over.
    private let capacity = 10_000

    func row(_ username: String, version: Int64) -> [String: JSONValue]? {
        rows.withLock { all in all[username].flatMap { $0.version == version ? $0.row : nil } }
    }

    func store(_ row: [String: JSONValue], for username: String, version: Int64) {
        rows.withLock { all in
            if all.count >= capacity { all.removeAll(keepingCapacity: true) }
            all[username] = (version, row)
        }
    }
}

/// `base.language_v`: the languages the provider speaks, with how many views are labelled in each.
struct LanguagesView: ChipsView {
    let name = "base.language_v"
    let primaryKey = ["code"]
    let columns: [ViewColumn] = [
        ViewColumn(name: "code", type: .text, nonull: true, length: 3, size: 4),
        ViewColumn(name: "iso_2", type: .text, length: 2, size: 3),
        ViewColumn(name: "eng_name", type: .text, nonull: true, size: 16),
        ViewColumn(name: "name", type: .text, nonull: true, size: 16),
        ViewColumn(name: "tables", type: .int, size: 4),
    ]

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        try await context.database.read { db in
            try await db.raw("""
                SELECT l.code, l.iso_2, l.eng_name, l.name, (SELECT COUNT(*) FROM chips_lang t WHERE t.language = l.code) AS tables
                FROM chips_languages l ORDER BY l.code
                """).all().map { row in
                [
                    "code": .string(try row.decode(column: "code", as: String.self)),
                    "iso_2": try row.decode(column: "iso_2", as: String?.self).map(JSONValue.string) ?? .null,
                    "eng_name": .string(try row.decode(column: "eng_name", as: String.self)),
                    "name": .string(try row.decode(column: "name", as: String.self)),
                    "tables": .int(Int64(try row.decode(column: "tables", as: Int.self))),
                ]
            }
        }
    }
}

/// `wm.messages(view, language)`: a view's messages in a language as rows `{code, title, help}`,
/// falling back to English for messages not translated — a table function, called with `params`.
struct MessagesFunction: ChipsView {
    let name = "wm.messages"
    let primaryKey = ["code"]
    let parameterTypes: [ColumnType]? = [.text, .text]
    let columns: [ViewColumn] = [
        ViewColumn(name: "code", type: .text, nonull: true),
        ViewColumn(name: "title", type: .text),
        ViewColumn(name: "help", type: .text),
        ViewColumn(name: "language", type: .text),
    ]

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        guard parameters.count == 2, case .string(let view) = parameters[0] else {
            throw WysemanError.database("function wm.messages(\(parameters.map { _ in "unknown" }.joined(separator: ", "))) does not exist", sqlState: "42883")
        }
        let language = LanguageCatalog.code(parameters[1].stringValue ?? "eng")
        let texts = try await LanguageCatalog.lang(of: view, language: language, database: context.database)
        return (texts?["messages"]?.arrayValue ?? []).compactMap { item in
            guard case .object(var members) = item else { return nil }
            members["language"] = .string(language)
            return members
        }
    }
}

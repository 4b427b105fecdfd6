import Foundation
import PurseDatabase
import PurseFormats
import SQLKit

/// `base.curr_eid()`: the signed-in user's entity id. The app's first request reads it as
/// `{view: "base.ent_v", table: "base.curr_eid", params: []}`, which answers `[{curr_eid}]`.
struct CurrentEntityFunction: ChipsView {
    let name = "base.curr_eid"
    let primaryKey = ["curr_eid"]
    let parameterTypes: [ColumnType]? = []
    let columns = [ViewColumn(name: "curr_eid", type: .text, nonull: true)]

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        [["curr_eid": .string(context.user.userEnt)]]
    }
}

/// `mychips.user_cert(user_ent)`: a user's CHIP certificate, `[{user_cert}]`. A user reads their
/// own; another id answers null, as for an id with no user.
struct UserCertFunction: ChipsView {
    let name = "mychips.user_cert"
    let primaryKey = ["user_cert"]
    let parameterTypes: [ColumnType]? = [.text]
    let columns = [ViewColumn(name: "user_cert", type: .jsonb)]

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        guard parameters.first == .string(context.user.userEnt) else { return [["user_cert": .null]] }
        let username = context.user.username
        let configuration = context.configuration
        let user = try await context.database.read { db in try await ChipsUserRecord.load(username, in: db) }
        return [["user_cert": user?.certificate(configuration: configuration) ?? .null]]
    }
}

/// `base.country_v`: the countries (ISO 3166 codes) with their English names and currencies
/// (ISO 4217), from the system's locale data.
struct CountriesView: ChipsView {
    let name = "base.country_v"
    let primaryKey = ["co_code"]
    let columns: [ViewColumn] = [
        ViewColumn(name: "co_code", type: .text, nonull: true, length: 2, size: 4),
        ViewColumn(name: "co_name", type: .text, nonull: true, size: 20),
        ViewColumn(name: "cur_code", type: .text, length: 3, size: 4),
    ]

    static let rows: [[String: JSONValue]] = {
        let english = Locale(identifier: "en_US")
        return Locale.Region.isoRegions.compactMap { region -> [String: JSONValue]? in
            let code = region.identifier
            guard code.utf8.count == 2, code.allSatisfy({ $0.isASCII && $0.isUppercase }),
                  let name = english.localizedString(forRegionCode: code),
                  let currency = Locale(components: .init(languageCode: "en", languageRegion: region)).currency?.identifier else { return nil }
            return ["co_code": .string(code), "co_name": .string(name), "cur_code": .string(currency)]
        }.sorted { ($0["co_code"]?.stringValue ?? "") < ($1["co_code"]?.stringValue ?? "") }
    }()

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] { Self.rows }
}

/// `mychips.comm_v_me` and `mychips.addr_v_me`: the user's ways to be reached and addresses —
/// the certificate's `connect` and `place` — one row each, as the app's profile pages read and
/// edit them. A row's `seq` stays with its entry (stored in the entry), so the app's parallel
/// edits and deletes by `seq` each reach the entry they name; `*_prim` marks the first entry of
/// its type, and setting it moves the entry ahead of the others of its type. Writes lock the
/// user's record and go through the same checks as `users_v_me`.
struct ContactView: ChipsView {
    let name: String
    let primaryKey: [String]
    let columns: [ViewColumn]
    /// The `users_v_me` column the entries live in.
    let list: String
    /// The view's column prefix (`comm`, `addr`).
    let prefix: String
    /// View column → entry member, for the columns a client writes.
    let members: [(column: String, member: String)]
    /// The entry member that is the entry's type.
    let typeMember: String

    static let comm = ContactView(
        name: "mychips.comm_v_me", primaryKey: ["comm_ent", "comm_seq"],
        columns: [
            ViewColumn(name: "comm_ent", type: .text, nonull: true, writable: true, listed: false),
            ViewColumn(name: "comm_seq", type: .int, nonull: true, size: 4),
            ViewColumn(name: "comm_type", type: .text, nonull: true, writable: true, size: 6, values: UsersView.media.sorted()),
            ViewColumn(name: "comm_spec", type: .text, nonull: true, writable: true, size: 20),
            ViewColumn(name: "comm_cmt", type: .text, writable: true, size: 20),
            ViewColumn(name: "comm_prim", type: .bool, nonull: true, writable: true, size: 4),
            ViewColumn(name: "comm_inact", type: .bool, nonull: true, listed: false),
            ViewColumn(name: "crt_date", type: .timestamp, listed: false),
        ],
        list: "connect", prefix: "comm", members: [("comm_type", "media"), ("comm_spec", "address"), ("comm_cmt", "comment")], typeMember: "media")

    static let addr = ContactView(
        name: "mychips.addr_v_me", primaryKey: ["addr_ent", "addr_seq"],
        columns: [
            ViewColumn(name: "addr_ent", type: .text, nonull: true, writable: true, listed: false),
            ViewColumn(name: "addr_seq", type: .int, nonull: true, size: 4),
            ViewColumn(name: "addr_type", type: .text, nonull: true, writable: true, size: 6, values: UsersView.placeTypes.sorted()),
            ViewColumn(name: "addr_spec", type: .text, nonull: true, writable: true, size: 20),
            ViewColumn(name: "city", type: .text, writable: true, size: 12),
            ViewColumn(name: "state", type: .text, writable: true, size: 6),
            ViewColumn(name: "pcode", type: .text, writable: true, size: 8),
            ViewColumn(name: "country", type: .text, writable: true, size: 4),
            ViewColumn(name: "addr_cmt", type: .text, writable: true, listed: false),
            ViewColumn(name: "addr_prim", type: .bool, nonull: true, writable: true, listed: false),
            ViewColumn(name: "addr_inact", type: .bool, nonull: true, listed: false),
            ViewColumn(name: "crt_date", type: .timestamp, listed: false),
        ],
        list: "place", prefix: "addr",
        members: [("addr_type", "type"), ("addr_spec", "address"), ("city", "city"), ("state", "state"), ("pcode", "post"), ("country", "country"),
                  ("addr_cmt", "comment")],
        typeMember: "type")

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        guard let user = try await ChipsUserRecord.current(context) else { return [] }
        return rows(of: user)
    }

    func rows(of user: ChipsUserRecord) -> [[String: JSONValue]] {
        var seen: Set<String> = []
        return ContactList.numbered(list == "connect" ? user.connect : user.place).map { seq, item in
            var row: [String: JSONValue] = [prefix + "_ent": .string(user.userEnt), prefix + "_seq": .int(seq)]
            for (column, member) in members { row[column] = item[member] ?? .null }
            row[prefix + "_prim"] = .bool(seen.insert(item[typeMember]?.stringValue ?? "").inserted)
            row[prefix + "_inact"] = .bool(false)
            row["crt_date"] = .string(JavaScriptDate.string(epochMillis: user.createdAt))
            return row
        }
    }

    /// The entry `fields` describe, applied over `entry`; `*_prim` says whether it goes first of its type.
    private func apply(_ fields: [String: JSONValue], to entry: [String: JSONValue], user: ChipsUserRecord) throws -> ([String: JSONValue], Bool?) {
        var entry = entry
        var primary: Bool?
        for (column, value) in fields {
            if column == prefix + "_ent" {
                guard value == .string(user.userEnt) else { throw WysemanError.database("new row violates row-level security policy", sqlState: "42501") }
            } else if column == prefix + "_prim" {
                primary = value == .bool(true) || value == .string("t") || value == .string("true")
            } else if let member = members.first(where: { $0.column == column })?.member {
                switch value {
                case .null: entry[member] = nil
                case .string(let text): entry[member] = text.isEmpty && member != "address" ? nil : .string(text)
                default: throw WysemanError.database("invalid input for column \"\(column)\" of type text", sqlState: "22P02")
                }
            } else if columns.contains(where: { $0.name == column }) {
                throw WysemanError.database("column \"\(column)\" of view \(name) can only be changed by the provider", sqlState: "42501")
            } else {
                throw WysemanError.undefinedColumn(column)
            }
        }
        return (entry, primary)
    }

    /// Writes the list `edit` makes of the stored one, checked as `users_v_me` checks it;
    /// answers with the record and the `seq` of the entry `change` touched.
    private func edit(context: ViewContext, _ change: @escaping @Sendable (ChipsUserRecord, inout [(seq: Int64, item: [String: JSONValue])]) throws -> Int64?) async throws -> (ChipsUserRecord, Int64?) {
        let list = list
        return try await UsersView.write(context: context) { current, _ in
            var entries = ContactList.numbered(list == "connect" ? current.connect : current.place)
            let seq = try change(current, &entries)
            let stored = JSONValue.array(entries.map { seq, item in
                var item = item
                item["seq"] = .int(seq)
                return .object(item)
            })
            return ([list: try UsersView.checked(list, stored)], seq)
        }
    }

    /// Moves entry `index` ahead of the others of its type.
    private static func makePrimary(_ index: Int, in entries: inout [(seq: Int64, item: [String: JSONValue])], typeMember: String) {
        let type = entries[index].item[typeMember]
        guard let first = entries.firstIndex(where: { $0.item[typeMember] == type }), first < index else { return }
        let entry = entries.remove(at: index)
        entries.insert(entry, at: first)
    }

    func insert(fields: [String: JSONValue], context: ViewContext) async throws -> JSONValue {
        let typeMember = typeMember
        let (user, seq) = try await edit(context: context) { current, entries in
            let (entry, primary) = try apply(fields, to: [:], user: current)
            let seq = (entries.map(\.seq).max() ?? 0) + 1
            entries.append((seq, entry))
            if primary == true { Self.makePrimary(entries.count - 1, in: &entries, typeMember: typeMember) }
            return seq
        }
        return .object(rows(of: user).first { $0[prefix + "_seq"] == seq.map(JSONValue.int) } ?? [:])
    }

    func update(fields: [String: JSONValue], filter: WhereClause, context: ViewContext) async throws -> JSONValue {
        let prefix = prefix
        let typeMember = typeMember
        let (user, seq) = try await edit(context: context) { current, entries in
            let matched = rows(of: current).filter(filter.matches).compactMap { $0[prefix + "_seq"]?.int64Value }
            guard matched.count == 1, let index = entries.firstIndex(where: { $0.seq == matched[0] }) else {
                throw WysemanError.unexpectedRows(matched.count, expected: 1)
            }
            let (entry, primary) = try apply(fields, to: entries[index].item, user: current)
            entries[index].item = entry
            if primary == true { Self.makePrimary(index, in: &entries, typeMember: typeMember) }
            return matched[0]
        }
        return .object(rows(of: user).first { $0[prefix + "_seq"] == seq.map(JSONValue.int) } ?? [:])
    }

    func delete(filter: WhereClause, context: ViewContext) async throws {
        let prefix = prefix
        _ = try await edit(context: context) { current, entries in
            let matched = Set(rows(of: current).filter(filter.matches).compactMap { $0[prefix + "_seq"]?.int64Value })
            entries.removeAll { matched.contains($0.seq) }
            return nil
        }
    }
}

/// The entries of a user's `connect` or `place` list and their `seq`s.
enum ContactList {
    /// A stored entry's `seq`, when it has one, is a whole number from 1.
    static func validSeq(_ item: JSONValue) -> Bool {
        guard let seq = item["seq"] else { return true }
        guard let number = seq.int64Value else { return false }
        return number > 0 && number < 1_000_000_000
    }

    /// Each entry with its `seq`: the stored one, else its place in the list (or the next free
    /// number, where that is taken) — what reads showed before any entry had one.
    static func numbered(_ list: JSONValue) -> [(seq: Int64, item: [String: JSONValue])] {
        let items = (list.arrayValue ?? []).compactMap(\.objectValue)
        var used = Set(items.compactMap { $0["seq"]?.int64Value })
        return items.enumerated().map { index, item in
            var stripped = item
            stripped["seq"] = nil
            if let seq = item["seq"]?.int64Value { return (seq, stripped) }
            var seq = Int64(index + 1)
            if used.contains(seq) { seq = (used.max() ?? 0) + 1 }
            used.insert(seq)
            return (seq, stripped)
        }
    }

    /// The entries as certificates and `users_v_me` show them: without their `seq`.
    static func shown(_ list: JSONValue) -> JSONValue {
        guard case .array(let items) = list else { return list }
        return .array(items.map { item in
            guard case .object(var members) = item else { return item }
            members["seq"] = nil
            return .object(members)
        })
    }
}

extension ChipsUserRecord {
    /// The signed-in user's record as stored now.
    static func current(_ context: ViewContext) async throws -> ChipsUserRecord? {
        let username = context.user.username
        return try await context.database.read { db in try await load(username, in: db) }
    }
}

/// `base.currency`: the ISO 4217 currencies with their English names, from the system's locale
/// data.
struct CurrenciesView: ChipsView {
    let name = "base.currency"
    let primaryKey = ["cur_code"]
    let columns: [ViewColumn] = [
        ViewColumn(name: "cur_code", type: .text, nonull: true, length: 3, size: 4),
        ViewColumn(name: "cur_name", type: .text, nonull: true, size: 20),
    ]

    static let rows: [[String: JSONValue]] = {
        let english = Locale(identifier: "en_US")
        var seen: Set<String> = []
        return Locale.Currency.isoCurrencies.compactMap { currency -> [String: JSONValue]? in
            let code = currency.identifier
            guard code.utf8.count == 3, seen.insert(code).inserted, let name = english.localizedString(forCurrencyCode: code), name != code else { return nil }
            return ["cur_code": .string(code), "cur_name": .string(name)]
        }.sorted { ($0["cur_code"]?.stringValue ?? "") < ($1["cur_code"]?.stringValue ?? "") }
    }()

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] { Self.rows }
}

/// `base.exchange`: exchange rates as sampled — `curr`, `base`, `rate` (units of `base` per unit
/// of `curr`; for `XCH`, the CHIP), `sample` (when). The operator or a rates feed writes
/// `chips_exchange`; the `chip` action on `users_v_me` prices a CHIP from it.
struct ExchangeView: ChipsView {
    let name = "base.exchange"
    let primaryKey = ["curr", "base", "sample"]
    let columns: [ViewColumn] = [
        ViewColumn(name: "curr", type: .text, nonull: true, length: 3, size: 4),
        ViewColumn(name: "base", type: .text, nonull: true, length: 3, size: 4),
        ViewColumn(name: "rate", type: .float, nonull: true, size: 10),
        ViewColumn(name: "sample", type: .date, nonull: true, size: 10),
    ]

    struct Rate: Sendable {
        var currency: String
        var base: String
        /// Decimal text, kept exact.
        var rate: String
        var sample: String

        var number: Double { Double(rate) ?? 0 }
        var row: [String: JSONValue] { ["curr": .string(currency), "base": .string(base), "rate": .double(number), "sample": .string(sample)] }
    }

    static func all(in db: any DatabaseSession) async throws -> [Rate] {
        try await db.raw("SELECT curr, base, rate, sample FROM chips_exchange ORDER BY curr, base, sample").all().map { row in
            Rate(currency: try row.decode(column: "curr", as: String.self), base: try row.decode(column: "base", as: String.self),
                 rate: try row.decode(column: "rate", as: String.self), sample: try row.decode(column: "sample", as: String.self))
        }
    }

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        try await context.database.read { db in try await Self.all(in: db) }.map(\.row)
    }

    /// The `chip` action's row for `fiat`, as MyCHIPs' `chip` control function makes it: the
    /// newest CHIP rate (`XCH`) and the newest rate of `fiat` in the same base, and a CHIP in
    /// `fiat` (`rate`, their product truncated to 4 places, as numeric text). Empty when either
    /// is missing, as the real query then finds no row.
    static func chipValue(fiat: String, rates: [Rate]) -> JSONValue {
        guard let chip = rates.filter({ $0.currency == "XCH" }).max(by: { $0.sample < $1.sample }),
              let quote = rates.filter({ $0.currency == fiat && $0.base == chip.base }).max(by: { $0.sample < $1.sample }),
              let chipRate = Decimal(string: chip.rate, locale: Locale(identifier: "en_US_POSIX")),
              let fiatRate = Decimal(string: quote.rate, locale: Locale(identifier: "en_US_POSIX")) else { return .object([:]) }
        var product = chipRate * fiatRate
        var truncated = Decimal()
        NSDecimalRound(&truncated, &product, 4, .down)
        let formatter = NumberFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.minimumFractionDigits = 4
        formatter.maximumFractionDigits = 4
        formatter.usesGroupingSeparator = false
        return .object([
            "chip": .string(chip.currency), "chip_rate": .double(chip.number), "fiat": .string(quote.currency), "fiat_rate": .double(quote.number),
            "base": .string(chip.base), "rate": .string(formatter.string(from: truncated as NSDecimalNumber) ?? "0.0000"),
            "chip_sample": .string(chip.sample), "fiat_sample": .string(quote.sample),
        ])
    }
}

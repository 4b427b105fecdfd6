import Foundation
import PurseDatabase
import PurseFormats

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

/// `mychips.comm_v_me`: the user's ways to be reached (the certificate's `connect`), one row
/// each: `comm_seq` (its place, from 1), `comm_type` (email, phone…), `comm_spec` (the address),
/// `comm_cmt`, and `comm_prim` for the first of its type. Edited through `users_v_me.connect`.
struct CommView: ChipsView {
    let name = "mychips.comm_v_me"
    let primaryKey = ["comm_ent", "comm_seq"]
    let columns: [ViewColumn] = [
        ViewColumn(name: "comm_ent", type: .text, nonull: true, listed: false),
        ViewColumn(name: "comm_seq", type: .int, nonull: true, size: 4),
        ViewColumn(name: "comm_type", type: .text, nonull: true, size: 6),
        ViewColumn(name: "comm_spec", type: .text, nonull: true, size: 20),
        ViewColumn(name: "comm_cmt", type: .text, size: 20),
        ViewColumn(name: "comm_prim", type: .bool, nonull: true, size: 4),
        ViewColumn(name: "comm_inact", type: .bool, nonull: true, listed: false),
        ViewColumn(name: "crt_date", type: .timestamp, listed: false),
    ]

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        guard let user = try await ChipsUserRecord.current(context) else { return [] }
        var seen: Set<String> = []
        return (user.connect.arrayValue ?? []).enumerated().map { index, item in
            let type = item["media"]?.stringValue ?? ""
            return ["comm_ent": .string(user.userEnt), "comm_seq": .int(Int64(index + 1)), "comm_type": .string(type),
                    "comm_spec": item["address"] ?? .null, "comm_cmt": item["comment"] ?? .null, "comm_prim": .bool(seen.insert(type).inserted),
                    "comm_inact": .bool(false), "crt_date": .string(JavaScriptDate.string(epochMillis: user.createdAt))]
        }
    }
}

/// `mychips.addr_v_me`: the user's addresses (the certificate's `place`), one row each:
/// `addr_seq`, `addr_type` (mail, phys, bill, ship), `addr_spec` (street), `city`, `state`,
/// `pcode`, `country`, `addr_cmt`, and `addr_prim` for the first of its type. Edited through
/// `users_v_me.place`.
struct AddressView: ChipsView {
    let name = "mychips.addr_v_me"
    let primaryKey = ["addr_ent", "addr_seq"]
    let columns: [ViewColumn] = [
        ViewColumn(name: "addr_ent", type: .text, nonull: true, listed: false),
        ViewColumn(name: "addr_seq", type: .int, nonull: true, size: 4),
        ViewColumn(name: "addr_type", type: .text, nonull: true, size: 6),
        ViewColumn(name: "addr_spec", type: .text, nonull: true, size: 20),
        ViewColumn(name: "city", type: .text, size: 12),
        ViewColumn(name: "state", type: .text, size: 6),
        ViewColumn(name: "pcode", type: .text, size: 8),
        ViewColumn(name: "country", type: .text, size: 4),
        ViewColumn(name: "addr_cmt", type: .text, listed: false),
        ViewColumn(name: "addr_prim", type: .bool, nonull: true, listed: false),
        ViewColumn(name: "addr_inact", type: .bool, nonull: true, listed: false),
        ViewColumn(name: "crt_date", type: .timestamp, listed: false),
    ]

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        guard let user = try await ChipsUserRecord.current(context) else { return [] }
        var seen: Set<String> = []
        return (user.place.arrayValue ?? []).enumerated().map { index, item in
            let type = item["type"]?.stringValue ?? ""
            return ["addr_ent": .string(user.userEnt), "addr_seq": .int(Int64(index + 1)), "addr_type": .string(type),
                    "addr_spec": item["address"] ?? .null, "city": item["city"] ?? .null, "state": item["state"] ?? .null,
                    "pcode": item["post"] ?? .null, "country": item["country"] ?? .null, "addr_cmt": item["comment"] ?? .null,
                    "addr_prim": .bool(seen.insert(type).inserted), "addr_inact": .bool(false),
                    "crt_date": .string(JavaScriptDate.string(epochMillis: user.createdAt))]
        }
    }
}

extension ChipsUserRecord {
    /// The signed-in user's record as stored now.
    static func current(_ context: ViewContext) async throws -> ChipsUserRecord? {
        let username = context.user.username
        return try await context.database.read { db in try await load(username, in: db) }
    }
}

import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// A user of the provider: the entity record and its certificate's parts.
struct ChipsUserRecord: Sendable, Equatable {
    var username: String
    var userEnt: String
    var cuid: String
    var entType: String
    var entName: String
    var firName: String?
    var bornDate: String?
    var country: String?
    var taxID: String?
    var connect: JSONValue
    var place: JSONValue
    /// The connection key's public JWK (JSON text), set by the first ticket login.
    var connPub: String?
    /// The signing key's public JWK (JSON text): the `public` of the user's certificate, by which
    /// their tally and chit signatures are checked.
    var userPsig: String?
    var language: String
    /// The certificate's `file` member: the user's main, public files as `{media, format,
    /// digest, comment}` (JSON text), kept beside the files by ``FilesView``; nil with none.
    var certFile: String? = nil
    var createdAt: EpochMillis
    var modifiedAt: EpochMillis
    /// Counts the record's changes (the rendered-row cache's key).
    var version: Int64

    static func load(_ username: String, in db: any DatabaseSession) async throws -> ChipsUserRecord? {
        guard username.utf8.count <= 64, let row = try await db.raw("SELECT * FROM chips_users WHERE username = \(bind: username)").first() else { return nil }
        return try decode(row)
    }

    static func decode(_ row: any SQLRow) throws -> ChipsUserRecord {
        func json(_ column: String) throws -> JSONValue {
            let text = try row.decode(column: column, as: String.self)
            return (try? StrictJSON.parse(text.utf8)) ?? .array([])
        }
        return ChipsUserRecord(
            username: try row.decode(column: "username", as: String.self), userEnt: try row.decode(column: "user_ent", as: String.self),
            cuid: try row.decode(column: "peer_cuid", as: String.self), entType: try row.decode(column: "ent_type", as: String.self),
            entName: try row.decode(column: "ent_name", as: String.self), firName: try row.decode(column: "fir_name", as: String?.self),
            bornDate: try row.decode(column: "born_date", as: String?.self), country: try row.decode(column: "country", as: String?.self),
            taxID: try row.decode(column: "tax_id", as: String?.self), connect: try json("connect"), place: try json("place"),
            connPub: try row.decode(column: "conn_pub", as: String?.self), userPsig: try row.decode(column: "user_psig", as: String?.self), language: try row.decode(column: "language", as: String.self),
            certFile: try row.decode(column: "cert_file", as: String?.self), createdAt: try row.decode(column: "created_at", as: Int64.self), modifiedAt: try row.decode(column: "modified_at", as: Int64.self),
            version: try row.decode(column: "version", as: Int64.self))
    }

    /// Makes a user, or returns the one of that name. Entity ids follow MyCHIPs' `p1000`,
    /// `p1001` …; the CHIP user id (`cuid`) is the username unless given.
    static func ensure(username: String, name: String?, cuid: String?, now: Date, in db: any DatabaseSession) async throws -> ChipsUserRecord {
        if let existing = try await load(username, in: db) { return existing }
        let next = try await db.raw("SELECT COUNT(*) AS n FROM chips_users").first()?.decode(column: "n", as: Int.self) ?? 0
        // (`makeTicket` runs this again when another new user took the id meanwhile.)
        let millis = now.epochMillis
        try await db.raw("""
            INSERT INTO chips_users (username, user_ent, peer_cuid, ent_name, created_at, modified_at)
            VALUES (\(bind: username), \(bind: "p\(1000 + next)"), \(bind: cuid ?? username), \(bind: name ?? username), \(bind: millis), \(bind: millis))
            """).run()
        guard let user = try await load(username, in: db) else { throw ConfigurationError("user \(username) was not stored") }
        return user
    }

    /// A row of `mychips.users_v_me`.
    func row(configuration: ChipsConfiguration) -> [String: JSONValue] {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        let pub = connPub.flatMap { try? StrictJSON.parse($0.utf8) } ?? .null
        let stdName = [entName, firName].compactMap { $0 }.joined(separator: ", ")
        let casual = [firName, entName].compactMap { $0 }.joined(separator: " ")
        return [
            "id": .string(userEnt), "user_ent": .string(userEnt), "ent_num": Int64(userEnt.dropFirst()).map(JSONValue.int) ?? .null,
            "cas_name": .string(entType == "o" ? entName : casual), "frm_name": .string(stdName), "giv_name": text(firName),
            "mid_name": .null, "pref_name": .null, "ent_inact": .bool(false), "user_stat": "act", "title": .null, "gender": .null,
            "marital": .null, "ent_cmt": .null, "bank": .null, "age": age.map { .string(String($0)) } ?? .null, "user_host": .null,
            "user_port": .null, "peer_huid": .null, "user_named": .null, "user_cmt": .null, "crt_by": .string(username),
            "mod_by": .string(username), "agent_key": .null, "agent_ip": .null,
            "json": .object(["id": .string(userEnt), "cuid": .string(cuid), "name": .string(entName), "type": .string(entType),
                             "begin": text(bornDate), "first": text(firName), "juris": text(country), "taxid": text(taxID),
                             "middle": .null, "prefer": .null]),
            "username": .string(username), "peer_cuid": .string(cuid), "peer_agent": .string(configuration.agent),
            "peer_host": .string(configuration.publicHost), "peer_port": .int(Int64(configuration.publicPort)),
            "ent_type": .string(entType), "ent_name": .string(entName), "fir_name": text(firName), "std_name": .string(stdName),
            "born_date": text(bornDate), "country": text(country), "tax_id": text(taxID), "connect": ContactList.shown(connect), "place": ContactList.shown(place),
            "conn_pub": pub, "user_psig": signingKey, "language": .string(language), "cert": certificate(configuration: configuration),
            "crt_date": .string(JavaScriptDate.string(Date(epochMillis: createdAt))), "mod_date": .string(JavaScriptDate.string(Date(epochMillis: modifiedAt))),
        ]
    }

    /// Whole years since `born_date`, as the real view's `age`; nil without a birth date.
    var age: Int? {
        guard let bornDate, bornDate.utf8.count == 10, let year = Int(bornDate.prefix(4)),
              let month = Int(bornDate.dropFirst(5).prefix(2)), let day = Int(bornDate.suffix(2)) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let today = calendar.dateComponents([.year, .month, .day], from: Date())
        guard let nowYear = today.year, let nowMonth = today.month, let nowDay = today.day else { return nil }
        return nowYear - year - ((nowMonth, nowDay) < (month, day) ? 1 : 0)
    }

    /// The public signing key as JSON, or null before the user has one.
    var signingKey: JSONValue { userPsig.flatMap { try? StrictJSON.parse($0.utf8) } ?? .null }

    /// The user's CHIP certificate as MyCHIPs writes it: `chad`, `type`, `name`, `public`,
    /// `connect`, `place`, `identity`, `date` and `file` (its photo and other public files, by digest).
    func certificate(configuration: ChipsConfiguration) -> JSONValue {
        var identity: [String: JSONValue] = [:]
        if let bornDate { identity["birth"] = .object(["date": .string(bornDate)]) }
        if country != nil || taxID != nil {
            var state: [String: JSONValue] = [:]
            if let country { state["country"] = .string(country) }
            if let taxID { state["id"] = .string(taxID) }
            identity["state"] = .object(state)
        }
        let name: JSONValue = entType == "o" ? .string(entName)
            : .object(["surname": .string(entName), "first": firName.map(JSONValue.string) ?? .null])
        return .object([
            "chad": .object(["cuid": .string(cuid), "agent": .string(configuration.agent), "host": .string(configuration.publicHost),
                             "port": .int(Int64(configuration.publicPort))]),
            "type": .string(entType), "name": name, "public": signingKey, "connect": ContactList.shown(connect), "place": ContactList.shown(place),
            "identity": .object(identity), "date": .string(JavaScriptDate.string(Date(epochMillis: createdAt))),
            "file": certFile.flatMap { try? StrictJSON.parse($0.utf8) } ?? .null,
        ])
    }
}

import ChipsProtocol
import Foundation
import Synchronization
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// `mychips.tallies_v_me`: the signed-in user's tallies, one row per tally copy they hold, with
/// both certificates, signatures and terms, the trading variables, the state, the balances of good
/// chits (`net`) and of good and pending ones (`net_p`), the chain's end, and `json_core` — the
/// record both partners sign. Insert makes a draft; update edits a draft and carries the state
/// requests (``TallyStore``); the `invite` action makes a tally ticket.
struct TalliesView: ChipsView {
    let name = "mychips.tallies_v_me"
    let primaryKey = ["tally_ent", "tally_seq"]
    /// The real view's columns in its order, then this provider's `part_name` and `chain_dgst`.
    let columns: [ViewColumn] = [
        ViewColumn(name: "tally_ent", type: .text, nonull: true, listed: false),
        ViewColumn(name: "tally_type", type: .text, nonull: true, writable: true, size: 5, values: ["stock", "foil"]),
        ViewColumn(name: "comment", type: .text, length: 400, writable: true, size: 20),
        ViewColumn(name: "contract", type: .jsonb, writable: true, listed: false),
        ViewColumn(name: "hold_terms", type: .jsonb, writable: true, listed: false),
        ViewColumn(name: "part_terms", type: .jsonb, writable: true, listed: false),
        ViewColumn(name: "target", type: .int, nonull: true, writable: true, listed: false),
        ViewColumn(name: "reward", type: .float, nonull: true, writable: true, listed: false),
        ViewColumn(name: "clutch", type: .float, nonull: true, writable: true, listed: false),
        ViewColumn(name: "bound", type: .int, nonull: true, writable: true, listed: false),
        ViewColumn(name: "hold_cert", type: .jsonb, listed: false),
        ViewColumn(name: "part_sig", type: .text, listed: false),
        ViewColumn(name: "hold_sig", type: .text, writable: true, listed: false),
        ViewColumn(name: "request", type: .text, writable: true, listed: false, values: ["void", "draft", "offer", "open", "close"]),
        ViewColumn(name: "tally_uuid", type: .text, nonull: true, writable: true, listed: false),
        ViewColumn(name: "version", type: .int, nonull: true, listed: false),
        ViewColumn(name: "part_ent", type: .text, listed: false),
        ViewColumn(name: "part_cert", type: .jsonb, listed: false),
        ViewColumn(name: "tally_seq", type: .int, nonull: true, size: 4),
        ViewColumn(name: "status", type: .text, nonull: true, listed: false, values: ["void", "draft", "offer", "open", "close"]),
        ViewColumn(name: "revision", type: .int, nonull: true, listed: false),
        ViewColumn(name: "digest", type: .bytea, listed: false),
        ViewColumn(name: "net_pc", type: .int, nonull: true, listed: false),
        ViewColumn(name: "net_c", type: .int, nonull: true, listed: false),
        ViewColumn(name: "tally_date", type: .timestamp, nonull: true, listed: false),
        ViewColumn(name: "hold_cuid", type: .text, nonull: true, listed: false),
        ViewColumn(name: "hold_agent", type: .text, nonull: true, listed: false),
        ViewColumn(name: "part_cuid", type: .text, size: 12),
        ViewColumn(name: "part_agent", type: .text, listed: false),
        ViewColumn(name: "hold_sets", type: .jsonb, listed: false),
        ViewColumn(name: "part_sets", type: .jsonb, listed: false),
        ViewColumn(name: "chain_conf", type: .int, nonull: true, listed: false),
        ViewColumn(name: "chain_stat", type: .text, nonull: true, listed: false),
        ViewColumn(name: "crt_by", type: .text, listed: false),
        ViewColumn(name: "mod_by", type: .text, listed: false),
        ViewColumn(name: "crt_date", type: .timestamp, listed: false),
        ViewColumn(name: "mod_date", type: .timestamp, listed: false),
        ViewColumn(name: "hold_chad", type: .jsonb, listed: false),
        ViewColumn(name: "hold_host", type: .text, listed: false),
        ViewColumn(name: "hold_port", type: .int, listed: false),
        ViewColumn(name: "part_addr", type: .text, listed: false),
        ViewColumn(name: "part_chad", type: .jsonb, listed: false),
        ViewColumn(name: "part_host", type: .text, listed: false),
        ViewColumn(name: "part_port", type: .int, listed: false),
        ViewColumn(name: "inside", type: .bool, nonull: true, listed: false),
        ViewColumn(name: "state", type: .text, nonull: true, size: 8),
        ViewColumn(name: "action", type: .bool, nonull: true, listed: false),
        ViewColumn(name: "liftable", type: .bool, nonull: true, listed: false),
        ViewColumn(name: "chits", type: .int, nonull: true, size: 5),
        ViewColumn(name: "chits_p", type: .int, nonull: true, listed: false),
        ViewColumn(name: "net", type: .numeric, nonull: true, size: 10),
        ViewColumn(name: "net_p", type: .numeric, nonull: true, listed: false),
        ViewColumn(name: "mag_p", type: .numeric, nonull: true, listed: false),
        ViewColumn(name: "latest", type: .timestamp, listed: false),
        ViewColumn(name: "json_core", type: .jsonb, listed: false),
        ViewColumn(name: "json", type: .jsonb, listed: false),
        ViewColumn(name: "digest_v", type: .bytea, listed: false),
        ViewColumn(name: "clean", type: .bool, nonull: true, listed: false),
        ViewColumn(name: "policy", type: .jsonb, listed: false),
        ViewColumn(name: "ack_hash", type: .text, listed: false),
        ViewColumn(name: "part_name", type: .text, size: 20),
        ViewColumn(name: "chain_dgst", type: .bytea, listed: false),
    ]

    /// Rendered rows by tally and the row version they show.
    let rendered = RenderedTallyRows()

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        let ent = context.user.userEnt
        let cache = rendered
        let configuration = context.configuration
        return try await context.database.read { db in
            let versions = try await db.raw("SELECT tally_seq, row_version FROM chips_tallies WHERE tally_ent = \(bind: ent) ORDER BY tally_seq").all()
                .map { (try $0.decode(column: "tally_seq", as: Int64.self), try $0.decode(column: "row_version", as: Int64.self)) }
            var rows: [[String: JSONValue]] = []
            rows.reserveCapacity(versions.count)
            var stale: [Int64] = []
            for (seq, version) in versions {
                if let row = cache.row(ent, seq, version: version) { rows.append(row) } else { stale.append(seq) }
            }
            guard !stale.isEmpty else { return rows }
            let pending = try await Self.pendingChits(of: ent, in: db)
            for tally in try await TallyRecord.all(of: ent, in: db) where stale.contains(tally.seq) {
                let row = tally.row(partnerName: Self.name(of: tally.partCert), pendingChits: pending[tally.seq] ?? 0, configuration: configuration)
                cache.store(row, ent, tally.seq, version: tally.rowVersion)
                rows.append(row)
            }
            return rows.sorted { ($0["tally_seq"]?.int64Value ?? 0) < ($1["tally_seq"]?.int64Value ?? 0) }
        }
    }

    /// Pending chits by tally, for `chits_p`.
    static func pendingChits(of ent: String, in db: any DatabaseSession) async throws -> [Int64: Int64] {
        var counts: [Int64: Int64] = [:]
        for row in try await db.raw("SELECT chit_seq, COUNT(*) AS n FROM chips_chits WHERE chit_ent = \(bind: ent) AND status = 'pend' GROUP BY chit_seq").all() {
            counts[try row.decode(column: "chit_seq", as: Int64.self)] = try row.decode(column: "n", as: Int64.self)
        }
        return counts
    }

    /// One tally's row as the view shows it.
    /// A tally's row after a write; `pending` its pending chits where the caller knows them (a
    /// new draft has none), else read.
    static func row(of tally: TallyRecord, pending known: Int64? = nil, context: ViewContext) async throws -> JSONValue {
        var pending = known
        if pending == nil { pending = try await context.database.read { db in try await pendingChits(of: tally.ent, in: db) }[tally.seq] }
        return .object(tally.row(partnerName: name(of: tally.partCert), pendingChits: pending ?? 0, configuration: context.configuration))
    }

    /// A certificate's name as lists show it: `Surname, First` or an organization's name.
    static func name(of cert: JSONValue?) -> String? {
        guard let name = cert?["name"] else { return nil }
        if case .string(let text) = name { return text }
        return [name["surname"]?.stringValue, name["first"]?.stringValue].compactMap { $0 }.joined(separator: ", ")
    }

    func insert(fields: [String: JSONValue], context: ViewContext) async throws -> JSONValue {
        try await Self.row(of: try await TallyStore(context: context).create(fields), pending: 0, context: context)
    }

    func update(fields: [String: JSONValue], filter: WhereClause, context: ViewContext) async throws -> JSONValue {
        let seq = try await target(filter, context: context)
        return try await Self.row(of: try await TallyStore(context: context).update(seq: seq, fields: fields), context: context)
    }

    /// The one tally of the user's a `where` names.
    func target(_ filter: WhereClause, context: ViewContext) async throws -> Int64 {
        let matched = try await rows(parameters: [], context: context).filter { filter.matches($0) }
        guard matched.count == 1, let seq = matched[0]["tally_seq"]?.int64Value else { throw WysemanError.unexpectedRows(matched.count, expected: 1) }
        return seq
    }

    /// `invite`: a tally ticket for the draft `keys: [{tally_seq}]`, in each `options.format`
    /// asked for — `json` (`{invite: {token, expires, chad}, url, title, message}`), `link` (an
    /// HTML anchor with the expiry), `qr` (an SVG of the link) — as MyCHIPs' `invite` control
    /// function answers.
    func perform(_ action: NamedAction, context: ViewContext) async throws -> JSONValue? {
        if action.name == "file" { return try await partnerFiles(action, context: context) }
        if action.name == "agree" { return try await agreement(action, context: context) }
        if action.name == "preview" {
            // What a tally ticket offers, before joining (`options: {token}`).
            guard case .string(let token)? = action.options["token"], !token.isEmpty else {
                throw WysemanError.constraint("a preview names the tally ticket's token", code: "!mychips.tokens:TNF", sqlState: "P0001")
            }
            return try await TallyStore(context: context).preview(token: token)
        }
        if action.name == "invoice" {
            // Ask the partner of an open tally for an invoice (`keys: [{tally_seq}]`, `options: {memo, units}`).
            guard let seq = try action.singleKey(view: name)["tally_seq"]?.int64Value else {
                throw WysemanError.constraint("the invoice action names its tally: keys [{tally_seq}]", code: "!\(name):TMK")
            }
            let units = try Self.invoiceUnits(action.options["units"])
            // Each request notifies the partner and pushes to their devices: bounded per user.
            if let limiter = context.invoiceRequests, let wait = try await limiter.take(context.user.userEnt, now: context.now()) {
                throw WysemanError.constraint("too many invoice requests: try again in \(wait) s", code: "!mychips.tallies:ISR", sqlState: "P0001")
            }
            try await TallyStore(context: context).requestInvoice(seq: seq, memo: action.options["memo"]?.stringValue.map { String($0.prefix(500)) }, units: units)
            return .object(["invoice": .bool(true)])
        }
        guard action.name == "invite" else { return nil }
        guard let seq = try action.singleKey(view: name)["tally_seq"]?.int64Value else {
            throw WysemanError.constraint("the invitation names its draft: keys [{tally_seq}]", code: "!\(name):GTK")
        }
        if action.options["reuse"] == .bool(true) || action.options["reuse"] == .string("t") {
            throw WysemanError.constraint("this provider makes single-use invitations only", code: "!\(name):GTK")
        }
        let ticket = try await TallyStore(context: context).invite(seq: seq)
        let url = "https://mychips.org/invite?token=\(URIComponent.encode(ticket.token))&chad=\(URIComponent.encode(JavaScriptJSON.stringify(ticket.chad)))"
        let texts = LanguagePack.actionTexts(language: context.user.language)
        return try action.content { format in
            switch format {
            case "json":
                return .object(["invite": ticket.json, "url": .string(url), "title": .string(texts.invitation), "message": .string(texts.validUntil)])
            case "link":
                return .string("\(texts.openLink):\n<a href=\"\(url)\">\(texts.invitation)</a><p>\(texts.validUntil): \(ticket.expires)")
            case "qr":
                return .string(try QRCode.encode(text: url).svg())
            default:
                return .string(texts.unknownFormat)
            }
        }
    }

    /// The amount an invoice request hints at: absent or null, or a whole number of milliCHIPs
    /// above zero that fits a chit's `bigint`; digits in a string, a fraction or a number out of
    /// range are refused with the amount code, `BVL`, as zero and negative amounts are.
    static func invoiceUnits(_ value: JSONValue?) throws -> Int64? {
        let refusal = WysemanError.constraint("an amount is a whole number above zero", code: "!mychips.chits:BVL")
        switch value {
        case nil, .null?: return nil
        case .int(let units)? where units > 0: return units
        default: throw refusal
        }
    }

    /// `agree`: the tally agreement of `key: {tally_seq}` as a printable PDF (``ChipsReports``):
    /// `url` its link, otherwise HTML that embeds it. A tally without a contract is
    /// `!mychips.tallies_v_me:CNF`, as in MyCHIPs.
    func agreement(_ action: NamedAction, context: ViewContext) async throws -> JSONValue {
        guard let seq = try action.singleKey(view: name)["tally_seq"]?.int64Value else {
            throw WysemanError.constraint("the agree action names its tally: key {tally_seq}", code: "!\(name):TMK")
        }
        let ent = context.user.userEnt
        let tally = try await context.database.read { db in try await TallyRecord.load(ent: ent, seq: seq, in: db) }
        guard let tally, tally.contract["source"]?.stringValue != nil else {
            throw WysemanError.constraint("the tally has no contract", code: "!\(name):CNF")
        }
        let base = try await ChipsReports.register(view: name, name: "agree", key: ["tally_seq": .int(seq)], context: context)
        let link = base + "/agree.pdf"
        let title = ChipsReports.Texts.of(context.user.language).agreement
        return action.content { format in
            switch format {
            case "url": .string(link)
            // The same agreement as a web page (`agree.html`), for an app's printable view.
            case "page": .string(base + "/agree.html")
            default:
                .string("<div>\(HTML.escape(title))</div><object data=\"\(HTML.escape(link))\" type=\"application/pdf\" style=\"width:100%; height:100%\"></object>")
            }
        }
    }

    /// `file`: the files the partner's certificate on tally `key: {tally_seq}` lists (its
    /// photo, by digest; `options.digest` picks one), with their bytes when the partner is a user
    /// of this provider, as MyCHIPs' `file` control function answers from `file_v_part`:
    /// `json`, the rows; otherwise an HTML fragment that shows each file.
    func partnerFiles(_ action: NamedAction, context: ViewContext) async throws -> JSONValue {
        guard let seq = try action.singleKey(view: name)["tally_seq"]?.int64Value else {
            throw WysemanError.constraint("the file action names its tally: key {tally_seq}", code: "!\(name):TMK")
        }
        let ent = context.user.userEnt
        let digest = action.options["digest"]?.stringValue
        let rows: [[String: JSONValue]] = try await context.database.read { db in
            guard let tally = try await TallyRecord.load(ent: ent, seq: seq, in: db) else { return [] }
            let listed = (tally.partCert?["file"]?.arrayValue ?? []).filter { digest == nil || $0["digest"]?.stringValue == digest }
            var stored: [FilesView.File] = []
            if let partEnt = tally.partEnt { stored = try await FilesView.all(of: partEnt, in: db) }
            return listed.map { entry in
                let file = stored.first { $0.hash == entry["digest"]?.stringValue && !$0.isPrivate }
                return [
                    "tally_ent": .string(ent), "tally_seq": .int(seq), "part_ent": tally.partEnt.map(JSONValue.string) ?? .null,
                    "media": entry["media"] ?? .null, "format": entry["format"] ?? .null, "digest": entry["digest"] ?? .null,
                    "comment": entry["comment"] ?? .null, "file_fmt": file.map { .string($0.format) } ?? .null,
                    "file_data": file.map { FilesView.buffer($0.data) } ?? .null, "file_name": file.map { .string($0.fileName) } ?? .null,
                    "file_ext": file.map { .string($0.extensionName) } ?? .null,
                ]
            }
        }
        return try action.content { format in
            if format == "json" { return .array(rows.map(JSONValue.object)) }
            return .string(try rows.compactMap { row -> String? in
                guard let data = row["file_data"], data != .null else { return nil }
                let bytes = try FilesView.bytes(of: data)
                let label = HTML.escape("\(row["media"]?.stringValue ?? ""); \(row["comment"]?.stringValue ?? "")")
                // Only what the bytes show to be a JPEG, PNG or GIF is embedded, as that type
                // (never the type a certificate or a row claims); anything else is a download.
                if let image = ImageHeader.read([UInt8](bytes)) {
                    return "\(label) <img src=\"data:\(image.format.rawValue);base64,\(bytes.base64EncodedString())\" alt=\"\(label)\">"
                }
                let name = HTML.escape(row["file_name"]?.stringValue ?? "file")
                return "\(label) <a download=\"\(name)\" href=\"data:application/octet-stream;base64,\(bytes.base64EncodedString())\">\(name)</a>"
            }.joined(separator: "\n"))
        }
    }
}

/// `mychips.ticket_process(ticket)`: presents a tally ticket (its JSON, or its link as text).
/// A scalar function, as in MyCHIPs: the answer is `[{ticket_process: true}]`; the inviter's
/// offer follows as a notice.
struct TicketProcessFunction: ChipsView {
    let name = "mychips.ticket_process"
    let primaryKey = ["ticket_process"]
    let parameterTypes: [ColumnType]? = [.jsonb]
    let columns: [ViewColumn] = [ViewColumn(name: "ticket_process", type: .bool, nonull: true)]

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        try await TallyStore(context: context).processTicket(parameters.first ?? .null)
        return [["ticket_process": true]]
    }
}

/// The last rendered `tallies_v_me` row of each tally, with the row version it shows.
final class RenderedTallyRows: Sendable {
    private let rows = Mutex<[String: (version: Int64, row: [String: JSONValue])]>([:])
    private let capacity = 50_000

    func row(_ ent: String, _ seq: Int64, version: Int64) -> [String: JSONValue]? {
        rows.withLock { all in all["\(ent)/\(seq)"].flatMap { $0.version == version ? $0.row : nil } }
    }

    func store(_ row: [String: JSONValue], _ ent: String, _ seq: Int64, version: Int64) {
        rows.withLock { all in
            if all.count >= capacity { all.removeAll(keepingCapacity: true) }
            all["\(ent)/\(seq)"] = (version, row)
        }
    }
}

/// `mychips.chits_v_me`: the chits on the user's tallies, from the holder's side: `net` is what the
/// chit adds to the holder's balance, `state` `A.…` for an asset and `L.…` for a liability,
/// `action` for a request the holder is asked to pay, and the chain link (`chain_idx`,
/// `chain_prev`, `chain_dgst`). Insert pays, requests or sets; update answers a request
/// (``ChitStore``).
struct ChitsView: ChipsView {
    let name = "mychips.chits_v_me"
    let primaryKey = ["chit_ent", "chit_seq", "chit_idx"]
    /// The real view's columns, in its order.
    let columns: [ViewColumn] = [
        ViewColumn(name: "chit_ent", type: .text, nonull: true, writable: true, listed: false),
        ViewColumn(name: "chit_seq", type: .int, nonull: true, writable: true, size: 4),
        ViewColumn(name: "chit_idx", type: .int, nonull: true, size: 4),
        ViewColumn(name: "chit_date", type: .timestamp, nonull: true, writable: true, size: 20),
        ViewColumn(name: "request", type: .text, writable: true, listed: false, values: ["pend", "good", "void"]),
        ViewColumn(name: "signature", type: .text, writable: true, listed: false),
        ViewColumn(name: "units", type: .int, writable: true, size: 10),
        ViewColumn(name: "reference", type: .jsonb, writable: true, listed: false),
        ViewColumn(name: "memo", type: .text, length: 400, writable: true, size: 20),
        ViewColumn(name: "chit_uuid", type: .text, nonull: true, writable: true, listed: false),
        ViewColumn(name: "chit_type", type: .text, nonull: true, writable: true, size: 4, values: ["lift", "tran", "set"]),
        ViewColumn(name: "issuer", type: .text, nonull: true, writable: true, listed: false, values: ["stock", "foil"]),
        ViewColumn(name: "crt_by", type: .text, listed: false),
        ViewColumn(name: "mod_by", type: .text, listed: false),
        ViewColumn(name: "crt_date", type: .timestamp, listed: false),
        ViewColumn(name: "mod_date", type: .timestamp, listed: false),
        ViewColumn(name: "chain_msg", type: .jsonb, listed: false),
        ViewColumn(name: "chain_idx", type: .int, listed: false),
        ViewColumn(name: "chain_dgst", type: .bytea, listed: false),
        ViewColumn(name: "chain_prev", type: .bytea, listed: false),
        ViewColumn(name: "lift_seq", type: .int, listed: false),
        ViewColumn(name: "status", type: .text, nonull: true, writable: true, size: 5, values: ["draft", "pend", "good", "void"]),
        ViewColumn(name: "digest", type: .bytea, listed: false),
        ViewColumn(name: "hold_cuid", type: .text, listed: false),
        ViewColumn(name: "part_cuid", type: .text, listed: false),
        ViewColumn(name: "tally_type", type: .text, nonull: true, listed: false),
        ViewColumn(name: "tally_uuid", type: .text, nonull: true, writable: true, listed: false),
        ViewColumn(name: "net_c", type: .int, nonull: true, listed: false),
        ViewColumn(name: "net_pc", type: .int, nonull: true, listed: false),
        ViewColumn(name: "chain_conf", type: .int, nonull: true, listed: false),
        ViewColumn(name: "net", type: .int, nonull: true, size: 10),
        ViewColumn(name: "net_g", type: .int, nonull: true, listed: false),
        ViewColumn(name: "net_p", type: .int, nonull: true, listed: false),
        ViewColumn(name: "cstate", type: .text, nonull: true, listed: false),
        ViewColumn(name: "state", type: .text, nonull: true, listed: false),
        ViewColumn(name: "action", type: .bool, nonull: true, listed: false),
        ViewColumn(name: "json_core", type: .jsonb, listed: false),
        ViewColumn(name: "json", type: .jsonb, listed: false),
        ViewColumn(name: "chain", type: .jsonb, listed: false),
        ViewColumn(name: "json_chain", type: .jsonb, listed: false),
        ViewColumn(name: "hash_v", type: .bytea, listed: false),
        ViewColumn(name: "clean", type: .bool, nonull: true, listed: false),
    ]

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        let ent = context.user.userEnt
        return try await context.database.read { db in
            let tallies = Dictionary(uniqueKeysWithValues: try await TallyRecord.all(of: ent, in: db).map { ($0.seq, $0) })
            return try await db.raw(SQLQueryString("SELECT \(unsafeRaw: ChitRecord.columns) FROM chips_chits WHERE chit_ent = \(bind: ent) ORDER BY chit_seq, chit_idx"))
                .all().compactMap { row in
                    let chit = try ChitRecord.decode(row)
                    return tallies[chit.seq].map { chit.row(tally: $0) }
                }
        }
    }

    func insert(fields: [String: JSONValue], context: ViewContext) async throws -> JSONValue {
        let (chit, tally) = try await ChitStore(context: context).insert(fields)
        return .object(chit.row(tally: tally))
    }

    func update(fields: [String: JSONValue], filter: WhereClause, context: ViewContext) async throws -> JSONValue {
        let matched = try await rows(parameters: [], context: context).filter { filter.matches($0) }
        guard matched.count == 1, let uuid = matched[0]["chit_uuid"]?.stringValue else { throw WysemanError.unexpectedRows(matched.count, expected: 1) }
        let (chit, tally) = try await ChitStore(context: context).update(seq: matched[0]["chit_seq"]?.int64Value, uuid: ChitID(uuid), fields: fields)
        return .object(chit.row(tally: tally))
    }
}

/// `mychips.contracts_v`: the tally contracts the provider publishes, with `rid`, the digest a
/// tally's `agree` names.
struct ContractsView: ChipsView {
    let name = "mychips.contracts_v"
    let primaryKey = ["host", "name", "version", "language"]
    let columns: [ViewColumn] = [
        ViewColumn(name: "host", type: .text, nonull: true, size: 12),
        ViewColumn(name: "name", type: .text, nonull: true, size: 16),
        ViewColumn(name: "version", type: .int, nonull: true, size: 3),
        ViewColumn(name: "language", type: .text, nonull: true, size: 4),
        ViewColumn(name: "title", type: .text, nonull: true, size: 20),
        ViewColumn(name: "text", type: .text, nonull: true, listed: false),
        ViewColumn(name: "sections", type: .jsonb, listed: false),
        ViewColumn(name: "published", type: .date, listed: false),
        ViewColumn(name: "rid", type: .text, nonull: true, listed: false),
        ViewColumn(name: "json_core", type: .jsonb, listed: false),
        ViewColumn(name: "top", type: .bool, nonull: true, listed: false),
        ViewColumn(name: "clean", type: .bool, nonull: true, listed: false),
    ]

    /// Each contract's record and `rid`; `top` marks the newest version of a contract in its
    /// language (what the app offers for a new tally), `clean` that the stored `rid` is the
    /// digest of the record.
    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        try await context.database.read { db in
            let contracts = try await ContractCatalog.all(in: db)
            var newest: [String: Int64] = [:]
            for contract in contracts {
                let key = "\(contract.host)/\(contract.name)/\(contract.language)"
                newest[key] = max(newest[key] ?? 0, contract.version)
            }
            return contracts.map { contract in
                var row = contract.core.objectValue ?? [:]
                row["rid"] = .string(contract.storedRID)
                row["json_core"] = contract.core
                row["top"] = .bool(newest["\(contract.host)/\(contract.name)/\(contract.language)"] == contract.version)
                row["clean"] = .bool(contract.storedRID == contract.rid)
                return row
            }
        }
    }
}

/// `mychips.tokens_v_me`: the user's tally tickets — which draft each is for, until when it is
/// good, and whether it was used. The tokens themselves are kept only as digests.
struct TokensView: ChipsView {
    let name = "mychips.tokens_v_me"
    let primaryKey = ["token_ent", "token_seq"]
    let columns: [ViewColumn] = [
        ViewColumn(name: "token_ent", type: .text, nonull: true, listed: false),
        ViewColumn(name: "token_seq", type: .int, nonull: true, size: 4),
        ViewColumn(name: "tally_seq", type: .int, nonull: true, size: 4),
        ViewColumn(name: "expires", type: .timestamp, nonull: true, size: 20),
        ViewColumn(name: "used", type: .timestamp, size: 20),
        ViewColumn(name: "used_by", type: .text, listed: false),
        ViewColumn(name: "valid", type: .bool, nonull: true, size: 4),
        ViewColumn(name: "crt_date", type: .timestamp, listed: false),
    ]

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        let ent = context.user.userEnt
        let now = context.now().epochMillis
        return try await context.database.read { db in
            try await db.raw("""
                SELECT token_seq, tally_seq, expires_at, used_at, used_by, created_at FROM chips_tally_tokens WHERE token_ent = \(bind: ent) ORDER BY token_seq
                """).all().map { row in
                let expires = try row.decode(column: "expires_at", as: Int64.self)
                let used = try row.decode(column: "used_at", as: Int64?.self)
                return [
                    "token_ent": .string(ent), "token_seq": .int(try row.decode(column: "token_seq", as: Int64.self)),
                    "tally_seq": .int(try row.decode(column: "tally_seq", as: Int64.self)),
                    "expires": .string(JavaScriptDate.string(epochMillis: expires)),
                    "used": used.map { .string(JavaScriptDate.string(epochMillis: $0)) } ?? .null,
                    "used_by": try row.decode(column: "used_by", as: String?.self).map(JSONValue.string) ?? .null,
                    "valid": .bool(used == nil && expires > now),
                    "crt_date": .string(JavaScriptDate.string(epochMillis: try row.decode(column: "created_at", as: Int64.self))),
                ]
            }
        }
    }
}

import ChipsProtocol
import Crypto
import Foundation
import Hummingbird
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// Reports that named actions serve over HTTP, as Wyclif's dispatcher serves them for MyCHIPs'
/// control functions: the action answers with a link (`options.format: "url"`) or an HTML
/// fragment that embeds it, and the app opens the link in a web view.
///
/// - `agree` on `tallies_v_me` (`key: {tally_seq}`): `agree.pdf`, the tally agreement as a
///   printable PDF — the parties, their credit terms, the contract's text, the signatures.
/// - `graph` on `users_v_me`: `graph.html`, the visual balance sheet; a partner's bubble links
///   to `click?seq=N`, which the app intercepts to open that tally.
///
/// A link is `ORIGIN/report/TOKEN/RESOURCE`. Where Wyclif's path is a hash of the request id,
/// the token here is 256 random bits, stored only as its SHA-256, and it stops working after
/// ``lifetime``: the link is the credential, since a web view sends no login.
struct ChipsReports: Sendable {
    static let lifetime: Int64 = 15 * 60 * 1000

    struct Report: Sendable {
        var username: String
        var view: String
        var name: String
        var key: JSONValue
        var language: String
    }

    /// Stores what a report shows and answers the link its resources hang from.
    static func register(view: String, name: String, key: JSONValue, context: ViewContext) async throws -> String {
        let token = Base64URL.encode(Data(RandomID.bytes(32)))
        let now = context.now().epochMillis
        let username = context.user.username
        let language = context.user.language
        try await context.database.transaction { db in
            try await db.raw("DELETE FROM chips_reports WHERE expires_at < \(bind: now)").run()
            try await db.raw("""
                INSERT INTO chips_reports (token, username, view, name, report_key, language, created_at, expires_at)
                VALUES (\(bind: SecretDigest.hex(token)), \(bind: username), \(bind: view), \(bind: name), \(bind: JavaScriptJSON.stringify(key)),
                        \(bind: language), \(bind: now), \(bind: now + lifetime))
                """).run()
        }
        return "\(context.configuration.httpOrigin)/report/\(token)"
    }

    /// The report a link's token names, while it is valid.
    static func report(token: String, database: Database, now: Date) async throws -> Report? {
        guard token.utf8.count == 43, Base64URL.decode(token) != nil else { return nil }
        let millis = now.epochMillis
        return try await database.read { db in
            guard let row = try await db.raw("""
                SELECT username, view, name, report_key, language FROM chips_reports WHERE token = \(bind: SecretDigest.hex(token)) AND expires_at >= \(bind: millis)
                """).first() else { return nil }
            return Report(username: try row.decode(column: "username", as: String.self), view: try row.decode(column: "view", as: String.self),
                          name: try row.decode(column: "name", as: String.self),
                          key: (try? StrictJSON.parse(try row.decode(column: "report_key", as: String.self).utf8)) ?? .null,
                          language: try row.decode(column: "language", as: String.self))
        }
    }

    /// `GET /report/:token/:resource`.
    static func serve(token: String, resource: String, environment: ServerEnvironment, configuration: ChipsConfiguration) async throws -> Response {
        guard let report = try await report(token: token, database: environment.database, now: environment.now()) else {
            return ChipsModule.refusal(.notFound, "This report's link has expired or does not exist: ask for the report again")
        }
        switch (report.name, resource) {
        case ("agree", "agree.pdf"):
            guard let seq = report.key["tally_seq"]?.int64Value,
                  let pdf = try await agreement(of: report.username, seq: seq, language: report.language, database: environment.database) else {
                return ChipsModule.refusal(.notFound, "The tally is no longer there")
            }
            return Response(status: .ok, headers: [.contentType: "application/pdf", .contentDisposition: "inline; filename=TallyAgreement.pdf", .cacheControl: "no-store"],
                            body: .init(byteBuffer: ByteBuffer(bytes: pdf)))
        case ("agree", "agree.html"):
            guard let seq = report.key["tally_seq"]?.int64Value,
                  let page = try await agreementPage(of: report.username, seq: seq, language: report.language, database: environment.database) else {
                return ChipsModule.refusal(.notFound, "The tally is no longer there")
            }
            var response = Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                                    body: .init(byteBuffer: ByteBuffer(string: page)))
            response.headers[.contentSecurityPolicy] = "default-src 'none'; style-src 'unsafe-inline'"
            return response
        case ("graph", "graph.html"):
            let page = try await balanceSheetPage(of: report.username, language: report.language, database: environment.database)
            var response = Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                                    body: .init(byteBuffer: ByteBuffer(string: page)))
            response.headers[.contentSecurityPolicy] = "default-src 'none'; style-src 'unsafe-inline'"
            return response
        case ("graph", "click"):
            // The app intercepts this link to open the tally; a browser that follows it stays put.
            return Response(status: .noContent)
        default:
            return ChipsModule.refusal(.notFound, "This report has no resource \(resource)")
        }
    }

    // MARK: - The tally agreement

    struct Texts {
        var agreement, tally, date, parties, stock, foil, address, terms, grants, limit, call, days, memo, contract, signatures, digest, unsigned, balance, noTallies: String

        static func of(_ language: String) -> Texts {
            language == "spa"
                ? Texts(agreement: "Acuerdo de tally", tally: "Tally", date: "Fecha", parties: "Las partes", stock: "Stock (a quien se debe valor)",
                        foil: "Foil (quien debe valor)", address: "Dirección CHIP", terms: "Términos de crédito", grants: "concede a", limit: "hasta",
                        call: "con un aviso de", days: "días", memo: "Nota", contract: "Contrato", signatures: "Firmas", digest: "Resumen del tally",
                        unsigned: "sin firmar", balance: "Balance", noTallies: "Aún no tiene tallies abiertos")
                : Texts(agreement: "Tally Agreement", tally: "Tally", date: "Date", parties: "The partners", stock: "Stock (owed value)",
                        foil: "Foil (owes value)", address: "CHIP address", terms: "Credit terms", grants: "lets", limit: "owe up to",
                        call: "with notice of", days: "days", memo: "Memo", contract: "Contract", signatures: "Signatures", digest: "Tally digest",
                        unsigned: "not signed", balance: "Balance sheet", noTallies: "No open tallies yet")
        }
    }

    /// The tally agreement of the user's tally `seq`, as a PDF; nil when there is no such tally.
    static func agreement(of username: String, seq: Int64, language: String, database: Database) async throws -> [UInt8]? {
        guard let (title, blocks) = try await agreementBlocks(of: username, seq: seq, language: language, database: database) else { return nil }
        var document = PDFText(title: title)
        for (text, style) in blocks { document.add(text, style: style) }
        return [UInt8](document.data())
    }

    /// The same agreement as a web page, for the app's printable view and the browser.
    static func agreementPage(of username: String, seq: Int64, language: String, database: Database) async throws -> String? {
        guard let (title, blocks) = try await agreementBlocks(of: username, seq: seq, language: language, database: database) else { return nil }
        var body = ""
        for (text, style) in blocks {
            let escaped = HTML.escape(text).replacingOccurrences(of: "\n", with: "<br>")
            switch style {
            case .title: body += "<h1>\(escaped)</h1>"
            case .heading: body += "<h2>\(escaped)</h2>"
            case .body: body += "<p>\(escaped)</p>"
            case .small: body += "<p class=\"small\">\(escaped)</p>"
            case .monospace: body += "<p class=\"mono\">\(escaped)</p>"
            }
        }
        return """
            <!doctype html><html lang="\(language == "spa" ? "es" : "en")"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(HTML.escape(title))</title><style>
            body{font-family:-apple-system,system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em;line-height:1.45;color:#1b1b1b}
            h1{font-size:1.6em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
            .small{font-size:.85em;color:#555}.mono{font-family:ui-monospace,monospace;font-size:.8em;word-break:break-all}
            @media print{body{margin:0}}
            </style></head><body>\(body)</body></html>
            """
    }

    /// The agreement's text as blocks of a style, for either form.
    static func agreementBlocks(of username: String, seq: Int64, language: String, database: Database) async throws -> (String, [(String, PDFText.Style)])? {
        let found: (TallyRecord, ContractCatalog.Contract?)? = try await database.read { db in
            guard let user = try await ChipsUserRecord.load(username, in: db),
                  let tally = try await TallyRecord.load(ent: user.userEnt, seq: seq, in: db) else { return nil }
            let rid = tally.contract["source"]?.stringValue
            return (tally, try await ContractCatalog.all(in: db).first { $0.rid == rid })
        }
        guard let (tally, contract) = found else { return nil }
        let texts = Texts.of(language)
        var blocks: [(String, PDFText.Style)] = []
        blocks.append((contract?.title ?? texts.agreement, .title))
        blocks.append(("\(texts.tally) \(tally.uuid) — \(texts.date) \(JavaScriptDate.string(epochMillis: tally.date))", .small))

        let holder = (cert: tally.holdCert, terms: tally.holdTerms)
        let partner = (cert: tally.partCert ?? .null, terms: tally.partTerms)
        let (stock, foil) = tally.type == .stock ? (holder, partner) : (partner, holder)
        func name(_ cert: JSONValue) -> String { TalliesView.name(of: cert) ?? "—" }
        func address(_ cert: JSONValue) -> String {
            guard let cuid = cert["chad"]?["cuid"]?.stringValue, let agent = cert["chad"]?["agent"]?.stringValue else { return "—" }
            return "\(cuid):\(agent)"
        }
        blocks.append((texts.parties, .heading))
        blocks.append(("\(texts.stock): \(name(stock.cert)) — \(texts.address) \(address(stock.cert))", .body))
        blocks.append(("\(texts.foil): \(name(foil.cert)) — \(texts.address) \(address(foil.cert))", .body))
        blocks.append((texts.terms, .heading))
        for (side, other) in [(stock, foil), (foil, stock)] {
            let limit = side.terms["limit"].map { $0.stringValue ?? JavaScriptJSON.stringify($0) } ?? "0"
            let call = side.terms["call"]?.int64Value.map { ", \(texts.call) \($0) \(texts.days)" } ?? ""
            blocks.append(("\(name(side.cert)) \(texts.grants) \(name(other.cert)) \(texts.limit) \(limit) CHIP\(call)", .body))
        }
        if let comment = tally.comment, !comment.isEmpty {
            blocks.append((texts.memo, .heading))
            blocks.append((comment, .body))
        }
        if let contract {
            blocks.append(("\(texts.contract): \(contract.title)", .heading))
            blocks.append((contract.text, .body))
            func sections(_ value: JSONValue, depth: Int) {
                for section in value.arrayValue ?? [] {
                    if let title = section["title"]?.stringValue { blocks.append((title, depth == 0 ? .heading : .body)) }
                    if let text = section["text"]?.stringValue { blocks.append((text, .body)) }
                    if depth < 4, let inner = section["sections"] { sections(inner, depth: depth + 1) }
                }
            }
            sections(contract.sections, depth: 0)
            blocks.append(("rid \(contract.rid)", .small))
        }
        blocks.append((texts.signatures, .heading))
        blocks.append(("\(texts.digest): \(tally.digest ?? texts.unsigned)", .monospace))
        let (stockSig, foilSig) = tally.type == .stock ? (tally.holdSig, tally.partSig) : (tally.partSig, tally.holdSig)
        blocks.append(("\(name(stock.cert)): \(stockSig ?? texts.unsigned)", .monospace))
        blocks.append(("\(name(foil.cert)): \(foilSig ?? texts.unsigned)", .monospace))
        return (contract?.title ?? texts.agreement, blocks)
    }

    // MARK: - The visual balance sheet

    /// The user's open tallies as the visual balance sheet, a page of its own; each partner's
    /// bubble links to `click?seq=N`.
    static func balanceSheetPage(of username: String, language: String, database: Database) async throws -> String {
        let tallies = try await database.read { db -> [TallyRecord] in
            guard let user = try await ChipsUserRecord.load(username, in: db) else { return [] }
            return try await TallyRecord.all(of: user.userEnt, in: db)
        }
        let sheet = TallyRecord.balanceSheet(tallies)
        let texts = Texts.of(language)
        let chart = BalanceSheetChart(sheet).svg(title: texts.balance) { "click?seq=\($0.id)" }
        let empty = sheet.entries.isEmpty ? "<p>\(HTML.escape(texts.noTallies))</p>" : ""
        return """
            <!doctype html><html lang="\(language == "spa" ? "es" : "en")"><head><meta charset="utf-8">\
            <meta name="viewport" content="width=device-width, initial-scale=1"><title>\(HTML.escape(texts.balance))</title>\
            <style>body{margin:0;font-family:-apple-system,system-ui,sans-serif}svg{display:block;width:100%;height:auto}p{text-align:center;color:#555}</style>\
            </head><body>\(chart)\(empty)</body></html>
            """
    }
}

import ChipsProtocol
import Foundation
import PurseDatabase
import PurseFormats
import SQLKit

/// The tally contracts the provider publishes (`mychips.contracts`). A tally's `agree` names one
/// as MyCHIPs does, `{source: rid}`; `rid` is the digest of the contract's record, so a signed
/// tally binds its partners to exactly that text.
enum ContractCatalog {
    struct Contract: Sendable {
        var host: String
        var name: String
        var version: Int64
        var language: String
        var title: String
        var text: String
        var sections: JSONValue
        var published: String
        /// The `rid` stored with the record (checked against ``rid``, the digest of the record).
        var storedRID: String

        var core: JSONValue {
            .object(["host": .string(host), "name": .string(name), "version": .int(version), "language": .string(language),
                     "title": .string(title), "text": .string(text), "sections": sections, "published": .string(published)])
        }

        var rid: String { ChipsDigest.of(core) }

        /// How a tally names it (`contract`, the record's `agree`): `{source: rid}`.
        var reference: JSONValue { .object(["source": .string(rid)]) }
    }

    /// The provider's standard tally contract.
    static let standard = Contract(
        host: "mychips.org", name: "Tally_Contract", version: 1, language: "eng", title: "Tally Agreement",
        text: "The partners to this tally keep a running record of the value each pledges to the other. Each chit one partner signs is a binding promise to deliver that value to the other, on demand or as the credit terms of this tally allow.",
        sections: .array([
            .object(["title": "Pledges", "text": "A chit signed by its issuer is a pledge of value to the other partner, measured in CHIPs. Pledges are not transferable; they are redeemed by the issuer supplying goods or services, or by a credit lift."]),
            .object(["title": "Credit terms", "text": "Each partner states the most it will let the other owe it (limit) and the notice it gives before calling a balance due (call, in days). A partner is not obliged to supply value against pledges beyond the limit it granted."]),
            .object(["title": "Closing", "text": "Either partner may ask to close the tally. It then takes only chits that bring its balance toward zero, and closes when the balance is zero."]),
        ]),
        published: "2026-01-01", storedRID: "")

    static func install(into database: Database) async throws {
        let contract = standard
        try await database.transaction { db in
            try await db.raw("""
                INSERT INTO chips_contracts (host, name, version, language, title, text, sections, published, rid)
                VALUES (\(bind: contract.host), \(bind: contract.name), \(bind: contract.version), \(bind: contract.language), \(bind: contract.title),
                        \(bind: contract.text), \(bind: JavaScriptJSON.stringify(contract.sections)), \(bind: contract.published), \(bind: contract.rid))
                ON CONFLICT (host, name, version, language) DO NOTHING
                """).run()
        }
    }

    static func all(in db: any DatabaseSession) async throws -> [Contract] {
        try await db.raw("SELECT host, name, version, language, title, text, sections, published, rid FROM chips_contracts ORDER BY host, name, version, language")
            .all().map { row in
                Contract(host: try row.decode(column: "host", as: String.self), name: try row.decode(column: "name", as: String.self),
                         version: try row.decode(column: "version", as: Int64.self), language: try row.decode(column: "language", as: String.self),
                         title: try row.decode(column: "title", as: String.self), text: try row.decode(column: "text", as: String.self),
                         sections: (try? StrictJSON.parse(try row.decode(column: "sections", as: String.self).utf8)) ?? .array([]),
                         published: try row.decode(column: "published", as: String.self), storedRID: try row.decode(column: "rid", as: String.self))
            }
    }

    /// The newest English `Tally_Contract`.
    static func defaultContract(in db: any DatabaseSession) async throws -> JSONValue {
        let contracts = try await all(in: db).filter { $0.name == standard.name && $0.language == "eng" }
        return (contracts.max { $0.version < $1.version } ?? standard).reference
    }

    /// A tally's `agree` names a contract of this provider, as `{source: rid}`.
    static func exists(_ value: JSONValue, in db: any DatabaseSession) async throws -> Bool {
        guard case .object(let members) = value, members.count == 1, case .string(let rid)? = members["source"] else { return false }
        return try await db.raw("SELECT rid FROM chips_contracts WHERE rid = \(bind: rid)").first() != nil
    }
}

import ChipsProtocol
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// One partner's copy of a tally: a row of `chips_tallies`.
struct TallyRecord: Sendable, Equatable {
    var ent: String
    var seq: Int64
    var uuid: TallyID
    var type: TallySide
    var date: Int64
    var version: Int64
    /// Times the tally was revised (countered) in negotiation; 1 for the first offer.
    var revision: Int64
    var comment: String?
    var contract: JSONValue
    var holdCert: JSONValue
    var partCert: JSONValue?
    var holdSig: String?
    var partSig: String?
    var holdTerms: JSONValue
    var partTerms: JSONValue
    var digest: String?
    var target: Int64
    var bound: Int64
    /// Parts per million.
    var reward: Int64
    var clutch: Int64
    var request: String?
    var status: TallyStatus
    var closing: Bool
    var partEnt: String?
    var holdCid: String
    var holdAgent: String
    var partCid: String?
    var partAgent: String?
    var holdSets: JSONValue
    var partSets: JSONValue
    var netC: Int64
    var netPC: Int64
    var chitsC: Int64
    var chainConf: Int64
    var chainLast: String?
    var lastChit: Int64
    /// The digest of the last chit linked into the chain (MyCHIPs' `ack_hash`), nil before any.
    var lastChitDigest: String? = nil
    var rowVersion: Int64
    var createdAt: Int64
    var modifiedAt: Int64

    static let columns = "tally_ent, tally_seq, tally_uuid, tally_type, tally_date, version, revision, comment, contract, hold_cert, part_cert, hold_sig, part_sig, hold_terms, part_terms, digest, target, bound, reward, clutch, request, status, closing, part_ent, hold_cid, hold_agent, part_cid, part_agent, hold_sets, part_sets, net_c, net_pc, chits_c, chain_conf, chain_last, last_chit, ack_hash, row_version, created_at, modified_at"

    static func decode(_ row: any SQLRow) throws -> TallyRecord {
        func json(_ column: String) throws -> JSONValue? {
            try row.decode(column: column, as: String?.self).map { (try? StrictJSON.parse($0.utf8)) ?? .null }
        }
        return TallyRecord(
            ent: try row.decode(column: "tally_ent", as: String.self), seq: try row.decode(column: "tally_seq", as: Int64.self),
            uuid: try row.decode(column: "tally_uuid", as: TallyID.self, of: "chips_tallies"),
            type: try row.decode(column: "tally_type", as: TallySide.self, of: "chips_tallies"),
            date: try row.decode(column: "tally_date", as: Int64.self), version: try row.decode(column: "version", as: Int64.self),
            revision: try row.decode(column: "revision", as: Int64.self),
            comment: try row.decode(column: "comment", as: String?.self), contract: try json("contract") ?? .null,
            holdCert: try json("hold_cert") ?? .null, partCert: try json("part_cert"),
            holdSig: try row.decode(column: "hold_sig", as: String?.self), partSig: try row.decode(column: "part_sig", as: String?.self),
            holdTerms: try json("hold_terms") ?? .object([:]), partTerms: try json("part_terms") ?? .object([:]),
            digest: try row.decode(column: "digest", as: String?.self),
            target: try row.decode(column: "target", as: Int64.self), bound: try row.decode(column: "bound", as: Int64.self),
            reward: try row.decode(column: "reward", as: Int64.self), clutch: try row.decode(column: "clutch", as: Int64.self),
            request: try row.decode(column: "request", as: String?.self), status: try row.decode(column: "status", as: TallyStatus.self, of: "chips_tallies"),
            closing: try row.decode(column: "closing", as: Int64.self) == 1, partEnt: try row.decode(column: "part_ent", as: String?.self),
            holdCid: try row.decode(column: "hold_cid", as: String.self), holdAgent: try row.decode(column: "hold_agent", as: String.self),
            partCid: try row.decode(column: "part_cid", as: String?.self), partAgent: try row.decode(column: "part_agent", as: String?.self),
            holdSets: try json("hold_sets") ?? .object([:]), partSets: try json("part_sets") ?? .object([:]),
            netC: try row.decode(column: "net_c", as: Int64.self), netPC: try row.decode(column: "net_pc", as: Int64.self),
            chitsC: try row.decode(column: "chits_c", as: Int64.self), chainConf: try row.decode(column: "chain_conf", as: Int64.self),
            chainLast: try row.decode(column: "chain_last", as: String?.self), lastChit: try row.decode(column: "last_chit", as: Int64.self),
            lastChitDigest: try row.decode(column: "ack_hash", as: String?.self),
            rowVersion: try row.decode(column: "row_version", as: Int64.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self), modifiedAt: try row.decode(column: "modified_at", as: Int64.self))
    }

    /// The record both partners sign; the holder's end is `type`.
    var core: TallyCore {
        let hold = TallyCore.Half(cert: holdCert, terms: holdTerms)
        let part = TallyCore.Half(cert: partCert ?? .null, terms: partTerms)
        return TallyCore(version: Int(version), revision: Int(revision), uuid: uuid, date: date, memo: comment, agree: contract,
                         stock: type == .stock ? hold : part, foil: type == .foil ? hold : part)
    }

    /// MyCHIPs' tally state: the status, with `H.`/`P.`/`B.` on an offer for who has signed it
    /// (holder, partner, both), `P.` on a draft a partner has joined, `C.` on an open tally
    /// being closed, and `.request` while a requested change is pending.
    var state: TallyState {
        var prefix = ""
        switch status {
        case .offer:
            if holdSig == nil, partSig != nil { prefix = "P." } else if partSig == nil, holdSig != nil { prefix = "H." } else { prefix = "B." }
        case .draft where partCert != nil: prefix = "P."
        case .open where closing: prefix = "C."
        default: break
        }
        return TallyState(rawValue: prefix + status.rawValue + (request.map { "." + $0 } ?? ""))
    }

    /// The holder has something to do: sign a joined draft, or answer the partner's offer.
    var needsAction: Bool { state == .partnerOffer || state == .partnerDraft }

    /// The limit, in milliCHIPs, of what the holder may owe: the credit the partner grants
    /// (`part_terms.limit`, in CHIPs). None given is no credit.
    var creditFromPartner: Int64 { TallyCore.units(ofLimit: partTerms["limit"]) }

    /// The holder's balance with pending chits, milliCHIPs (MyCHIPs' `net_pc`).
    var netWithPending: Int64 { CheckedAmount.saturatingSum([netC, netPC]) }

    /// A CHIP address as MyCHIPs writes it in rows and tickets: `{cuid, host, port, agent}`.
    static func chad(cuid: String?, agent: String?, configuration: ChipsConfiguration) -> JSONValue {
        guard let cuid, let agent else { return .null }
        return .object(["cuid": .string(cuid), "host": .string(configuration.publicHost), "port": .int(Int64(configuration.publicPort)),
                        "agent": .string(agent)])
    }

    /// The signed record with both signatures and the digest: MyCHIPs' `json` column and the
    /// `object` of tally notices.
    var signedJSON: JSONValue {
        guard case .object(var members) = core.json else { return .null }
        let text = { (value: String?) in value.map(JSONValue.string) ?? .null }
        members["sign"] = .object(["hash": text(digest), type.rawValue: text(holdSig), type.other.rawValue: text(partSig)])
        return .object(members)
    }

    /// A row of `mychips.tallies_v_me`, with the real view's columns and their JSON types (the
    /// sums `net`, `net_p` and `mag_p` are decimal text, as PostgreSQL's numeric reaches a
    /// Wyseman client; digests are Buffers), and two of this provider's own: `part_name` and
    /// `chain_dgst`, the chain's last link.
    func row(partnerName: String?, pendingChits: Int64 = 0, configuration: ChipsConfiguration) -> [String: JSONValue] {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        let core = core
        let date = { (millis: Int64) in JSONValue.string(JavaScriptDate.string(epochMillis: millis)) }
        let coreDigest = core.digest
        let withPending = netWithPending
        let holdChad = Self.chad(cuid: holdCid, agent: holdAgent, configuration: configuration)
        let partChad = Self.chad(cuid: partCid, agent: partAgent, configuration: configuration)
        let margin = { (ppm: Int64) -> JSONValue in ppm % 1_000_000 == 0 ? .int(ppm / 1_000_000) : .double(Double(ppm) / 1_000_000) }
        return [
            "tally_ent": .string(ent), "tally_type": .string(type.rawValue), "comment": text(comment), "contract": contract,
            "hold_terms": holdTerms, "part_terms": partTerms, "target": .int(target), "reward": margin(reward), "clutch": margin(clutch),
            "bound": .int(bound), "hold_cert": holdCert, "part_sig": text(partSig), "hold_sig": text(holdSig), "request": text(request),
            "tally_uuid": .string(uuid.rawValue), "version": .int(version), "part_ent": text(partEnt), "part_cert": partCert ?? .null,
            "tally_seq": .int(seq), "status": .string(status.rawValue), "revision": .int(revision), "digest": ChipsDigest.buffer(digest),
            "net_pc": .int(withPending), "net_c": .int(netC), "tally_date": date(self.date),
            "hold_cuid": .string(holdCid), "hold_agent": .string(holdAgent), "part_cuid": text(partCid), "part_agent": text(partAgent),
            "hold_sets": holdSets, "part_sets": partSets, "chain_conf": .int(chainConf), "chain_stat": "non",
            "crt_by": .string(ent), "mod_by": .string(ent), "crt_date": date(createdAt), "mod_date": date(modifiedAt),
            "hold_chad": holdChad, "hold_host": holdChad["host"] ?? .null, "hold_port": holdChad["port"] ?? .null,
            "part_addr": partCid.flatMap { cuid in partAgent.map { JSONValue.string(cuid + ":" + $0) } } ?? .null,
            "part_chad": partChad, "part_host": partChad["host"] ?? .null, "part_port": partChad["port"] ?? .null,
            "inside": .bool(partEnt != nil), "state": .string(state.rawValue), "action": .bool(needsAction), "liftable": .bool(status == .open),
            "chits": .int(chitsC), "chits_p": .int(CheckedAmount.saturatingSum([chitsC, pendingChits])),
            "net": .string(String(netC)), "net_p": .string(String(withPending)), "mag_p": .string(String(withPending.magnitude)),
            "latest": date(modifiedAt), "json_core": core.json, "json": signedJSON, "digest_v": ChipsDigest.buffer(coreDigest),
            "clean": .bool(digest == coreDigest),
            "policy": .object(["target": .int(target), "bound": .int(bound), "reward": margin(reward), "clutch": margin(clutch)]),
            "ack_hash": text(lastChitDigest),
            "part_name": text(partnerName), "chain_dgst": ChipsDigest.buffer(chainLast),
        ]
    }

    // MARK: Reading and writing

    static func load(ent: String, seq: Int64, in db: any DatabaseSession, locking: Bool = false) async throws -> TallyRecord? {
        let lock = locking ? SQLDialectDifferences(db).lockRowsClause : ""
        return try await db.raw(SQLQueryString("SELECT \(unsafeRaw: columns) FROM chips_tallies WHERE tally_ent = \(bind: ent) AND tally_seq = \(bind: seq)\(unsafeRaw: lock)"))
            .first().map(decode)
    }

    /// Both copies of a tally, locked in one order (foil before stock) so that two writers never
    /// wait for each other.
    static func pair(uuid: TallyID, ents: [String], in db: any DatabaseSession) async throws -> [TallyRecord] {
        let lock = SQLDialectDifferences(db).lockRowsClause
        return try await db.raw(SQLQueryString("SELECT \(unsafeRaw: columns) FROM chips_tallies WHERE tally_uuid = \(bind: uuid) AND tally_ent IN (\(binds: ents)) ORDER BY tally_type\(unsafeRaw: lock)"))
            .all().map(decode)
    }

    static func all(of ent: String, in db: any DatabaseSession) async throws -> [TallyRecord] {
        try await db.raw(SQLQueryString("SELECT \(unsafeRaw: columns) FROM chips_tallies WHERE tally_ent = \(bind: ent) ORDER BY tally_seq")).all().map(decode)
    }

    func insert(in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO chips_tallies (tally_ent, tally_seq, tally_uuid, tally_type, tally_date, version, revision, comment, contract, hold_cert, part_cert,
                hold_sig, part_sig, hold_terms, part_terms, digest, target, bound, reward, clutch, request, status, closing, part_ent, hold_cid,
                hold_agent, part_cid, part_agent, hold_sets, part_sets, net_c, net_pc, chits_c, chain_conf, chain_last, last_chit, ack_hash, row_version,
                created_at, modified_at)
            VALUES (\(bind: ent), \(bind: seq), \(bind: uuid), \(bind: type.rawValue), \(bind: date), \(bind: version), \(bind: revision), \(bind: comment),
                \(bind: Self.text(contract)), \(bind: Self.text(holdCert)), \(bind: partCert.map(Self.text)), \(bind: holdSig), \(bind: partSig),
                \(bind: Self.text(holdTerms)), \(bind: Self.text(partTerms)), \(bind: digest), \(bind: target), \(bind: bound), \(bind: reward),
                \(bind: clutch), \(bind: request), \(bind: status.rawValue), \(bind: closing ? 1 : 0), \(bind: partEnt), \(bind: holdCid), \(bind: holdAgent),
                \(bind: partCid), \(bind: partAgent), \(bind: Self.text(holdSets)), \(bind: Self.text(partSets)), \(bind: netC), \(bind: netPC),
                \(bind: chitsC), \(bind: chainConf), \(bind: chainLast), \(bind: lastChit), \(bind: lastChitDigest), 0, \(bind: createdAt), \(bind: modifiedAt))
            """).run()
    }

    /// Writes every column the tally's life changes, and counts the change.
    func save(in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE chips_tallies SET tally_type = \(bind: type.rawValue), version = \(bind: version), revision = \(bind: revision), comment = \(bind: comment),
                contract = \(bind: Self.text(contract)), hold_cert = \(bind: Self.text(holdCert)), part_cert = \(bind: partCert.map(Self.text)),
                hold_sig = \(bind: holdSig), part_sig = \(bind: partSig), hold_terms = \(bind: Self.text(holdTerms)),
                part_terms = \(bind: Self.text(partTerms)), digest = \(bind: digest), target = \(bind: target), bound = \(bind: bound),
                reward = \(bind: reward), clutch = \(bind: clutch), request = \(bind: request), status = \(bind: status.rawValue),
                closing = \(bind: closing ? 1 : 0), part_ent = \(bind: partEnt), hold_cid = \(bind: holdCid), hold_agent = \(bind: holdAgent),
                part_cid = \(bind: partCid), part_agent = \(bind: partAgent), hold_sets = \(bind: Self.text(holdSets)),
                part_sets = \(bind: Self.text(partSets)), net_c = \(bind: netC), net_pc = \(bind: netPC), chits_c = \(bind: chitsC),
                chain_conf = \(bind: chainConf), chain_last = \(bind: chainLast), last_chit = \(bind: lastChit), ack_hash = \(bind: lastChitDigest),
                row_version = row_version + 1, modified_at = \(bind: modifiedAt)
            WHERE tally_ent = \(bind: ent) AND tally_seq = \(bind: seq)
            """).run()
    }

    static func text(_ json: JSONValue) -> String { JavaScriptJSON.stringify(json) }
}

extension TallyRecord {
    /// A user's balance sheet from their tallies: the open ones, and closed ones still owing.
    static func balanceSheet(_ tallies: [TallyRecord]) -> BalanceSheet {
        BalanceSheet(entries: tallies.filter { $0.status == .open || ($0.status == .close && $0.netC != 0) }.map {
            BalanceSheet.Entry(id: String($0.seq), partner: TalliesView.name(of: $0.partCert) ?? $0.partCid ?? "?", net: $0.netC)
        })
    }
}

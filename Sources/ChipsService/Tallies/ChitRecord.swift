import ChipsProtocol
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// One partner's copy of a chit: a row of `chips_chits`.
struct ChitRecord: Sendable, Equatable {
    var ent: String
    var seq: Int64
    var idx: Int64
    var uuid: String
    var type: ChitType
    var date: Int64
    var issuer: TallySide
    var units: Int64?
    var reference: JSONValue?
    var memo: String?
    var digest: String
    var signature: String?
    var request: String?
    var status: String
    var chainIdx: Int64?
    var chainPrev: String?
    var chainHash: String?
    var createdAt: Int64
    var modifiedAt: Int64

    static let columns = "chit_ent, chit_seq, chit_idx, chit_uuid, chit_type, chit_date, issuer, units, reference, memo, digest, signature, request, status, chain_idx, chain_prev, chain_hash, created_at, modified_at"

    static func decode(_ row: any SQLRow) throws -> ChitRecord {
        ChitRecord(
            ent: try row.decode(column: "chit_ent", as: String.self), seq: try row.decode(column: "chit_seq", as: Int64.self),
            idx: try row.decode(column: "chit_idx", as: Int64.self), uuid: try row.decode(column: "chit_uuid", as: String.self),
            type: ChitType(rawValue: try row.decode(column: "chit_type", as: String.self)) ?? .tran,
            date: try row.decode(column: "chit_date", as: Int64.self),
            issuer: TallySide(rawValue: try row.decode(column: "issuer", as: String.self)) ?? .foil,
            units: try row.decode(column: "units", as: Int64?.self),
            reference: try row.decode(column: "reference", as: String?.self).flatMap { try? StrictJSON.parse($0.utf8) },
            memo: try row.decode(column: "memo", as: String?.self), digest: try row.decode(column: "digest", as: String.self),
            signature: try row.decode(column: "signature", as: String?.self), request: try row.decode(column: "request", as: String?.self),
            status: try row.decode(column: "status", as: String.self), chainIdx: try row.decode(column: "chain_idx", as: Int64?.self),
            chainPrev: try row.decode(column: "chain_prev", as: String?.self), chainHash: try row.decode(column: "chain_hash", as: String?.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self), modifiedAt: try row.decode(column: "modified_at", as: Int64.self))
    }

    func core(tally uuid: String) -> ChitCore {
        ChitCore(tally: uuid, by: issuer, type: type, uuid: self.uuid, date: date, units: units, reference: reference, memo: memo)
    }

    /// The holder's side of the balance: a chit its holder issued counts against the holder.
    func net(holder: TallySide) -> Int64 {
        guard let units else { return 0 }
        return issuer == holder ? -units : units
    }

    /// MyCHIPs' chit state: `A.` (an asset to the holder: the partner issued it) or `L.` (a
    /// liability: the holder issued it), the status, and `.request` while one is pending.
    func state(holder: TallySide) -> String {
        (issuer != holder ? "A." : "L.") + status + (request.map { "." + $0 } ?? "")
    }

    /// A row of `mychips.chits_v_me`.
    func row(tally: TallyRecord) -> [String: JSONValue] {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        let state = state(holder: tally.type)
        let net = net(holder: tally.type)
        return [
            "chit_ent": .string(ent), "chit_seq": .int(seq), "chit_idx": .int(idx), "chit_uuid": .string(uuid),
            "chit_type": .string(type.rawValue), "chit_date": .string(JavaScriptDate.string(epochMillis: date)),
            "issuer": .string(issuer.rawValue), "units": units.map(JSONValue.int) ?? .null, "reference": reference ?? .null,
            "memo": text(memo), "digest": .string(digest), "signature": text(signature), "request": text(request),
            "status": .string(status), "state": .string(state), "action": .bool(state == "L.pend"),
            "net": .int(net), "net_g": .int(status == "good" ? net : 0), "net_p": .int(status == "void" ? 0 : net),
            "chain_idx": chainIdx.map(JSONValue.int) ?? .null, "chain_prev": text(chainPrev), "chain_dgst": text(chainHash),
            "tally_uuid": .string(tally.uuid), "tally_type": .string(tally.type.rawValue), "part_cid": text(tally.partCid),
            "json_core": core(tally: tally.uuid).json,
            "crt_date": .string(JavaScriptDate.string(epochMillis: createdAt)), "mod_date": .string(JavaScriptDate.string(epochMillis: modifiedAt)),
        ]
    }

    static func load(ent: String, seq: Int64, uuid: String, in db: any DatabaseSession) async throws -> ChitRecord? {
        try await db.raw(SQLQueryString("SELECT \(unsafeRaw: columns) FROM chips_chits WHERE chit_ent = \(bind: ent) AND chit_seq = \(bind: seq) AND chit_uuid = \(bind: uuid)"))
            .first().map(decode)
    }

    func insert(in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO chips_chits (chit_ent, chit_seq, chit_idx, chit_uuid, chit_type, chit_date, issuer, units, reference, memo, digest,
                signature, request, status, chain_idx, chain_prev, chain_hash, created_at, modified_at)
            VALUES (\(bind: ent), \(bind: seq), \(bind: idx), \(bind: uuid), \(bind: type.rawValue), \(bind: date), \(bind: issuer.rawValue),
                \(bind: units), \(bind: reference.map(TallyRecord.text)), \(bind: memo), \(bind: digest), \(bind: signature), \(bind: request),
                \(bind: status), \(bind: chainIdx), \(bind: chainPrev), \(bind: chainHash), \(bind: createdAt), \(bind: modifiedAt))
            """).run()
    }

    func save(in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE chips_chits SET signature = \(bind: signature), request = \(bind: request), status = \(bind: status),
                chain_idx = \(bind: chainIdx), chain_prev = \(bind: chainPrev), chain_hash = \(bind: chainHash), modified_at = \(bind: modifiedAt)
            WHERE chit_ent = \(bind: ent) AND chit_seq = \(bind: seq) AND chit_idx = \(bind: idx)
            """).run()
    }
}

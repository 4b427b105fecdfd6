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
    var uuid: ChitID
    var type: ChitType
    var date: Int64
    var issuer: TallySide
    var units: Int64?
    var reference: JSONValue?
    var memo: String?
    var digest: String
    var signature: String?
    var request: String?
    var status: ChitStatus
    var chainIdx: Int64?
    var chainPrev: String?
    var chainHash: String?
    var createdAt: Int64
    var modifiedAt: Int64

    static let columns = "chit_ent, chit_seq, chit_idx, chit_uuid, chit_type, chit_date, issuer, units, reference, memo, digest, signature, request, status, chain_idx, chain_prev, chain_hash, created_at, modified_at"

    static func decode(_ row: any SQLRow) throws -> ChitRecord {
        ChitRecord(
            ent: try row.decode(column: "chit_ent", as: String.self), seq: try row.decode(column: "chit_seq", as: Int64.self),
            idx: try row.decode(column: "chit_idx", as: Int64.self), uuid: try row.decode(column: "chit_uuid", as: ChitID.self, of: "chips_chits"),
            type: try row.decode(column: "chit_type", as: ChitType.self, of: "chips_chits"),
            date: try row.decode(column: "chit_date", as: Int64.self),
            issuer: try row.decode(column: "issuer", as: TallySide.self, of: "chips_chits"),
            units: try row.decode(column: "units", as: Int64?.self),
            reference: try row.decode(column: "reference", as: String?.self).flatMap { try? StrictJSON.parse($0.utf8) },
            memo: try row.decode(column: "memo", as: String?.self), digest: try row.decode(column: "digest", as: String.self),
            signature: try row.decode(column: "signature", as: String?.self), request: try row.decode(column: "request", as: String?.self),
            status: try row.decode(column: "status", as: ChitStatus.self, of: "chips_chits"), chainIdx: try row.decode(column: "chain_idx", as: Int64?.self),
            chainPrev: try row.decode(column: "chain_prev", as: String?.self), chainHash: try row.decode(column: "chain_hash", as: String?.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self), modifiedAt: try row.decode(column: "modified_at", as: Int64.self))
    }

    func core(tally uuid: TallyID) -> ChitCore {
        ChitCore(tally: uuid, by: issuer, type: type, uuid: self.uuid, date: date, units: units, reference: reference, memo: memo)
    }

    /// The holder's side of the balance: a chit its holder issued counts against the holder.
    func net(holder: TallySide) -> Int64 {
        guard let units else { return 0 }
        return issuer == holder ? -units : units
    }

    /// MyCHIPs' chit state: `A.` (an asset to the holder: the partner issued it) or `L.` (a
    /// liability: the holder issued it), the status, and `.request` while one is pending.
    func state(holder: TallySide) -> ChitState {
        ChitState(asset: issuer != holder, status: status, request: request)
    }

    /// The record with its signature and, once linked, its digest: MyCHIPs' `json` column and
    /// the `object` of chit notices.
    func signedJSON(tally uuid: TallyID) -> JSONValue {
        guard case .object(var members) = core(tally: uuid).json else { return .null }
        if let signature { members["sign"] = .string(signature) }
        if chainIdx != nil { members["hash"] = .string(digest) }
        return .object(members)
    }

    /// A row of `mychips.chits_v_me` with the real view's columns and JSON types: digests are
    /// Buffers, `net` what the chit adds to the holder's balance, `net_g` and `net_p` the same
    /// when it is good (or good or pending), `net_c`/`net_pc` the tally's balances.
    func row(tally: TallyRecord) -> [String: JSONValue] {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        let state = state(holder: tally.type)
        let net = net(holder: tally.type)
        let json = signedJSON(tally: tally.uuid)
        var chain: [String: JSONValue] = ["conf": .int(tally.chainConf)]
        if let chainIdx, let chainHash {
            chain["index"] = .int(chainIdx)
            chain["hash"] = .string(chainHash)
        }
        var jsonChain = json.objectValue ?? [:]
        jsonChain["chain"] = .object(chain)
        let date = { (millis: Int64) in JSONValue.string(JavaScriptDate.string(epochMillis: millis)) }
        return [
            "chit_ent": .string(ent), "chit_seq": .int(seq), "chit_idx": .int(idx), "chit_date": date(self.date), "request": text(request),
            "signature": text(signature), "units": units.map(JSONValue.int) ?? .null, "reference": reference ?? .null, "memo": text(memo),
            "chit_uuid": .string(uuid.rawValue), "chit_type": .string(type.rawValue), "issuer": .string(issuer.rawValue),
            "crt_by": .string(ent), "mod_by": .string(ent), "crt_date": date(createdAt), "mod_date": date(modifiedAt),
            "chain_msg": .null, "chain_idx": chainIdx.map(JSONValue.int) ?? .null, "chain_dgst": ChipsDigest.buffer(chainHash),
            "chain_prev": ChipsDigest.buffer(chainPrev), "lift_seq": .null, "status": .string(status.rawValue), "digest": ChipsDigest.buffer(digest),
            "hold_cuid": .string(tally.holdCid), "part_cuid": text(tally.partCid), "tally_type": .string(tally.type.rawValue),
            "tally_uuid": .string(tally.uuid.rawValue), "net_c": .int(tally.netC), "net_pc": .int(tally.netWithPending), "chain_conf": .int(tally.chainConf),
            "net": .int(net), "net_g": .int(status == .good ? net : 0), "net_p": .int(status == .good || status == .pend ? net : 0),
            "cstate": .string(chainIdx == nil ? "Unlinked" : "Linked"), "state": .string(state.rawValue), "action": .bool(state == .requestToPay),
            "json_core": core(tally: tally.uuid).json, "json": json, "chain": .object(chain), "json_chain": .object(jsonChain),
            "hash_v": ChipsDigest.buffer(chainHash ?? digest), "clean": .bool(chainHash != nil),
        ]
    }

    static func load(ent: String, seq: Int64, uuid: ChitID, in db: any DatabaseSession) async throws -> ChitRecord? {
        try await db.raw(SQLQueryString("SELECT \(unsafeRaw: columns) FROM chips_chits WHERE chit_ent = \(bind: ent) AND chit_seq = \(bind: seq) AND chit_uuid = \(bind: uuid)"))
            .first().map(decode)
    }

    func insert(in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO chips_chits (chit_ent, chit_seq, chit_idx, chit_uuid, chit_type, chit_date, issuer, units, reference, memo, digest,
                signature, request, status, chain_idx, chain_prev, chain_hash, created_at, modified_at)
            VALUES (\(bind: ent), \(bind: seq), \(bind: idx), \(bind: uuid), \(bind: type.rawValue), \(bind: date), \(bind: issuer.rawValue),
                \(bind: units), \(bind: reference.map(TallyRecord.text)), \(bind: memo), \(bind: digest), \(bind: signature), \(bind: request),
                \(bind: status.rawValue), \(bind: chainIdx), \(bind: chainPrev), \(bind: chainHash), \(bind: createdAt), \(bind: modifiedAt))
            """).run()
    }

    func save(in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE chips_chits SET signature = \(bind: signature), request = \(bind: request), status = \(bind: status.rawValue),
                chain_idx = \(bind: chainIdx), chain_prev = \(bind: chainPrev), chain_hash = \(bind: chainHash), modified_at = \(bind: modifiedAt)
            WHERE chit_ent = \(bind: ent) AND chit_seq = \(bind: seq) AND chit_idx = \(bind: idx)
            """).run()
    }
}

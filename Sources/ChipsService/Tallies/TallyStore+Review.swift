import ChipsProtocol
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

extension TallyStore {
    /// What a tally ticket offers, before the invited user joins: the inviter's name, the
    /// terms of the draft from the inviter's side, its comment and contract, and when the ticket
    /// expires. The ticket is the capability; it is not spent. A ticket that is unknown, used or
    /// expired is `!mychips.tokens:TNF`, as joining with it would be.
    func preview(token: String) async throws -> JSONValue {
        let millis = now().epochMillis
        return try await database.read { db in
            guard let row = try await db.raw("""
                SELECT token_ent, tally_seq, expires_at FROM chips_tally_tokens
                WHERE token = \(bind: SecretDigest.hex(token)) AND used_at IS NULL AND expires_at > \(bind: millis)
                """).first(),
                let tally = try await TallyRecord.load(ent: try row.decode(column: "token_ent", as: String.self),
                                                       seq: try row.decode(column: "tally_seq", as: Int64.self), in: db),
                tally.status == .draft, tally.partCert == nil else {
                throw WysemanError.constraint("the tally ticket is unknown, used or expired", code: "!mychips.tokens:TNF", sqlState: "P0001")
            }
            // The joining user's view: their own side is the inviter's other side.
            return .object([
                "inviter": tally.holdCert["name"] ?? .null, "inviter_chad": tally.holdCert["chad"] ?? .null,
                "tally_type": .string(tally.type.other.rawValue), "comment": tally.comment.map(JSONValue.string) ?? .null,
                "contract": tally.contract, "hold_terms": tally.partTerms, "part_terms": tally.holdTerms,
                "expires": .string(JavaScriptDate.string(epochMillis: try row.decode(column: "expires_at", as: Int64.self))),
            ])
        }
    }

    /// Asks the partner of an open tally for an invoice (the payer at a vendor's payment code,
    /// without an amount): a tally notice with `reason: "invoice"`, the memo and the amount
    /// hinted, to the partner's channel and devices. The partner answers with a request.
    func requestInvoice(seq: Int64, memo: String?, units: Int64?) async throws {
        let user = user
        let notifier = notifier
        let pushes = pushes
        let notice = try await database.transaction { db -> ChipsNotifier.Notice in
            guard let mine = try await TallyRecord.load(ent: user.userEnt, seq: seq, in: db), mine.status == .open, let partEnt = mine.partEnt,
                  let theirs = try await TallyRecord.pair(uuid: mine.uuid, ents: [partEnt], in: db).first else {
                throw WysemanError.constraint("an invoice is asked for on an open tally", code: "!mychips.tallies:NOP", sqlState: "P0001")
            }
            var note = try await self.notice(for: theirs, reason: "invoice", in: db)
            if case .object(var data) = note.data {
                data["action"] = .bool(true)
                data["memo"] = memo.map(JSONValue.string) ?? .null
                data["units"] = units.map(JSONValue.int) ?? .null
                note.data = .object(data)
            }
            try await notifier.publish(note, in: db)
            try await pushes?.enqueue(note, in: db)
            return note
        }
        notifier.deliverAfterCommit(notice)
    }
}

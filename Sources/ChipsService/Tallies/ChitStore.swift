import ChipsProtocol
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// Chits, driven by `insert` and `update` on `mychips.chits_v_me`:
///
/// - Pay: insert by the issuer, `request: 'good'`, signed. Good at once on both copies. The payee
///   may insert it too — a chit the payer signed and passed as a QR code or link.
/// - Request (invoice): insert for the partner to pay (`issuer` their end), `request: 'pend'`,
///   unsigned: `A.pend` for the requester, `L.pend` (an action) for the partner.
/// - Accept: the partner updates it with `request: 'good'` and a signature; refuse: `request: 'void'`
///   (the requester may withdraw it the same way).
/// - Settings: a `set` chit, signed, whose `reference` holds trading variables (`target`,
///   `bound`, `reward`, `clutch`) or `{close: true}`.
///
/// A signature is checked with the signing key in the issuer's certificate on the tally, over the
/// stable JSON of the chit core. A good chit becomes the next link of the tally's hash chain on
/// both copies, and moves both balances, in one transaction: the two copies' balances are always
/// each other's negation. A payment that would leave the payer owing more than the credit the
/// partner grants (`terms.limit`) is refused, and a closing tally takes only chits that bring its
/// balance toward zero. The tally rows are locked first, so these checks hold under any number
/// of concurrent requests.
struct ChitStore: Sendable {
    let user: ChipsUserRecord
    let database: Database
    let notifier: ChipsNotifier
    let now: @Sendable () -> Date
    let pushes: ChipsPushes?
    let verifier: ChipsSignatureVerifier

    init(context: ViewContext) {
        verifier = context.configuration.signatureVerifier
        user = context.user
        database = context.database
        notifier = context.notifier
        now = context.now
        pushes = context.pushes
    }

    /// What an insert may name. `chit_ent` is the user's own (the app names it); `status` is the
    /// provider's to decide and is not read (the app sends `open` with a request).
    static let insertFields: Set<String> = ["chit_ent", "chit_seq", "tally_uuid", "chit_uuid", "chit_type", "chit_date", "issuer", "units", "reference",
                                            "memo", "request", "signature", "chain_idx", "chain_prev", "status"]

    static func refuse(_ code: String, _ message: String) -> WysemanError {
        WysemanError.constraint(message, code: "!mychips.chits:" + code, sqlState: "P0001")
    }

    /// What PostgreSQL answers when bigint arithmetic leaves its range, as the real provider's
    /// tally sums do.
    static let outOfRange = WysemanError.database("bigint out of range", sqlState: "22003")

    /// `operation`'s result, or `outOfRange` when it overflowed.
    static func checked(_ operation: () throws(CheckedAmount.Overflow) -> Int64) throws(WysemanError) -> Int64 {
        do { return try operation() } catch { throw outOfRange }
    }

    /// Takes a pending request's amount out of both copies' pending balances.
    static func withdraw(_ pending: Int64, mine: inout TallyRecord, partner: inout TallyRecord) throws(WysemanError) {
        mine.netPC = try checked { () throws(CheckedAmount.Overflow) in try CheckedAmount.subtract(mine.netPC, pending) }
        partner.netPC = try checked { () throws(CheckedAmount.Overflow) in try CheckedAmount.add(partner.netPC, pending) }
    }

    // MARK: Insert

    func insert(_ fields: [String: JSONValue]) async throws -> (ChitRecord, TallyRecord) {
        for key in fields.keys where !Self.insertFields.contains(key) {
            throw WysemanError.database("column \"\(key)\" of view mychips.chits_v_me can only be set by the provider", sqlState: "42501")
        }
        if let ent = fields["chit_ent"], ent != .string(user.userEnt) {
            throw WysemanError.database("new row violates row-level security policy for table \"chits\"", sqlState: "42501")
        }
        if let status = fields["status"], !status.isNull, !["draft", "pend", "open", "good"].contains(status.stringValue ?? "") {
            throw WysemanError.database("invalid input value for enum chit_status", sqlState: "22P02")
        }
        // A request may leave its id to the provider, as the app does; a signed chit carries the
        // id it was signed with.
        let uuid: ChitID
        switch fields["chit_uuid"] {
        case .string(let text)?:
            guard let parsed = UUID(uuidString: text) else { throw WysemanError.database("invalid input syntax for type uuid: \"\(text)\"", sqlState: "22P02") }
            uuid = ChitID(parsed.uuidString.lowercased())
        case nil, .null?:
            guard fields["request"]?.stringValue == "pend" else {
                throw WysemanError.database("null value in column \"chit_uuid\" violates not-null constraint", sqlState: "23502")
            }
            uuid = ChitID(UUID().uuidString.lowercased())
        default:
            throw WysemanError.database("invalid input syntax for type uuid", sqlState: "22P02")
        }
        let type: ChitType
        switch fields["chit_type"] {
        case nil, .null?: type = .tran
        case .string(let text)?:
            guard let parsed = ChitType(rawValue: text) else { throw Self.refuse("BCT", "a chit is a tran, set or lift") }
            type = parsed
        default: throw Self.refuse("BCT", "a chit is a tran, set or lift")
        }
        guard type != .lift else { throw WysemanError.permissionDenied("mychips.chits_v_me (lift chits come only from lifts)") }
        let request = fields["request"]?.stringValue
        guard request == "good" || request == "pend" else {
            throw WysemanError.constraint("a new chit is sent signed (request good) or asked for (request pend)", code: "mychips.chits.BRQ")
        }
        var units: Int64?
        if type == .tran {
            guard let value = fields["units"]?.int64Value, value > 0 else { throw Self.refuse("CUN", "a payment's units are whole milliCHIPs above zero") }
            units = value
        } else if let given = fields["units"], !given.isNull {
            throw Self.refuse("CUN", "a settings chit carries no units")
        }
        let date: Int64
        switch fields["chit_date"] {
        case nil, .null?:
            guard request == "pend" else { throw Self.refuse("DAT", "a signed chit carries the date it was signed with (chit_date)") }
            date = now().epochMillis
        case .string(let text)?:
            guard let millis = JavaScriptDate.epochMillis(text), JavaScriptDate.string(epochMillis: millis) == text else {
                throw Self.refuse("DAT", "chit_date is written as toISOString() does: YYYY-MM-DDTHH:MM:SS.sssZ")
            }
            date = millis
        default: throw Self.refuse("DAT", "chit_date is written as toISOString() does: YYYY-MM-DDTHH:MM:SS.sssZ")
        }
        var reference = fields["reference"]
        if reference?.isNull == true { reference = nil }
        if type == .set { try Self.checkSettings(reference) }
        let memo: String?
        switch fields["memo"] {
        case nil, .null?: memo = nil
        case .string(let text)? where text.count <= 400: memo = text
        default: throw WysemanError.database("value too long for type character varying(400)", sqlState: "22001")
        }
        let signature = fields["signature"]?.stringValue
        // A payment's signature is checked before the transaction, against the tally as a read
        // sees it, so the tally rows are not held while it is verified; inside, the check is
        // reused only if the tally still gives the same signed core and the same issuer key.
        var check: SignatureCheck?
        if request == "good", let signature, let seq = fields["chit_seq"]?.int64Value,
           let tally = try await database.read({ [user] db in try await Self.signers(ent: user.userEnt, seq: seq, in: db) }),
           let issuer = Self.issuer(fields["issuer"], request: request, holder: tally.type) {
            let core = ChitCore(tally: tally.uuid, by: issuer, type: type, uuid: uuid, date: date, units: units, reference: reference, memo: memo)
            let certificate = issuer == tally.type ? tally.holdCert : tally.partCert
            let key = certificate.map { (try? StrictJSON.parse($0.utf8)) ?? .null }?["public"]
            check = SignatureCheck(core: core, publicKey: key, signature: signature,
                                   valid: core.isSigned(by: key, signature: signature, verifier: verifier))
        }
        let signatureCheck = check
        let proposedIndex = fields["chain_idx"]?.int64Value
        let proposedPrior = fields["chain_prev"]?.stringValue
        let millis = now().epochMillis
        let user = user
        let notifier = notifier
        let pushes = pushes
        let verifier = verifier
        let (chitUnits, chitReference) = (units, reference)

        let (chit, tally, notices) = try await database.transaction { db -> (ChitRecord, TallyRecord, [ChipsNotifier.Notice]) in
            var (mine, partner) = try await Self.lockPair(user: user, seq: fields["chit_seq"]?.int64Value, uuid: fields["tally_uuid"]?.stringValue.map(TallyID.init(rawValue:)), in: db)
            guard let issuer = Self.issuer(fields["issuer"], request: request, holder: mine.type) else {
                throw WysemanError.database("invalid input value for enum tally_side", sqlState: "22P02")
            }
            if let existing = try await ChitRecord.load(ent: mine.ent, seq: mine.seq, uuid: uuid, in: db) {
                // The same chit sent again (a retry after a dropped connection) is answered with
                // what was stored; a different chit under a used id is refused.
                let again = ChitCore(tally: mine.uuid, by: issuer, type: type, uuid: uuid, date: date, units: chitUnits, reference: chitReference, memo: memo)
                guard existing.core(tally: mine.uuid) == again, existing.signature == signature || request == "pend" else {
                    throw WysemanError.constraint("duplicate key value violates unique constraint", code: "!mychips.chits:CUU", sqlState: "23505")
                }
                return (existing, mine, [])
            }
            let core = ChitCore(tally: mine.uuid, by: issuer, type: type, uuid: uuid, date: date, units: chitUnits, reference: chitReference, memo: memo)
            var chit = ChitRecord(ent: mine.ent, seq: mine.seq, idx: mine.lastChit + 1, uuid: uuid, type: type, date: date, issuer: issuer,
                                  units: chitUnits, reference: chitReference, memo: memo, digest: core.digest, signature: nil, request: nil,
                                  status: .pend, chainIdx: nil, chainPrev: nil, chainHash: nil, createdAt: millis, modifiedAt: millis)
            var theirs = chit
            theirs.ent = partner.ent
            theirs.seq = partner.seq
            theirs.idx = partner.lastChit + 1
            mine.lastChit += 1
            partner.lastChit += 1
            if request == "pend" {
                guard issuer != mine.type, type == .tran else { throw Self.refuse("ISS", "a request is for the partner to pay: its issuer is the partner's end") }
                guard signature == nil else { throw Self.refuse("ISS", "a request is signed by the partner who pays it, not by you") }
                try Self.checkOpen(mine)
                mine.netPC = try Self.checked { () throws(CheckedAmount.Overflow) in try CheckedAmount.add(mine.netPC, chit.net(holder: mine.type)) }
                partner.netPC = try Self.checked { () throws(CheckedAmount.Overflow) in try CheckedAmount.add(partner.netPC, chit.net(holder: partner.type)) }
            } else {
                // A good chit is the issuer's pledge: the holder sends their own, or hands over one
                // the partner signed (a chit passed as a QR code or link); the signature decides.
                chit.signature = signature
                theirs.signature = signature
                try Self.makeGood(&chit, &theirs, core: core, mine: &mine, partner: &partner, proposedIndex: proposedIndex, proposedPrior: proposedPrior,
                                  verifier: verifier, checkedBefore: signatureCheck)
            }
            mine.modifiedAt = millis
            let notices = try await Self.write(chit, theirs, mine, partner, inserting: true, millis: millis, notifier: notifier, pushes: pushes, in: db)
            return (chit, mine, notices)
        }
        for notice in notices { notifier.deliverAfterCommit(notice) }
        return (chit, tally)
    }

    /// The issuer a new chit names (`stock` or `foil`), or by default the holder's end (the
    /// partner's for a request); nil for anything else.
    static func issuer(_ value: JSONValue?, request: String?, holder: TallySide) -> TallySide? {
        switch value {
        case nil, .null?: request == "pend" ? holder.other : holder
        case .string(let text)?: TallySide(rawValue: text)
        default: nil
        }
    }

    /// What a chit's signature check needs of the user's copy of a tally: its id, the holder's
    /// end and both certificates (JSON text, as stored).
    static func signers(ent: String, seq: Int64, in db: any DatabaseSession) async throws
        -> (uuid: TallyID, type: TallySide, holdCert: String?, partCert: String?)? {
        guard let row = try await db.raw("""
            SELECT tally_uuid, tally_type, hold_cert, part_cert FROM chips_tallies WHERE tally_ent = \(bind: ent) AND tally_seq = \(bind: seq)
            """).first() else { return nil }
        return (try row.decode(column: "tally_uuid", as: TallyID.self, of: "chips_tallies"),
                try row.decode(column: "tally_type", as: TallySide.self, of: "chips_tallies"),
                try row.decode(column: "hold_cert", as: String?.self), try row.decode(column: "part_cert", as: String?.self))
    }

    /// A signature verified outside the transaction: over which core, with which key.
    struct SignatureCheck: Sendable {
        var core: ChitCore
        var publicKey: JSONValue?
        var signature: String
        var valid: Bool
    }

    // MARK: Update (accept, refuse, withdraw)

    func update(seq: Int64?, uuid: ChitID, fields: [String: JSONValue]) async throws -> (ChitRecord, TallyRecord) {
        for key in fields.keys where !["request", "signature", "chain_idx", "chain_prev"].contains(key) {
            throw WysemanError.database("column \"\(key)\" of view mychips.chits_v_me can only be changed by the provider", sqlState: "42501")
        }
        let request = fields["request"]?.stringValue
        let millis = now().epochMillis
        let user = user
        let notifier = notifier
        let pushes = pushes
        let verifier = verifier
        let (chit, tally, notices) = try await database.transaction { db -> (ChitRecord, TallyRecord, [ChipsNotifier.Notice]) in
            let found = try await db.raw("""
                SELECT chit_seq FROM chips_chits WHERE chit_ent = \(bind: user.userEnt) AND chit_uuid = \(bind: uuid)
                """).all().map { try $0.decode(column: "chit_seq", as: Int64.self) }.filter { seq == nil || $0 == seq }
            guard found.count == 1 else { throw WysemanError.unexpectedRows(found.count, expected: 1) }
            var (mine, partner) = try await Self.lockPair(user: user, seq: found[0], uuid: nil, in: db)
            guard var chit = try await ChitRecord.load(ent: mine.ent, seq: mine.seq, uuid: uuid, in: db),
                  var theirs = try await ChitRecord.load(ent: partner.ent, seq: partner.seq, uuid: uuid, in: db) else {
                throw WysemanError.unexpectedRows(0, expected: 1)
            }
            guard chit.status == .pend, chit.chainIdx == nil else {
                throw Self.refuse("IST", "illegal state transition from \(chit.state(holder: mine.type)): only a pending request can be answered")
            }
            let pending = chit.net(holder: mine.type)
            switch request {
            case "good":
                guard chit.issuer == mine.type else { throw Self.refuse("ISS", "only the party asked to pay signs a request") }
                guard case .string(let signature)? = fields["signature"] else { throw Self.refuse("MIS", "a chit made good needs its issuer's signature") }
                chit.signature = signature
                theirs.signature = signature
                try Self.withdraw(pending, mine: &mine, partner: &partner)
                try Self.makeGood(&chit, &theirs, core: chit.core(tally: mine.uuid), mine: &mine, partner: &partner,
                                  proposedIndex: fields["chain_idx"]?.int64Value, proposedPrior: fields["chain_prev"]?.stringValue,
                                  verifier: verifier)
            case "void":
                chit.status = .void
                theirs.status = .void
                try Self.withdraw(pending, mine: &mine, partner: &partner)
            default:
                throw WysemanError.constraint("a request is answered with request good (and a signature) or void", code: "mychips.chits.BRQ")
            }
            chit.modifiedAt = millis
            theirs.modifiedAt = millis
            mine.modifiedAt = millis
            let notices = try await Self.write(chit, theirs, mine, partner, inserting: false, millis: millis, notifier: notifier, pushes: pushes, in: db)
            return (chit, mine, notices)
        }
        for notice in notices { notifier.deliverAfterCommit(notice) }
        return (chit, tally)
    }

    /// Writes both copies of a chit and of its tally, and both partners' notices (the partner's
    /// also as pushes), in the caller's transaction.
    static func write(_ chit: ChitRecord, _ theirs: ChitRecord, _ mine: TallyRecord, _ partner: TallyRecord, inserting: Bool, millis: Int64,
                      notifier: ChipsNotifier, pushes: ChipsPushes?, in db: any DatabaseSession) async throws -> [ChipsNotifier.Notice] {
        var (mine, partner) = (mine, partner)
        // The balance with pending requests (`net_p`) fits as well, on both copies.
        for tally in [mine, partner] { _ = try checked { () throws(CheckedAmount.Overflow) in try CheckedAmount.add(tally.netC, tally.netPC) } }
        mine.modifiedAt = millis
        partner.modifiedAt = millis
        if inserting {
            try await chit.insert(in: db)
            try await theirs.insert(in: db)
        } else {
            try await chit.save(in: db)
            try await theirs.save(in: db)
        }
        try await mine.save(in: db)
        try await partner.save(in: db)
        let own = try await notice(chit, tally: mine, push: false, in: db)
        let notice = try await notice(theirs, tally: partner, in: db)
        try await notifier.publish(own, in: db)
        try await notifier.publish(notice, in: db)
        try await pushes?.enqueue(notice, in: db)
        return [own, notice]
    }

    // MARK: Checks and the chain

    /// The user's copy of the tally (by `seq`, or by `uuid`) and the partner's, both locked.
    static func lockPair(user: ChipsUserRecord, seq: Int64?, uuid: TallyID?, in db: any DatabaseSession) async throws -> (TallyRecord, TallyRecord) {
        var tallyUUID = uuid
        var partEnt: String?
        if let seq {
            guard let row = try await db.raw("SELECT tally_uuid, part_ent FROM chips_tallies WHERE tally_ent = \(bind: user.userEnt) AND tally_seq = \(bind: seq)").first() else {
                throw refuse("LIT", "no tally \(seq) of yours")
            }
            tallyUUID = try row.decode(column: "tally_uuid", as: TallyID.self, of: "chips_tallies")
            partEnt = try row.decode(column: "part_ent", as: String?.self)
        } else if let uuid {
            let rows = try await db.raw("SELECT part_ent FROM chips_tallies WHERE tally_ent = \(bind: user.userEnt) AND tally_uuid = \(bind: uuid) AND status IN ('open', 'close')").all()
            guard rows.count == 1 else { throw refuse("LIT", "no open tally \(uuid) of yours") }
            partEnt = try rows[0].decode(column: "part_ent", as: String?.self)
        }
        guard let tallyUUID, let partEnt else { throw refuse("LIT", "a chit names its tally (chit_seq or tally_uuid) and the tally needs a partner") }
        let pair = try await TallyRecord.pair(uuid: tallyUUID, ents: [user.userEnt, partEnt], in: db)
        guard let mine = pair.first(where: { $0.ent == user.userEnt && (seq == nil || $0.seq == seq) }),
              let partner = pair.first(where: { $0.ent == partEnt }) else { throw refuse("LIT", "the tally has no partner copy") }
        return (mine, partner)
    }

    static func checkOpen(_ tally: TallyRecord) throws {
        guard tally.status == .open, tally.digest != nil else {
            throw refuse("LIT", "chits go only on an open tally; this one is \(tally.state)")
        }
    }

    /// Trading variables and close: `{target, bound, reward, clutch, close}`.
    static func checkSettings(_ reference: JSONValue?) throws {
        guard case .object(let members)? = reference, !members.isEmpty else {
            throw refuse("SET", "a settings chit's reference holds target, bound, reward, clutch or close")
        }
        for (key, value) in members {
            switch key {
            case "target", "bound": guard let number = value.int64Value, number >= 0 else { throw refuse("SET", "\(key) is whole milliCHIPs, not negative") }
            case "reward", "clutch": guard TallyStore.marginPPM(value) != nil else { throw refuse("SET", "\(key) is a margin between -1 and 1") }
            case "close": guard value == .bool(true) else { throw refuse("SET", "close is true") }
            default: throw refuse("SET", "\(key) is not a tally setting")
            }
        }
    }

    /// Verifies the issuer's signature, applies the limit and closing rules, links the chit into
    /// both copies' chains and moves both balances.
    static func makeGood(_ chit: inout ChitRecord, _ theirs: inout ChitRecord, core: ChitCore, mine: inout TallyRecord, partner: inout TallyRecord,
                         proposedIndex: Int64?, proposedPrior: String?, verifier: ChipsSignatureVerifier, checkedBefore: SignatureCheck? = nil) throws {
        try checkOpen(mine)
        guard let signature = chit.signature else { throw refuse("MIS", "a good chit needs its issuer's signature") }
        let key = (chit.issuer == mine.type ? mine.holdCert : (mine.partCert ?? .null))["public"]
        let valid = if let checkedBefore, checkedBefore.core == core, checkedBefore.publicKey == key, checkedBefore.signature == signature {
            checkedBefore.valid
        } else {
            core.isSigned(by: key, signature: signature, verifier: verifier)
        }
        guard valid else {
            throw refuse("SIG", "the chit's signature does not verify with the issuer's signing key on this tally")
        }
        // Units and balances are checked sums: a chit of Int64.max units, or one that takes a
        // balance past either end, is refused as PostgreSQL refuses bigint overflow, never wrapped.
        let net = chit.net(holder: mine.type)
        let after = try checked { () throws(CheckedAmount.Overflow) in try CheckedAmount.add(mine.netC, net) }
        let theirsAfter = try checked { () throws(CheckedAmount.Overflow) in try CheckedAmount.negate(after) }
        if chit.type == .tran {
            // The payer is the issuer: the limit is the credit the other end grants it.
            let (payerAfter, limit) = chit.issuer == mine.type ? (after, mine.creditFromPartner) : (theirsAfter, partner.creditFromPartner)
            // Both `after` and its negation fit, so neither is Int64.min and `-payerAfter` cannot trap.
            if payerAfter < 0, -payerAfter > limit {
                throw refuse("LMT", "the payment would leave the payer owing \(DecimalAmount.format(-payerAfter, decimals: 3)) CHIPs, beyond the \(DecimalAmount.format(limit, decimals: 3)) the partner's credit allows")
            }
            if mine.closing, after.magnitude > mine.netC.magnitude || (after != 0 && (after < 0) != (mine.netC < 0)) {
                throw refuse("CLS", "the tally is closing: only chits that bring its balance toward zero are taken")
            }
        }
        guard let prior = mine.chainLast else { throw refuse("LIT", "the tally has no chain") }
        let index = mine.chainConf + 1
        if let proposedIndex, proposedIndex != index { throw refuse("CHN", "the chit claims chain index \(proposedIndex); the chain's next index is \(index)") }
        if let proposedPrior, proposedPrior != prior { throw refuse("CHN", "the chit claims to follow \(proposedPrior); the chain ends at \(prior)") }
        let hash = core.chainHash(index: index, prior: prior, signature: signature)
        for copy in 0..<2 {
            var record = copy == 0 ? chit : theirs
            record.status = .good
            record.request = nil
            record.chainIdx = index
            record.chainPrev = prior
            record.chainHash = hash
            if copy == 0 { chit = record } else { theirs = record }
        }
        for copy in 0..<2 {
            var tally = copy == 0 ? mine : partner
            tally.netC = copy == 0 ? after : theirsAfter
            if chit.type == .tran { tally.chitsC += 1 }
            tally.chainConf = index
            tally.chainLast = hash
            if chit.type == .set, case .object(let settings)? = chit.reference {
                let byHolder = chit.issuer == tally.type
                var sets = (byHolder ? tally.holdSets : tally.partSets).objectValue ?? [:]
                for (key, value) in settings { sets[key] = value }
                if byHolder {
                    tally.holdSets = .object(sets)
                    if let target = settings["target"]?.int64Value { tally.target = target }
                    if let bound = settings["bound"]?.int64Value { tally.bound = bound }
                    if let reward = settings["reward"].flatMap(TallyStore.marginPPM) { tally.reward = reward }
                    if let clutch = settings["clutch"].flatMap(TallyStore.marginPPM) { tally.clutch = clutch }
                    tally.bound = max(tally.bound, tally.target)
                } else {
                    tally.partSets = .object(sets)
                }
                if settings["close"] == .bool(true) { tally.closing = true }
            }
            if tally.closing, tally.netC == 0 {
                tally.status = .close
                tally.closing = false
            }
            if copy == 0 { mine = tally } else { partner = tally }
        }
    }

    /// `{target: 'chit', entity, sequence, index, state, net, pend, object}` on the holder's
    /// channel, as `mychips.chit_notify_user` sends it: `net` and `pend` are the tally's balance
    /// without and with pending chits after the change, `object` the signed record (with its
    /// digest once linked). `uuid`, `action` and `tally_state` are this provider's, for pushes.
    static func notice(_ chit: ChitRecord, tally: TallyRecord, push: Bool = true, in db: any DatabaseSession) async throws -> ChipsNotifier.Notice {
        let username = try await TallyStore.username(ofEntity: chit.ent, in: db)
        let state = chit.state(holder: tally.type)
        return ChipsNotifier.Notice(username: username, channel: ChipsNotifier.channel(ofEntity: chit.ent), data: .object([
            "net": .int(tally.netC), "pend": .int(tally.netWithPending), "index": .int(chit.idx), "state": .string(state.rawValue),
            "entity": .string(chit.ent), "object": chit.signedJSON(tally: tally.uuid), "target": "chit", "sequence": .int(chit.seq),
            "uuid": .string(chit.uuid.rawValue), "action": .bool(state == .requestToPay), "tally_state": .string(tally.state.rawValue),
        ]), push: push)
    }
}

import ChipsProtocol
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// The tally lifecycle, with MyCHIPs' state names, driven by `insert` and `update` on
/// `mychips.tallies_v_me`, the `invite` action and `mychips.ticket_process`:
///
/// - `draft`: the holder's proposal. The `invite` action makes a tally ticket for it (one use,
///   expiring); the partner's client presents it with `ticket_process`, which joins the partner's
///   certificate to the draft (`P.draft`: the holder now signs it).
/// - `update {request: 'offer', hold_sig}` (`draft.offer`): the holder's signature over the tally
///   core is checked and the tally goes to the partner — the holder's copy `H.offer`, the
///   partner's `P.offer`. A partner counters by changing the terms and offering in turn.
/// - `update {request: 'open', hold_sig}` on `P.offer` (`offer.open`): both signatures are
///   checked over the same core; both copies open, with the core's digest as the first link of
///   the chit chain.
/// - `request: 'void'` (`offer.void`) rejects or withdraws; both copies go to `void`.
///   `request: 'draft'` (`offer.draft`) takes an offer back to edit it, withdrawing it from the
///   partner. Changing a signed tally's terms does the same.
/// - Closing is a `set` chit with `{close: true}` (``ChitStore``): `C.open` until the balance is
///   zero, then `close`.
///
/// Both partners are users of this provider: the provider makes each change to the partner's
/// copy in the same transaction, where MyCHIPs' agents carry it between two providers.
struct TallyStore: Sendable {
    let user: ChipsUserRecord
    let database: Database
    let configuration: ChipsConfiguration
    let notifier: ChipsNotifier
    let now: @Sendable () -> Date
    let pushes: ChipsPushes?

    init(context: ViewContext) {
        user = context.user
        database = context.database
        configuration = context.configuration
        notifier = context.notifier
        now = context.now
        pushes = context.pushes
    }

    static let contentFields: Set<String> = ["comment", "contract", "hold_terms", "part_terms", "tally_type"]
    static let holderFields: Set<String> = ["target", "bound", "reward", "clutch"]
    static let insertFields: Set<String> = contentFields.union(holderFields).union(["tally_uuid"])
    /// What an update may name; `tally_uuid` only as the tally's own (the app echoes it).
    static let updateFields: Set<String> = contentFields.union(holderFields).union(["hold_sig", "request", "tally_uuid"])

    // MARK: Drafts

    func create(_ fields: [String: JSONValue]) async throws -> TallyRecord {
        for key in fields.keys where !Self.insertFields.contains(key) {
            throw WysemanError.database("column \"\(key)\" of view mychips.tallies_v_me can only be set by the provider", sqlState: "42501")
        }
        let millis = now().epochMillis
        let configuration = configuration
        let username = user.username
        return try await database.transaction { db in
            guard let user = try await ChipsUserRecord.load(username, in: db) else { throw WysemanError.unexpectedRows(0, expected: 1) }
            var uuid = TallyID(UUID().uuidString.lowercased())
            if let given = fields["tally_uuid"] {
                guard case .string(let text) = given, let parsed = UUID(uuidString: text) else {
                    throw WysemanError.database("invalid input syntax for type uuid", sqlState: "22P02")
                }
                uuid = TallyID(parsed.uuidString.lowercased())
            }
            guard let seq = try await db.raw("UPDATE chips_users SET last_tally = last_tally + 1 WHERE username = \(bind: username) RETURNING last_tally")
                .first()?.decode(column: "last_tally", as: Int64.self) else { throw WysemanError.unexpectedRows(0, expected: 1) }
            var tally = TallyRecord(
                ent: user.userEnt, seq: seq, uuid: uuid, type: .stock, date: millis, version: 1, revision: 1, comment: nil,
                contract: try await ContractCatalog.defaultContract(in: db), holdCert: user.certificate(configuration: configuration),
                partCert: nil, holdSig: nil, partSig: nil, holdTerms: .object([:]), partTerms: .object([:]), digest: nil,
                target: 0, bound: 0, reward: 0, clutch: 0, request: nil, status: .draft, closing: false, partEnt: nil,
                holdCid: user.cuid, holdAgent: configuration.agent, partCid: nil, partAgent: nil, holdSets: .object([:]), partSets: .object([:]),
                netC: 0, netPC: 0, chitsC: 0, chainConf: 0, chainLast: nil, lastChit: 0, rowVersion: 0, createdAt: millis, modifiedAt: millis)
            try await Self.apply(fields.filter { $0.key != "tally_uuid" }, to: &tally, in: db)
            try await tally.insert(in: db)
            return tally
        }
    }

    /// Checks and sets the content and trading fields of a tally that is not yet open.
    static func apply(_ fields: [String: JSONValue], to tally: inout TallyRecord, in db: any DatabaseSession) async throws {
        for (column, value) in fields {
            switch column {
            case "comment":
                switch value {
                case .null: tally.comment = nil
                case .string(let text) where text.count <= 400: tally.comment = text.isEmpty ? nil : text
                default: throw WysemanError.database("value too long for type character varying(400)", sqlState: "22001")
                }
            case "contract":
                guard try await ContractCatalog.exists(value, in: db) else {
                    throw WysemanError.constraint("the tally contract is not one this provider publishes", code: "!mychips.tallies:TCM")
                }
                tally.contract = value
            case "hold_terms", "part_terms":
                let terms = try checkedTerms(value)
                if column == "hold_terms" { tally.holdTerms = terms } else { tally.partTerms = terms }
            case "tally_type":
                guard case .string(let text) = value, let side = TallySide(rawValue: text) else {
                    throw WysemanError.database("invalid input value for enum tally_side", sqlState: "22P02")
                }
                guard tally.partCert == nil || side == tally.type else {
                    throw WysemanError.constraint("a tally's ends are fixed once a partner has joined it", code: "!mychips.tallies:IST")
                }
                tally.type = side
            case "target", "bound":
                guard let number = value.int64Value, number >= 0 else {
                    throw WysemanError.constraint("trading limits are whole milliCHIPs, not negative", code: column == "target" ? "!mychips.tallies:TGT" : "!mychips.tallies:BND")
                }
                if column == "target" { tally.target = number } else { tally.bound = number }
            case "reward", "clutch":
                guard let ppm = marginPPM(value) else {
                    throw WysemanError.constraint("a margin is between -1 and 1", code: column == "reward" ? "!mychips.tallies:RWD" : "!mychips.tallies:CLT")
                }
                if column == "reward" { tally.reward = ppm } else { tally.clutch = ppm }
            default:
                throw WysemanError.undefinedColumn(column)
            }
        }
        // MyCHIPs raises the bound to the target rather than refusing.
        tally.bound = max(tally.bound, tally.target)
    }

    /// Credit terms: an object of at most 20 members; `limit` (CHIPs) and `call` (days) are
    /// numbers not below zero.
    static func checkedTerms(_ value: JSONValue) throws -> JSONValue {
        guard case .object(let members) = value, members.count <= 20 else {
            throw WysemanError.constraint("credit terms are an object such as {\"limit\": 100, \"call\": 30}", code: "!mychips.tallies:TRM")
        }
        for key in ["limit", "call"] {
            guard let member = members[key], !member.isNull else { continue }
            let valid: Bool
            switch member {
            case .int(let number): valid = number >= 0
            case .uint: valid = true
            case .double(let number): valid = number.isFinite && number >= 0
            default: valid = false
            }
            guard valid else { throw WysemanError.constraint("credit term \"\(key)\" is a number not below zero", code: "!mychips.tallies:TRM") }
        }
        return value
    }

    static func marginPPM(_ value: JSONValue) -> Int64? {
        let number: Double
        switch value {
        case .int(let whole): number = Double(whole)
        case .uint(let whole): number = Double(whole)
        case .double(let fraction): number = fraction
        case .string(let text): guard let parsed = Double(text) else { return nil }; number = parsed
        default: return nil
        }
        guard number.isFinite, number >= -1, number <= 1 else { return nil }
        return Int64((number * 1_000_000).rounded())
    }

    // MARK: Updates and state changes

    func update(seq: Int64, fields: [String: JSONValue]) async throws -> TallyRecord {
        for key in fields.keys where !Self.updateFields.contains(key) {
            throw WysemanError.database("column \"\(key)\" of view mychips.tallies_v_me can only be changed by the provider", sqlState: "42501")
        }
        let millis = now().epochMillis
        let user = user
        let notifier = notifier
        let pushes = pushes
        let (tally, notices) = try await database.transaction { db -> (TallyRecord, [ChipsNotifier.Notice]) in
            guard var tally = try await TallyRecord.load(ent: user.userEnt, seq: seq, in: db, locking: true) else {
                throw WysemanError.unexpectedRows(0, expected: 1)
            }
            if let given = fields["tally_uuid"], given != .string(tally.uuid.rawValue) {
                throw WysemanError.database("column \"tally_uuid\" of view mychips.tallies_v_me can only be changed by the provider", sqlState: "42501")
            }
            var notices: [ChipsNotifier.Notice] = []
            let content = fields.filter { Self.contentFields.contains($0.key) || Self.holderFields.contains($0.key) }
            if !content.isEmpty {
                guard [.draft, .offer].contains(tally.status) else {
                    throw Self.illegal(tally, content.keys.contains(where: Self.holderFields.contains) ? "set trading variables with a settings chit once a tally is open" : "an open tally's terms do not change")
                }
                let before = tally.core
                try await Self.apply(content, to: &tally, in: db)
                if tally.core != before {
                    // A changed tally needs both signatures again; an offer out with the partner is
                    // withdrawn, and the tally counts a revision.
                    if tally.status == .offer {
                        notices += try await withdraw(&tally, millis: millis, in: db)
                        tally.revision += 1
                    }
                    tally.holdSig = nil
                    tally.partSig = nil
                    tally.status = .draft
                }
            }
            if case .string(let signature)? = fields["hold_sig"] { tally.holdSig = signature } else if fields["hold_sig"] == .null { tally.holdSig = nil }
            var reason: String?
            switch fields["request"] {
            case nil, .null?: break
            case .string("offer")?: notices += try await offer(&tally, millis: millis, in: db); reason = "offer"
            case .string("open")?: notices += try await open(&tally, millis: millis, in: db); reason = "open"
            case .string("void")?: notices += try await void(&tally, millis: millis, in: db); reason = "void"
            case .string("draft")?:
                guard tally.status == .offer else { throw Self.illegal(tally, "only an offer goes back to draft") }
                notices += try await withdraw(&tally, millis: millis, in: db)
                tally.status = .draft
                tally.revision += 1
                tally.holdSig = nil
                tally.partSig = nil
                reason = "draft"
            default:
                throw WysemanError.constraint("new row for relation \"tallies\" violates check constraint", code: "!mychips.tallies:IVR")
            }
            tally.modifiedAt = millis
            try await tally.save(in: db)
            // The holder hears of their own change too, as on a real provider (no push: they made it).
            if let reason { notices.insert(try await notice(for: tally, reason: reason, push: false, in: db), at: 0) }
            for notice in notices {
                try await notifier.publish(notice, in: db)
                if notice.push { try await pushes?.enqueue(notice, in: db) }
            }
            return (tally, notices)
        }
        for notice in notices { notifier.deliverAfterCommit(notice) }
        return tally
    }

    static func illegal(_ tally: TallyRecord, _ why: String) -> WysemanError {
        WysemanError.constraint("illegal state transition from \(tally.state): \(why)", code: "!mychips.tallies:IST", sqlState: "P0001")
    }

    private func offer(_ tally: inout TallyRecord, millis: Int64, in db: any DatabaseSession) async throws -> [ChipsNotifier.Notice] {
        guard [.draft, .offer].contains(tally.status), tally.holdSig != nil || tally.status == .draft else {
            throw Self.illegal(tally, "only a draft or an offer can be offered")
        }
        guard let partEnt = tally.partEnt, tally.partCert != nil else {
            throw Self.illegal(tally, "no partner has joined this tally; send the partner an invitation first")
        }
        guard tally.holdCert["public"].flatMap(ChipsSignature.publicKey) != nil else {
            throw WysemanError.constraint("your certificate has no signing key; set user_psig first", code: "!mychips.tallies:UCM")
        }
        guard tally.core.isSigned(by: tally.type, signature: tally.holdSig, verifier: configuration.signatureVerifier) else { throw Self.badSignature() }
        tally.status = .offer
        tally.partSig = nil
        tally.request = nil
        // The partner's copy mirrors this one, with the ends swapped and this signature as theirs.
        let copies = try await TallyRecord.pair(uuid: tally.uuid, ents: [partEnt], in: db)
        var partner: TallyRecord
        if var existing = copies.first {
            guard [.void, .draft, .offer].contains(existing.status) else { throw Self.illegal(existing, "the partner's tally is already open") }
            existing.mirror(tally, millis: millis)
            partner = existing
            try await partner.save(in: db)
        } else {
            guard let seq = try await db.raw("UPDATE chips_users SET last_tally = last_tally + 1 WHERE user_ent = \(bind: partEnt) RETURNING last_tally")
                .first()?.decode(column: "last_tally", as: Int64.self) else { throw WysemanError.unexpectedRows(0, expected: 1) }
            partner = TallyRecord.copy(of: tally, ent: partEnt, seq: seq, millis: millis)
            try await partner.insert(in: db)
        }
        return [try await notice(for: partner, reason: "offer", in: db)]
    }

    private func open(_ tally: inout TallyRecord, millis: Int64, in db: any DatabaseSession) async throws -> [ChipsNotifier.Notice] {
        guard tally.status == .offer, tally.partSig != nil, let partEnt = tally.partEnt else {
            throw Self.illegal(tally, "only the partner's offer can be accepted")
        }
        let core = tally.core
        guard core.isSigned(by: tally.type.other, signature: tally.partSig, verifier: configuration.signatureVerifier) else { throw Self.badSignature("the partner's signature does not verify") }
        guard core.isSigned(by: tally.type, signature: tally.holdSig, verifier: configuration.signatureVerifier) else { throw Self.badSignature() }
        guard var partner = try await TallyRecord.pair(uuid: tally.uuid, ents: [partEnt], in: db).first,
              partner.status == .offer, partner.holdSig == tally.partSig, partner.core == core else {
            throw Self.illegal(tally, "the partner no longer offers this tally")
        }
        let digest = core.digest
        for index in 0..<2 {
            var copy = index == 0 ? tally : partner
            copy.status = .open
            copy.request = nil
            copy.digest = digest
            copy.chainLast = digest
            copy.chainConf = 0
            copy.holdSets = copy.holdTerms
            copy.partSets = copy.partTerms
            copy.modifiedAt = millis
            if index == 0 { tally = copy } else { partner = copy; partner.partSig = tally.holdSig }
        }
        try await partner.save(in: db)
        return [try await notice(for: partner, reason: "open", in: db)]
    }

    private func void(_ tally: inout TallyRecord, millis: Int64, in db: any DatabaseSession) async throws -> [ChipsNotifier.Notice] {
        guard [.draft, .offer].contains(tally.status) else { throw Self.illegal(tally, "only a draft or an offer can be voided") }
        let notices = try await withdraw(&tally, millis: millis, in: db)
        tally.status = .void
        tally.request = nil
        return notices
    }

    /// Takes an offer back from the partner: their copy goes to `void`.
    private func withdraw(_ tally: inout TallyRecord, millis: Int64, in db: any DatabaseSession) async throws -> [ChipsNotifier.Notice] {
        guard let partEnt = tally.partEnt, var partner = try await TallyRecord.pair(uuid: tally.uuid, ents: [partEnt], in: db).first,
              [.draft, .offer].contains(partner.status) else { return [] }
        partner.status = .void
        partner.request = nil
        partner.modifiedAt = millis
        try await partner.save(in: db)
        return [try await notice(for: partner, reason: "void", in: db)]
    }

    static func badSignature(_ message: String = "the signature does not verify with the signing key in your certificate") -> WysemanError {
        WysemanError.constraint(message, code: "!mychips.tallies:SIG", sqlState: "P0001")
    }

    /// `{target: 'tally', entity, sequence, state, action, reason, object}` on the holder's
    /// channel, as `mychips.tally_notify_user` sends it: `object` is the signed record with its
    /// signatures, `reason` what happened (`valid`: a partner joined by ticket; `offer`, `open`,
    /// `void`, `draft`). `tally_type` is this provider's, for the push's wording.
    func notice(for tally: TallyRecord, reason: String, push: Bool = true, in db: any DatabaseSession) async throws -> ChipsNotifier.Notice {
        let username = try await Self.username(ofEntity: tally.ent, in: db)
        return ChipsNotifier.Notice(username: username, channel: ChipsNotifier.channel(ofEntity: tally.ent), data: .object([
            "state": .string(tally.state.rawValue), "action": .bool(tally.needsAction), "entity": .string(tally.ent), "object": tally.signedJSON,
            "reason": .string(reason), "target": "tally", "sequence": .int(tally.seq), "tally_type": .string(tally.type.rawValue),
        ]), push: push)
    }

    static func username(ofEntity ent: String, in db: any DatabaseSession) async throws -> String {
        guard let name = try await db.raw("SELECT username FROM chips_users WHERE user_ent = \(bind: ent)").first()?.decode(column: "username", as: String.self) else {
            throw WysemanError.unexpectedRows(0, expected: 1)
        }
        return name
    }

    // MARK: Invitations

    /// A tally ticket: `{token, expires, chad}` as MyCHIPs' `tokens_v_me` returns it.
    struct TallyTicket: Sendable {
        var token: String
        var expires: String
        var chad: JSONValue

        var json: JSONValue { .object(["token": .string(token), "expires": .string(expires), "chad": chad]) }
    }

    /// A tally ticket for the holder's draft: a one-time token, valid for the ticket lifetime.
    /// The token is stored only as its SHA-256.
    func invite(seq: Int64) async throws -> TallyTicket {
        let user = user
        let configuration = configuration
        let issued = now()
        let expires = issued.addingTimeInterval(configuration.ticketLifetime).epochMillis
        let token = RandomID.hex(bytes: 16)
        try await database.transaction { db in
            guard let tally = try await TallyRecord.load(ent: user.userEnt, seq: seq, in: db, locking: true) else {
                throw WysemanError.unexpectedRows(0, expected: 1)
            }
            guard tally.status == .draft, tally.partCert == nil else { throw Self.illegal(tally, "invitations are for drafts no partner has joined") }
            // The user's row is the lock that numbers their tickets (two invitations at once on PostgreSQL).
            _ = try await db.raw(SQLQueryString("SELECT user_ent FROM chips_users WHERE user_ent = \(bind: user.userEnt)\(unsafeRaw: SQLDialectDifferences(db).lockRowsClause)")).first()
            let next = try await db.raw("SELECT COALESCE(MAX(token_seq), 0) + 1 AS n FROM chips_tally_tokens WHERE token_ent = \(bind: user.userEnt)")
                .first()?.decode(column: "n", as: Int64.self) ?? 1
            try await db.raw("""
                INSERT INTO chips_tally_tokens (token, token_ent, token_seq, tally_seq, expires_at, created_at)
                VALUES (\(bind: SecretDigest.hex(token)), \(bind: user.userEnt), \(bind: next), \(bind: seq), \(bind: expires), \(bind: issued.epochMillis))
                """).run()
        }
        return TallyTicket(token: token, expires: JavaScriptDate.string(epochMillis: expires),
                           chad: TallyRecord.chad(cuid: user.cuid, agent: configuration.agent, configuration: configuration))
    }

    /// `mychips.ticket_process(ticket)`: the invited user's client presents the tally ticket
    /// (`{token, chad}`, or its link); the ticket is spent and the user's certificate joins the
    /// inviter's draft, which is now the inviter's to sign and offer. Tickets of other providers
    /// are refused: this provider reaches only its own users.
    @discardableResult
    func processTicket(_ ticket: JSONValue) async throws -> TallyRecord {
        var fields = ticket["ticket"] ?? ticket
        if case .string(let link) = ticket, let components = URLComponents(string: link) {
            var members: [String: JSONValue] = [:]
            for item in components.queryItems ?? [] { members[item.name] = item.value.map(JSONValue.string) ?? .null }
            if case .string(let chad)? = members["chad"], let parsed = try? StrictJSON.parse(chad.utf8) { members["chad"] = parsed }
            fields = .object(members)
        }
        guard case .string(let token)? = fields["token"], !token.isEmpty else {
            throw WysemanError.constraint("a tally ticket needs its token", code: "!mychips.tokens:TNF", sqlState: "P0001")
        }
        if case .string(let agent)? = fields["chad"]?["agent"], agent != configuration.agent {
            throw WysemanError.constraint("the inviting user is at another provider; this provider reaches only its own users", code: "!mychips.tokens:REM", sqlState: "P0001")
        }
        let user = user
        let configuration = configuration
        let notifier = notifier
        let pushes = pushes
        let millis = now().epochMillis
        let (tally, notice) = try await database.transaction { db -> (TallyRecord, ChipsNotifier.Notice) in
            let claimed = try await db.raw("""
                UPDATE chips_tally_tokens SET used_at = \(bind: millis), used_by = \(bind: user.userEnt)
                WHERE token = \(bind: SecretDigest.hex(token)) AND used_at IS NULL AND expires_at > \(bind: millis)
                RETURNING token_ent, tally_seq
                """).first()
            guard let claimed else {
                throw WysemanError.constraint("the tally ticket is unknown, used or expired", code: "!mychips.tokens:TNF", sqlState: "P0001")
            }
            let ent = try claimed.decode(column: "token_ent", as: String.self)
            guard ent != user.userEnt else {
                throw WysemanError.constraint("a tally needs two partners; this is your own invitation", code: "!mychips.tallies:NSP")
            }
            guard var tally = try await TallyRecord.load(ent: ent, seq: try claimed.decode(column: "tally_seq", as: Int64.self), in: db, locking: true),
                  tally.status == .draft, tally.partCert == nil else {
                throw WysemanError.constraint("the invitation's tally is no longer open to a partner", code: "!mychips.tokens:TNF", sqlState: "P0001")
            }
            guard let joining = try await ChipsUserRecord.load(user.username, in: db) else { throw WysemanError.unexpectedRows(0, expected: 1) }
            tally.partCert = joining.certificate(configuration: configuration)
            tally.partEnt = joining.userEnt
            tally.partCid = joining.cuid
            tally.partAgent = configuration.agent
            tally.modifiedAt = millis
            try await tally.save(in: db)
            let note = try await self.notice(for: tally, reason: "valid", in: db)
            try await notifier.publish(note, in: db)
            try await pushes?.enqueue(note, in: db)
            return (tally, note)
        }
        notifier.deliverAfterCommit(notice)
        return tally
    }

    /// Drafts carry their holder's current certificate (a new signing key, a new address).
    static func refreshCertificates(of user: ChipsUserRecord, configuration: ChipsConfiguration, now: Int64, in db: any DatabaseSession) async throws {
        let cert = TallyRecord.text(user.certificate(configuration: configuration))
        try await db.raw("""
            UPDATE chips_tallies SET hold_cert = \(bind: cert), hold_sig = NULL, row_version = row_version + 1, modified_at = \(bind: now)
            WHERE tally_ent = \(bind: user.userEnt) AND status = 'draft'
            """).run()
        try await db.raw("""
            UPDATE chips_tallies SET part_cert = \(bind: cert), row_version = row_version + 1, modified_at = \(bind: now)
            WHERE part_ent = \(bind: user.userEnt) AND status = 'draft'
            """).run()
    }
}

extension TallyRecord {
    /// A new partner copy of `tally`: the other end, the same core, the offer signed by `tally`'s holder.
    static func copy(of tally: TallyRecord, ent: String, seq: Int64, millis: Int64) -> TallyRecord {
        var copy = tally
        copy.ent = ent
        copy.seq = seq
        copy.target = 0
        copy.bound = 0
        copy.reward = 0
        copy.clutch = 0
        copy.netC = 0
        copy.netPC = 0
        copy.chitsC = 0
        copy.lastChit = 0
        copy.rowVersion = 0
        copy.createdAt = millis
        copy.mirror(tally, millis: millis)
        return copy
    }

    /// Makes this copy show `other`'s offer: its content with the ends swapped, `other`'s
    /// signature as the partner's, none of the holder's.
    mutating func mirror(_ other: TallyRecord, millis: Int64) {
        type = other.type.other
        version = other.version
        revision = other.revision
        date = other.date
        comment = other.comment
        contract = other.contract
        holdCert = other.partCert ?? .null
        partCert = other.holdCert
        holdTerms = other.partTerms
        partTerms = other.holdTerms
        holdCid = other.partCid ?? holdCid
        holdAgent = other.partAgent ?? holdAgent
        partCid = other.holdCid
        partAgent = other.holdAgent
        partEnt = other.ent
        holdSig = nil
        partSig = other.holdSig
        status = .offer
        request = nil
        modifiedAt = millis
    }
}

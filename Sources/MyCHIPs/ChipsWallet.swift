import Foundation
import HTTPTypes
import PurseHTTP
import PurseFormats
import PurseKit

/// A tally as the holder sees it: a row of `mychips.tallies_v_me`.
public struct ChipsTally: Sendable, Equatable, Identifiable {
    public var seq: Int64
    public var uuid: TallyID
    public var type: TallySide
    public var status: TallyStatus
    /// MyCHIPs' state: `draft`, `P.draft`, `H.offer`, `P.offer`, `open`, `C.open`, `close`, `void` …
    public var state: TallyState
    /// The holder has something to do (sign a joined draft, answer an offer).
    public var needsAction: Bool
    public var comment: String?
    public var partnerName: String?
    public var partner: ChipsAddress?
    public var holdCert: JSONValue
    public var partCert: JSONValue?
    public var holdTerms: JSONValue
    public var partTerms: JSONValue
    public var holdSig: String?
    public var partSig: String?
    public var digest: String?
    /// Balance of good chits, milliCHIPs: positive when the partner owes the holder.
    public var net: Int64
    /// With pending chits.
    public var netPending: Int64
    public var chits: Int64
    public var target: Int64
    public var bound: Int64
    public var reward: Double
    public var clutch: Double
    /// The last link of the chit chain (the tally's digest before any chit).
    public var chainDigest: String?
    public var chainIndex: Int64
    public var core: TallyCore
    public var contract: JSONValue

    public var id: Int64 { seq }

    public init(row: JSONValue) throws {
        guard let seq = row["tally_seq"]?.int64Value, case .string(let uuid)? = row["tally_uuid"],
              let type = row["tally_type"]?.stringValue.flatMap(TallySide.init(rawValue:)), let core = row["json_core"] else {
            throw ChipsError.invalidResponse("a tally row lacks its keys or core")
        }
        self.seq = seq
        self.uuid = TallyID(uuid)
        self.type = type
        guard let status = row["status"]?.stringValue.flatMap(TallyStatus.init(rawValue:)) else {
            throw ChipsError.invalidResponse("tally \(seq) has no status MyCHIPs names")
        }
        self.status = status
        state = TallyState(rawValue: row["state"]?.stringValue ?? "")
        needsAction = row["action"] == .bool(true)
        comment = row["comment"]?.stringValue
        partnerName = row["part_name"]?.stringValue ?? Self.name(of: row["part_cert"])
        if case .string(let cuid)? = row["part_cuid"], case .string(let agent)? = row["part_agent"] {
            partner = ChipsAddress(cuid: cuid, agent: agent)
        } else {
            partner = ChipsAddress(chad: row["part_cert"]?["chad"])
        }
        holdCert = row["hold_cert"] ?? .null
        partCert = row["part_cert"].flatMap { $0.isNull ? nil : $0 }
        holdTerms = row["hold_terms"] ?? .object([:])
        partTerms = row["part_terms"] ?? .object([:])
        holdSig = row["hold_sig"]?.stringValue
        partSig = row["part_sig"]?.stringValue
        digest = ChipsDigest.text(row["digest"])
        net = Self.sum(row["net"])
        netPending = Self.sum(row["net_p"])
        chits = row["chits"]?.int64Value ?? 0
        target = row["target"]?.int64Value ?? 0
        bound = row["bound"]?.int64Value ?? 0
        reward = Self.double(row["reward"])
        clutch = Self.double(row["clutch"])
        chainDigest = ChipsDigest.text(row["chain_dgst"])
        chainIndex = row["chain_conf"]?.int64Value ?? 0
        contract = row["contract"] ?? .null
        self.core = try Self.core(from: core)
    }

    /// A balance: a number, or decimal text (PostgreSQL's numeric as a Wyseman client reads it).
    static func sum(_ value: JSONValue?) -> Int64 {
        if case .string(let text)? = value { return Int64(text) ?? 0 }
        return value?.int64Value ?? 0
    }

    /// A certificate's name as lists show it: `Surname, First`, or an organization's name.
    static func name(of cert: JSONValue?) -> String? {
        guard let name = cert?["name"] else { return nil }
        if case .string(let text) = name { return text }
        let parts = [name["surname"]?.stringValue, name["first"]?.stringValue].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    static func double(_ value: JSONValue?) -> Double {
        switch value {
        case .double(let number)?: number
        case .int(let number)?: Double(number)
        default: 0
        }
    }

    /// The signed record rebuilt from its JSON, so that what the client signs is what it read.
    static func core(from json: JSONValue) throws -> TallyCore {
        guard let core = TallyCore(json: json) else {
            throw ChipsError.invalidResponse("a tally's core is incomplete, or has members this client does not sign")
        }
        return core
    }

    /// The credit the partner grants the holder (`part_terms.limit`), milliCHIPs.
    public var creditFromPartner: Int64 { TallyCore.units(ofLimit: partTerms["limit"]) }
    /// The credit the holder grants the partner.
    public var creditToPartner: Int64 { TallyCore.units(ofLimit: holdTerms["limit"]) }

    /// Both signatures on the record, checked with the keys in its certificates.
    public var signatures: (holder: Bool, partner: Bool) {
        (core.isSigned(by: type, signature: holdSig), core.isSigned(by: type.other, signature: partSig))
    }
}

/// A chit as the holder sees it: a row of `mychips.chits_v_me`.
/// What a tally ticket offers, seen before joining.
public struct TallyPreview: Sendable, Equatable {
    /// The inviter's name as their certificate gives it.
    public var inviter: String
    public var inviterAddress: ChipsAddress?
    /// The joining user's end (`stock` or `foil`).
    public var side: TallySide?
    public var comment: String?
    /// The credit the joining user would grant, and the credit the inviter grants them (CHIPs).
    public var lend: Int64?
    public var borrow: Int64?
    /// Days of notice to call a balance due, each way.
    public var call: Int64?
    public var contract: JSONValue
    public var expires: Date?

    init?(_ value: JSONValue) {
        guard case .object = value else { return nil }
        let name = value["inviter"]
        if let text = name?.stringValue {
            inviter = text
        } else {
            inviter = [name?["first"]?.stringValue, name?["surname"]?.stringValue].compactMap { $0 }.joined(separator: " ")
        }
        inviterAddress = ChipsAddress(chad: value["inviter_chad"])
        side = value["tally_type"]?.stringValue.flatMap(TallySide.init(rawValue:))
        comment = value["comment"]?.stringValue
        lend = value["hold_terms"]?["limit"]?.int64Value
        borrow = value["part_terms"]?["limit"]?.int64Value
        call = value["part_terms"]?["call"]?.int64Value ?? value["hold_terms"]?["call"]?.int64Value
        contract = value["contract"] ?? .null
        expires = value["expires"]?.stringValue.flatMap(JavaScriptDate.parse)
    }
}

public struct ChipsChit: Sendable, Equatable, Identifiable {
    public var seq: Int64
    public var index: Int64
    public var uuid: ChitID
    public var status: ChitStatus
    /// `A.good` (an asset), `L.pend` (a request to pay) …
    public var state: ChitState
    public var request: String?
    /// A request the holder is asked to pay.
    public var needsAction: Bool
    /// What the chit adds to the holder's balance, milliCHIPs.
    public var net: Int64
    public var signature: String?
    public var chainIndex: Int64?
    public var chainPrior: String?
    public var chainHash: String?
    public var core: ChitCore

    public var id: ChitID { uuid }
    public var units: Int64 { core.units ?? 0 }
    public var memo: String? { core.memo }
    public var date: Date { Date(timeIntervalSince1970: Double(core.date) / 1000) }

    public init(row: JSONValue) throws {
        guard let seq = row["chit_seq"]?.int64Value, let index = row["chit_idx"]?.int64Value, case .string(let uuid)? = row["chit_uuid"],
              case .string(let tally)? = row["tally_uuid"], let by = row["issuer"]?.stringValue.flatMap(TallySide.init(rawValue:)),
              let type = row["chit_type"]?.stringValue.flatMap(ChitType.init(rawValue:)),
              case .string(let dateText)? = row["chit_date"], let date = JavaScriptDate.epochMillis(dateText) else {
            throw ChipsError.invalidResponse("a chit row lacks its keys")
        }
        self.seq = seq
        self.index = index
        self.uuid = ChitID(uuid)
        guard let status = row["status"]?.stringValue.flatMap(ChitStatus.init(rawValue:)) else {
            throw ChipsError.invalidResponse("chit \(uuid) has no status MyCHIPs names")
        }
        self.status = status
        state = ChitState(rawValue: row["state"]?.stringValue ?? "")
        request = row["request"]?.stringValue
        needsAction = row["action"] == .bool(true)
        net = row["net"]?.int64Value ?? 0
        signature = row["signature"]?.stringValue
        chainIndex = row["chain_idx"]?.int64Value
        chainPrior = ChipsDigest.text(row["chain_prev"])
        chainHash = ChipsDigest.text(row["chain_dgst"])
        let reference = row["reference"].flatMap { $0.isNull ? nil : $0 }
        core = ChitCore(tally: TallyID(tally), by: by, type: type, uuid: ChitID(uuid), date: date, units: row["units"]?.int64Value, reference: reference,
                        memo: row["memo"]?.stringValue)
        if let given = row["json_core"], given != core.json { throw ChipsError.invalidResponse("a chit's core does not match its columns") }
    }

    /// The chit as a link of its tally's chain; nil until it is linked.
    public var link: ChainLink? {
        guard let chainIndex, let chainPrior, let chainHash else { return nil }
        return ChainLink(core: core, signature: signature, index: chainIndex, prior: chainPrior, hash: chainHash)
    }
}

/// What a client checked of a tally's history: every good chit signed by its issuer, and the
/// chain from the tally's digest to the last link intact.
public struct ChainReport: Sendable, Equatable {
    public var links: Int
    /// The last link's hash: a checksum of the whole history, the same on both partners' copies.
    public var checksum: String
    public var unsignedChits: [ChitID]
}

extension ChipsSession {
    public static let talliesView = "mychips.tallies_v_me"
    public static let chitsView = "mychips.chits_v_me"
    public static let contractsView = "mychips.contracts_v"
    public static let tokensView = "mychips.tokens_v_me"

    /// `insert`: the new row.
    public func insert(_ view: String, fields: [String: JSONValue]) async throws -> JSONValue {
        try await connection.request(view: view, action: "insert", ["fields": .object(fields)])
    }

    /// Puts the public half of the signing key in the user's certificate (once, or after
    /// importing another key): partners check the user's signatures with it.
    public func publish(signingKey key: SigningKey) async throws {
        let jwk = try StrictJSON.parse(Array(key.publicJWK.utf8))
        _ = try await updateProfile(["user_psig": jwk])
    }

    /// The key this device signs with, checked against the one the user's certificate publishes:
    /// - the certificate publishes this device's key: that key;
    /// - the user has no key yet (their first device): a new one, stored and published;
    /// - this device holds a key the certificate does not publish yet: published;
    /// - the certificate publishes a key this device does not hold (made on another device), or
    ///   another key than this device's: ``ChipsError/signingKeyElsewhere`` or
    ///   ``ChipsError/signingKeyDiffers``. The app asks for the key's backup; replacing the
    ///   published key is the user's explicit choice (``replaceSigningKey(with:in:)``).
    public func signingKey(in keychain: ChipsKeychain, unlockingWith gate: any BiometricGate, reason: String) async throws -> SigningKey {
        let local = try await keychain.signingKey(unlockingWith: gate, reason: reason)
        var published = try await me().certificate["public"]
        if published?.isNull == true { published = nil }
        switch (local, published) {
        case (let key?, let published?):
            guard ChipsSignature.sameKey(published, .string(key.publicJWK)) else { throw ChipsError.signingKeyDiffers }
            return key
        case (let key?, nil):
            try await publish(signingKey: key)
            return key
        case (nil, nil):
            let key = SigningKey()
            try await keychain.save(key)
            try await publish(signingKey: key)
            return key
        case (nil, _?):
            throw ChipsError.signingKeyElsewhere
        }
    }

    /// Makes `key` the user's signing key: stored on this device and published in the
    /// certificate, in place of any other. Partners check the user's new chits against it; chits
    /// already signed stay as they are. Only on the user's explicit, confirmed choice.
    public func replaceSigningKey(with key: SigningKey, in keychain: ChipsKeychain) async throws {
        try await keychain.save(key)
        try await publish(signingKey: key)
    }

    /// Registers this device's APNs token (hex) for pushes of tally and chit notices while the
    /// app is not connected; `enabled: false` stops them.
    @discardableResult
    public func registerForPushes(deviceToken: String, enabled: Bool = true) async throws -> Bool {
        let answer = try await action(Self.usersView, "push", options: ["device_token": .string(deviceToken), "enable": .bool(enabled)])
        return answer["pushes"] == .bool(true)
    }

    // MARK: Tallies

    public func tallies() async throws -> [ChipsTally] {
        try await select(Self.talliesView, order: .array([.string("tally_seq")])).map(ChipsTally.init(row:))
    }

    public func tally(_ seq: Int64) async throws -> ChipsTally {
        try ChipsTally(row: try await tuple(Self.talliesView, where: .object(["tally_seq": .int(seq)])))
    }

    /// A new draft: the holder's end (`stock` when the holder is normally owed value), the credit
    /// each end grants (`{limit, call}`, CHIPs and days) and a comment.
    public func createTally(type: TallySide = .stock, holdTerms: JSONValue = .object([:]), partTerms: JSONValue = .object([:]),
                            comment: String? = nil) async throws -> ChipsTally {
        var fields: [String: JSONValue] = ["tally_type": .string(type.rawValue), "hold_terms": holdTerms, "part_terms": partTerms]
        if let comment { fields["comment"] = .string(comment) }
        return try ChipsTally(row: try await insert(Self.talliesView, fields: fields))
    }

    /// A tally ticket for a draft: shown as a QR code or sent as a link to the partner. The
    /// `invite` action in its JSON format: `{invite: {token, expires, chad}, url, …}`.
    public func invite(_ seq: Int64) async throws -> TallyInvite {
        let answer = try await action(Self.talliesView, "invite", keys: [.object(["tally_seq": .int(seq)])],
                                      options: ["reuse": false, "format": ["json"]])
        let ticket = answer.arrayValue?.first?["invite"] ?? .null
        guard case .string(let token)? = ticket["token"], let chad = ChipsAddress(chad: ticket["chad"]) else {
            throw ChipsError.invalidResponse("the provider's invitation lacks its token or address")
        }
        return TallyInvite(token: token, chad: chad, expires: ticket["expires"]?.stringValue.flatMap(JavaScriptDate.parse))
    }

    /// Presents a partner's tally ticket (`mychips.ticket_process`): the inviter's draft gets
    /// this user's certificate, and the inviter's offer follows as a notice.
    public func accept(_ invite: TallyInvite) async throws {
        var ticket: [String: JSONValue] = ["token": .string(invite.token), "chad": invite.chad.json]
        if let expires = invite.expires { ticket["expires"] = .string(JavaScriptDate.string(expires)) }
        let rows = try await select("mychips.ticket_process", params: [.object(ticket)])
        guard rows.first?["ticket_process"] == .bool(true) else { throw ChipsError.invalidResponse("the provider did not take the ticket") }
    }

    /// What a tally ticket offers, before joining: the inviter, the terms from the joining
    /// user's side (`hold_terms` what they would grant), the comment and contract. Nil when the
    /// provider offers no preview (a MyCHIPs provider shows the terms with its offer instead).
    public func preview(_ invite: TallyInvite) async throws -> TallyPreview? {
        do {
            let answer = try await action(Self.talliesView, "preview", options: ["token": .string(invite.token)])
            return TallyPreview(answer)
        } catch let error as ChipsError where error.kind == .server && error.code?.hasPrefix("!mychips.tokens") != true {
            return nil
        }
    }

    /// The link to tally `seq`'s agreement — the partners, terms, contract and signatures — as
    /// the provider renders it: `page` a web page, else a PDF. The link works for a few minutes.
    public func agreementLink(_ seq: Int64, page: Bool = true) async throws -> URL {
        let answer = try await action(Self.talliesView, "agree", keys: [.object(["tally_seq": .int(seq)])], options: ["format": [page ? "page" : "url"]])
        guard let text = (answer.arrayValue?.first ?? answer).stringValue, let url = URL(string: text), url.scheme == "https" || url.scheme == "http" else {
            throw ChipsError.invalidResponse("the provider's agreement has no link")
        }
        return url
    }

    /// Tally `seq`'s agreement as a printable web page, fetched from the provider.
    public func agreementPage(_ seq: Int64) async throws -> String {
        let response = try await connection.fetch(try await agreementLink(seq))
        guard response.status == 200, let page = String(data: response.body, encoding: .utf8) else {
            throw ChipsError.invalidResponse("the provider did not give the agreement (HTTP \(response.status.code))")
        }
        return page
    }

    /// The open tally with the owner of a CHIP address (a scanned payment code's), if any.
    public func openTally(with address: ChipsAddress) async throws -> ChipsTally? {
        try await tallies().first { $0.status == .open && $0.partner?.cuid == address.cuid && $0.partner?.agent == address.agent }
    }

    /// This user's payment address, or an invoice when it names `units`: the link anyone scans to pay.
    public func paymentRequest(units: Int64? = nil, reference: String? = nil, memo: String? = nil) async throws -> PaymentRequest {
        let me = try await me()
        return PaymentRequest(chad: ChipsAddress(cuid: me.address.cuid, agent: me.address.agent), units: units, reference: reference, memo: memo)
    }

    /// Asks the partner of an open tally for an invoice: they are notified (and pushed) with the
    /// memo and amount hinted, and answer with a request to pay.
    public func requestInvoice(_ seq: Int64, memo: String? = nil, units: Int64? = nil) async throws {
        var options: [String: JSONValue] = [:]
        if let memo { options["memo"] = .string(memo) }
        if let units { options["units"] = .int(units) }
        _ = try await action(Self.talliesView, "invoice", keys: [.object(["tally_seq": .int(seq)])], options: options)
    }

    /// Offers a tally to the partner (or counters the partner's offer): applies `changes`
    /// (`comment`, `hold_terms`, `part_terms`, `contract`) first, then signs the resulting record.
    public func offer(_ seq: Int64, changes: [String: JSONValue] = [:], signingKey key: SigningKey) async throws -> ChipsTally {
        var tally = try await tally(seq)
        if !changes.isEmpty {
            tally = try ChipsTally(row: try await update(Self.talliesView, fields: changes, where: .object(["tally_seq": .int(seq)])))
        }
        try requireOwnKey(tally, key)
        let signature = try key.sign(tally.core.signingText)
        return try ChipsTally(row: try await update(Self.talliesView, fields: ["request": "offer", "hold_sig": .string(signature)],
                                                    where: .object(["tally_seq": .int(seq)])))
    }

    /// Accepts the partner's offer as it stands: checks the partner's signature, signs the same
    /// record, and the tally opens on both ends.
    public func acceptOffer(_ seq: Int64, signingKey key: SigningKey) async throws -> ChipsTally {
        let tally = try await tally(seq)
        guard tally.state == .partnerOffer else { throw ChipsError.invalidResponse("tally \(seq) is \(tally.state), not an offer from the partner") }
        guard tally.signatures.partner else { throw ChipsError.invalidResponse("the partner's signature on tally \(seq) does not verify") }
        try requireOwnKey(tally, key)
        let signature = try key.sign(tally.core.signingText)
        return try ChipsTally(row: try await update(Self.talliesView, fields: ["request": "open", "hold_sig": .string(signature)],
                                                    where: .object(["tally_seq": .int(seq)])))
    }

    /// Rejects an offer, or withdraws a draft or the holder's own offer.
    public func reject(_ seq: Int64) async throws -> ChipsTally {
        try ChipsTally(row: try await update(Self.talliesView, fields: ["request": "void"], where: .object(["tally_seq": .int(seq)])))
    }

    /// Asks to close an open tally (a signed `set` chit): it closes when its balance is zero.
    public func close(_ seq: Int64, signingKey key: SigningKey) async throws -> ChipsChit {
        try await settle(seq, settings: .object(["close": .bool(true)]), signingKey: key)
    }

    /// Sets trading variables (`target`, `bound`, `reward`, `clutch`) with a signed `set` chit.
    public func settle(_ seq: Int64, settings: JSONValue, signingKey key: SigningKey) async throws -> ChipsChit {
        let tally = try await tally(seq)
        return try await sendSigned(tally, type: .set, units: nil, reference: settings, memo: nil, signingKey: key)
    }

    private func requireOwnKey(_ tally: ChipsTally, _ key: SigningKey) throws {
        guard ChipsSignature.sameKey(tally.holdCert["public"], .string(key.publicJWK)) else {
            throw ChipsError.signingKeyDiffers
        }
    }

    // MARK: Chits

    /// The chits of one tally, or of all, in chain order.
    public func chits(tally seq: Int64? = nil) async throws -> [ChipsChit] {
        let filter: JSONValue? = seq.map { .object(["chit_seq": .int($0)]) }
        return try await select(Self.chitsView, where: filter, order: .array([.string("chit_seq"), .string("chit_idx")])).map(ChipsChit.init(row:))
    }

    /// Pays the partner `units` milliCHIPs: a chit the holder issues and signs, good at once.
    public func pay(_ seq: Int64, units: Int64, memo: String? = nil, reference: JSONValue? = nil, signingKey key: SigningKey) async throws -> ChipsChit {
        let tally = try await tally(seq)
        return try await sendSigned(tally, type: .tran, units: units, reference: reference, memo: memo, signingKey: key)
    }

    /// Signs a payment without sending it: to show as a QR code or send as a link, for the
    /// partner's app to hand to the provider (``deliver(_:)``).
    public func signChit(_ seq: Int64, units: Int64, memo: String? = nil, reference: JSONValue? = nil, signingKey key: SigningKey) async throws -> SignedChit {
        let tally = try await tally(seq)
        try requireOwnKey(tally, key)
        let core = ChitCore(tally: tally.uuid, by: tally.type, type: .tran, uuid: ChitID(UUID().uuidString.lowercased()), date: Date().epochMillisForChits,
                            units: units, reference: reference, memo: memo)
        return SignedChit(core: core, signature: try key.sign(core.signingText))
    }

    /// Hands a signed chit — this user's, or a partner's received as a QR code or link — to the
    /// provider. The same chit delivered twice is stored once.
    public func deliver(_ chit: SignedChit) async throws -> ChipsChit {
        guard let tally = try await tallies().first(where: { $0.uuid == chit.core.tally && $0.status == .open }) else {
            throw ChipsError.invalidLink("the chit is for a tally you do not have open")
        }
        return try await insert(chit, seq: tally.seq)
    }

    /// Delivers a chit and, when its answer is lost (the connection drops, or no answer comes
    /// in time), logs in again and sends the very same chit, up to `attempts` times. The
    /// provider stores a chit id once, so the payment is made once whichever attempt arrived.
    /// Throws ``ChipsError/disconnected``, ``ChipsError/timeout`` or ``ChipsError/offline``
    /// when no attempt was answered: the chit may be stored, and sending it again is safe.
    public func deliverConfirmed(_ chit: SignedChit, seq: Int64? = nil, attempts: Int = 4) async throws -> ChipsChit {
        var attempt = 1
        while true {
            do {
                if let seq { return try await insert(chit, seq: seq) }
                return try await deliver(chit)
            } catch let error as ChipsError where error.isAnswerLost && attempt < attempts {
                attempt += 1
                try await Task.sleep(for: .milliseconds(250 * attempt))
                try? await connection.connect()
            }
        }
    }

    private func insert(_ chit: SignedChit, seq: Int64) async throws -> ChipsChit {
        var fields: [String: JSONValue] = [
            "chit_seq": .int(seq), "chit_uuid": .string(chit.core.uuid.rawValue), "chit_type": .string(chit.core.type.rawValue),
            "issuer": .string(chit.core.by.rawValue), "chit_date": .string(JavaScriptDate.string(epochMillis: chit.core.date)),
            "request": "good", "signature": .string(chit.signature),
        ]
        if let units = chit.core.units { fields["units"] = .int(units) }
        if let reference = chit.core.reference { fields["reference"] = reference }
        if let memo = chit.core.memo { fields["memo"] = .string(memo) }
        return try ChipsChit(row: try await insert(Self.chitsView, fields: fields))
    }

    /// Asks the partner to pay `units` milliCHIPs (an invoice on a shared tally): a chit the
    /// partner issues (`issuer` their end), pending until they sign it.
    public func request(_ seq: Int64, units: Int64, memo: String? = nil, reference: JSONValue? = nil) async throws -> ChipsChit {
        let tally = try await tally(seq)
        var fields: [String: JSONValue] = ["chit_seq": .int(seq), "tally_uuid": .string(tally.uuid.rawValue), "chit_uuid": .string(UUID().uuidString.lowercased()),
                                           "units": .int(units), "request": "pend", "issuer": .string(tally.type.other.rawValue)]
        if let memo { fields["memo"] = .string(memo) }
        if let reference { fields["reference"] = reference }
        return try ChipsChit(row: try await insert(Self.chitsView, fields: fields))
    }

    /// Pays a request the partner sent: signs the requested chit as it stands.
    public func acceptRequest(_ chit: ChipsChit, signingKey key: SigningKey) async throws -> ChipsChit {
        guard chit.state == .requestToPay else { throw ChipsError.invalidResponse("chit \(chit.uuid) is \(chit.state), not a request to you") }
        let signature = try key.sign(chit.core.signingText)
        return try ChipsChit(row: try await update(Self.chitsView, fields: ["request": "good", "signature": .string(signature)],
                                                   where: .object(["chit_uuid": .string(chit.uuid.rawValue), "chit_seq": .int(chit.seq)])))
    }

    /// Refuses a request (or withdraws one the holder sent).
    public func refuseRequest(_ chit: ChipsChit) async throws -> ChipsChit {
        try ChipsChit(row: try await update(Self.chitsView, fields: ["request": "void"],
                                            where: .object(["chit_uuid": .string(chit.uuid.rawValue), "chit_seq": .int(chit.seq)])))
    }

    private func sendSigned(_ tally: ChipsTally, type: ChitType, units: Int64?, reference: JSONValue?, memo: String?,
                            signingKey key: SigningKey) async throws -> ChipsChit {
        try requireOwnKey(tally, key)
        let core = ChitCore(tally: tally.uuid, by: tally.type, type: type, uuid: ChitID(UUID().uuidString.lowercased()),
                            date: Date().epochMillisForChits, units: units, reference: reference, memo: memo)
        return try await deliverConfirmed(SignedChit(core: core, signature: try key.sign(core.signingText)), seq: tally.seq)
    }

    /// Checks a tally's history on this device: each good chit's signature by its issuer's key
    /// on the tally, and the hash chain from the tally's digest to its last link.
    public func verifyChain(_ seq: Int64) async throws -> ChainReport {
        let tally = try await tally(seq)
        guard let digest = tally.digest else { throw ChipsError.invalidResponse("tally \(seq) is not open: it has no chain yet") }
        guard tally.core.digest == digest else { throw ChipsError.invalidResponse("tally \(seq)'s digest is not the digest of its record") }
        let good = try await chits(tally: seq).filter { $0.status == .good }
        var unsigned: [ChitID] = []
        for chit in good {
            let cert = chit.core.by == tally.type ? tally.holdCert : (tally.partCert ?? .null)
            if !chit.core.isSigned(by: cert["public"], signature: chit.signature) { unsigned.append(chit.uuid) }
        }
        let links = good.compactMap(\.link)
        guard links.count == good.count else { throw ChipsError.invalidResponse("a good chit of tally \(seq) is not linked into the chain") }
        let checksum: String
        do { checksum = try ChipsChain.verify(links, tallyDigest: digest) } catch {
            throw ChipsError.invalidResponse("the chain of tally \(seq) is broken: \(error)")
        }
        // This provider also names the chain's end on the tally; a real provider leaves it to the chits.
        if let end = tally.chainDigest, checksum != end { throw ChipsError.invalidResponse("the chain of tally \(seq) does not end where the tally says") }
        return ChainReport(links: links.count, checksum: checksum, unsignedChits: unsigned)
    }

    /// The visual balance sheet as the provider draws it (`/chips/balance.svg`).
    public func balanceSheetSVG() async throws -> String {
        let response = try await connection.signedGET("/chips/balance.svg")
        guard response.status == 200 else { throw ChipsError.server(message: String(decoding: response.body, as: UTF8.self), code: "HTTP \(response.status.code)", detail: nil) }
        return String(decoding: response.body, as: UTF8.self)
    }

    /// The balance sheet: each open (or closing) tally's balance by partner.
    public func balanceSheet() async throws -> BalanceSheet {
        let tallies = try await tallies().filter { $0.status == .open || ($0.status == .close && $0.net != 0) }
        return BalanceSheet(entries: tallies.map { BalanceSheet.Entry(id: String($0.seq), partner: $0.partnerName ?? $0.partner?.text ?? "?", net: $0.net) })
    }
}

extension Date {
    /// Unix milliseconds, the precision of a chit's signed date.
    var epochMillisForChits: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }
}

/// Finds the tallies a user means by a word they type: a tally's number, the partner's CHIP
/// address or user id, or the partner's name. A real provider names a person "Smith, Adam", so
/// a name matches by its whole text or by any of its parts ("Smith", "Adam"), ignoring case and
/// accents. An exact match (the number, the address, the whole name) wins over a part.
public enum ChipsPartnerMatch {
    /// The tallies `query` names, best matches only: several means the user must choose.
    public static func tallies(_ query: String, in tallies: [ChipsTally]) -> [ChipsTally] {
        let wanted = fold(query.trimmingCharacters(in: .whitespaces))
        guard !wanted.isEmpty else { return [] }
        if let seq = Int64(wanted), let match = tallies.first(where: { $0.seq == seq }) { return [match] }
        let exact = tallies.filter {
            $0.partner?.cuid == query || $0.partner?.text == query || $0.partnerName.map(fold) == wanted
        }
        if !exact.isEmpty { return exact }
        let wantedParts = parts(wanted)
        return tallies.filter { tally in
            guard let name = tally.partnerName else { return false }
            let nameParts = parts(fold(name))
            // Every word typed is one of the name's parts: "Smith", "adam smith", "Smith Adam".
            return wantedParts.allSatisfy(nameParts.contains)
        }
    }

    static func fold(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }

    static func parts(_ text: String) -> [String] {
        text.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map(String.init)
    }
}

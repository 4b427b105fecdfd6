import Foundation
import HTTPTypes
import PurseHTTP
import Observation
import PurseFormats
import PurseKit

/// Where the app goes next: the page a scanned code, an opened link or a notification leads to.
public enum ChipsRoute: Equatable, Sendable {
    case connect(ChipsTicket)
    case tallyInvite(TallyInvite)
    case pay(PaymentRequest)
    case importKey(SigningKeyBackup)
    /// A connection key backup: to the Account page's import.
    case importConnection(ConnectionKeyBackup)
    /// A signed chit handed over: to the outbox, delivered when connected.
    case chit(SignedChit)
    case tally(seq: Int64)
    case chits(seq: Int64)
    case answerRequest(seq: Int64, chit: ChitID)
    /// The partner asks for an invoice: the Request page for that tally, filled in.
    case invoiceRequested(seq: Int64, memo: String?, units: Int64?)
    case invalid(String)
}

/// The QR scanner and the deep-link handler: one parser (``ChipsLink``) for both, each link kind
/// to its page.
public enum ChipsRouter {
    public static func route(_ text: String) -> ChipsRoute {
        do {
            switch try ChipsLink.parse(text) {
            case .ticket(let ticket): return .connect(ticket)
            case .invite(let invite): return .tallyInvite(invite)
            case .pay(let request): return .pay(request)
            case .signkey(let backup): return .importKey(backup)
            case .chit(let chit): return .chit(chit)
            case .connectKey(let backup): return .importConnection(backup)
            }
        } catch {
            return .invalid(error.description)
        }
    }

    /// A provider notice to the page it concerns: a tally offer to the tally, a request to pay to
    /// the chit, a payment received to the tally's chits. Nil for notices with no page.
    public static func route(_ notification: ChipsNotification) -> ChipsRoute? {
        guard let route = ChipsPushRoute(notification.data) else { return nil }
        switch route.target {
        case .tally:
            if route.reason == "invoice" { return .invoiceRequested(seq: route.sequence, memo: route.memo, units: route.units) }
            return .tally(seq: route.sequence)
        case .chit:
            if route.action, let uuid = route.uuid { return .answerRequest(seq: route.sequence, chit: uuid) }
            return .chits(seq: route.sequence)
        }
    }
}

/// Gives a page the signing key when it signs (behind the biometric gate or a passphrase).
public typealias ChipsSigner = @Sendable () async throws -> SigningKey

/// Home: the balance sheet — net total, assets and liabilities — as a list or as the bubble
/// chart, with the tallies that wait for the user.
@MainActor
@Observable
public final class HomeViewModel {
    public enum Mode: String, Sendable { case tabular, visual }
    public enum Sort: String, Sendable { case name, balance, date }

    public private(set) var tallies: [ChipsTally] = []
    public private(set) var sheet = BalanceSheet(entries: [])
    public private(set) var error: String?
    public var mode: Mode = .tabular
    public var sort: Sort = .balance
    /// The local currency beside CHIP amounts, when set.
    public var rate: ChipsExchangeRate?
    let session: ChipsSession

    public init(session: ChipsSession, rate: ChipsExchangeRate? = nil) {
        self.session = session
        self.rate = rate
    }

    public func load() async {
        do {
            tallies = try await session.tallies()
            sheet = try await session.balanceSheet()
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    /// Closed tallies are listed too when set ("show closed"); by default only those with a
    /// balance left.
    public var showClosed = false

    /// Open tallies (and closed ones, when shown) in the chosen order.
    public var rows: [ChipsTally] {
        let open = tallies.filter { $0.status == .open || $0.status == .close && ($0.net != 0 || showClosed) }
        switch sort {
        case .name: return open.sorted { ($0.partnerName ?? "") < ($1.partnerName ?? "") }
        case .balance: return open.sorted { $0.net > $1.net }
        case .date: return open.sorted { $0.core.date > $1.core.date }
        }
    }

    /// Drafts and offers that wait for the user.
    public var waiting: [ChipsTally] { tallies.filter(\.needsAction) }

    /// The user's own drafts not yet offered (with or without a partner), to invite or offer.
    public var drafts: [ChipsTally] { tallies.filter { ($0.state == .draft || $0.state == .partnerDraft) && !$0.needsAction } }

    /// The user's offers that wait for the partner.
    public var offered: [ChipsTally] { tallies.filter { $0.state == .holderOffer } }

    /// The totals the net comes from, as Home shows them above the list or the chart.
    public var totals: (assets: String, liabilities: String, net: String) {
        (amount(sheet.totalAssets), amount(sheet.totalLiabilities), amount(sheet.net))
    }

    public var chart: BalanceSheetChart { BalanceSheetChart(sheet) }

    /// "12.5 CHIP", or with the local currency "12.5 CHIP ≈ 29.38 USD".
    public func amount(_ units: Int64) -> String { rate?.display(units) ?? "\(ChipsUnits.format(units)) CHIP" }

    /// A tap on the chart: the tally of the bubble under it.
    public func select(x: Double, y: Double) -> ChipsRoute? {
        guard let bubble = chart.bubble(atX: x, y: y), let seq = Int64(bubble.entry.id) else { return nil }
        return .tally(seq: seq)
    }
}

/// Tally Edit: a draft's values, the trading variables, and the actions the state allows —
/// invite, offer, accept, counter, reject, close — with the contract to read.
@MainActor
@Observable
public final class TallyEditViewModel {
    public typealias Action = TallyNegotiation.Action

    /// The negotiation's rules and where it stands (``TallyNegotiation``).
    public private(set) var negotiation = TallyNegotiation()
    public var tally: ChipsTally? { negotiation.tally }
    public var invite: TallyInvite? { negotiation.invite }
    public private(set) var contract: JSONValue?
    /// The last failure, in the user's language.
    public private(set) var error: String?
    /// Edits not sent yet: `comment`, and the limits in CHIPs (`lend`: the credit the user grants,
    /// `borrow`: the credit the user asks for).
    public var comment = ""
    public var lend = ""
    public var borrow = ""
    /// The holder's trading variables: `target` and `bound` in CHIPs, `reward` and `clutch` as
    /// margins (-1 to 1). A draft takes them as values; an open tally by a signed settings chit.
    public var target = ""
    public var bound = ""
    public var reward = ""
    public var clutch = ""
    /// Days of notice to call a balance due (both ends' `call`), while a draft or offer.
    public var call = ""
    /// The contract (its `rid`), chosen among ``contracts`` while a draft or offer.
    public var contractID = ""
    public private(set) var contracts: [JSONValue] = []
    let session: ChipsSession
    let signer: ChipsSigner
    public let seq: Int64

    public init(session: ChipsSession, seq: Int64, signer: @escaping ChipsSigner) {
        self.session = session
        self.seq = seq
        self.signer = signer
    }

    public func load() async {
        do {
            let tally = try await session.tally(seq)
            _ = negotiation.handle(.loaded(tally))
            comment = tally.comment ?? ""
            lend = tally.holdTerms["limit"].map(Self.text) ?? ""
            borrow = tally.partTerms["limit"].map(Self.text) ?? ""
            target = ChipsUnits.format(tally.target)
            bound = ChipsUnits.format(tally.bound)
            reward = String(tally.reward)
            clutch = String(tally.clutch)
            call = tally.holdTerms["call"].map(Self.text) ?? ""
            if let words = try? await session.words() { invitationTitle = words.message("invitation").title }
            contractID = tally.contract["source"]?.stringValue ?? ""
            if case .string(let rid)? = tally.contract["source"] {
                contract = try await session.select(ChipsSession.contractsView, where: .object(["rid": .string(rid)])).first
            }
            if isEditable { contracts = try await session.select(ChipsSession.contractsView) }
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    static func text(_ value: JSONValue) -> String {
        switch value {
        case .int(let number): String(number)
        case .double(let number): String(number)
        default: ""
        }
    }

    /// The values can change while the tally is a draft or an offer.
    public var isEditable: Bool { tally?.status.isNegotiable ?? false }

    /// What the user can do now.
    public var actions: [Action] { negotiation.actions }

    /// The edits as the tally's fields; a limit that is not a number is an error.
    func changes() throws -> [String: JSONValue] {
        guard let tally else { return [:] }
        var changes: [String: JSONValue] = [:]
        if comment != (tally.comment ?? "") { changes["comment"] = comment.isEmpty ? .null : .string(comment) }
        for (text, column, terms) in [(lend, "hold_terms", tally.holdTerms), (borrow, "part_terms", tally.partTerms)] {
            guard text != (terms["limit"].map(Self.text) ?? "") else { continue }
            guard let limit = Int64(text), limit >= 0 else { throw ChipsError.invalidLink("a credit limit is a whole number of CHIPs") }
            var members = terms.objectValue ?? [:]
            members["limit"] = .int(limit)
            changes[column] = .object(members)
        }
        if call != (tally.holdTerms["call"].map(Self.text) ?? "") {
            guard let days = Int64(call), (0...3650).contains(days) else { throw ChipsError.invalidLink("the call is a number of days, 0 to 3650") }
            for (column, terms) in [("hold_terms", tally.holdTerms), ("part_terms", tally.partTerms)] {
                var members = changes[column]?.objectValue ?? terms.objectValue ?? [:]
                members["call"] = .int(days)
                changes[column] = .object(members)
            }
        }
        if !contractID.isEmpty, contractID != (tally.contract["source"]?.stringValue ?? "") {
            guard contracts.contains(where: { $0["rid"]?.stringValue == contractID }) else { throw ChipsError.invalidLink("choose one of the provider's contracts") }
            changes["contract"] = .object(["source": .string(contractID)])
        }
        return changes
    }

    /// The draft's invitation as a QR code, once made (``Action/invite``), for the partner to scan.
    public var inviteQR: QRCode? { invite.flatMap { try? QRCode.encode(text: $0.link, errorCorrection: .medium) } }

    /// The invitation for the share sheet.
    public var inviteShare: ChipsShare? { invite.map { ChipsShare(title: invitationTitle, link: $0.link) } }
    /// The invitation's title in the user's language (the app message `invitation`).
    private var invitationTitle = "Tally invitation"

    /// An open tally can be paid on and asked for payment from here.
    public var canTrade: Bool { tally?.status == .open }

    /// The Pay page on this tally.
    public func pay() -> PayViewModel? {
        guard canTrade, let tally else { return nil }
        return PayViewModel(session: session, tally: tally, signer: signer)
    }

    /// The Request page on this tally.
    public func request() -> RequestViewModel? {
        guard canTrade, let tally else { return nil }
        return RequestViewModel(session: session, tally: tally)
    }

    /// The tally and its contract as a printable page (HTML), from the provider.
    public func agreementPage() async -> String? {
        do {
            return try await session.agreementPage(seq)
        } catch {
            self.error = await session.describe(error)
            return nil
        }
    }

    /// The trading variables that changed, as a tally's fields or a settings chit's settings.
    func tradingChanges() throws -> [String: JSONValue] {
        guard let tally else { return [:] }
        var changes: [String: JSONValue] = [:]
        for (text, key, current) in [(target, "target", tally.target), (bound, "bound", tally.bound)] where text != ChipsUnits.format(current) {
            changes[key] = .int(try ChipsUnits.parse(text))
        }
        for (text, key, current) in [(reward, "reward", tally.reward), (clutch, "clutch", tally.clutch)] where text != String(current) {
            guard let margin = Double(text), (-1...1).contains(margin) else { throw ChipsError.invalidLink("\(key) is a margin from -1 to 1") }
            changes[key] = .double(margin)
        }
        return changes
    }

    /// Saves the trading variables: on a draft or offer as values, on an open tally by a signed
    /// settings chit (MyCHIPs' `set` chit).
    public func saveTrading() async {
        do {
            let changes = try tradingChanges()
            guard !changes.isEmpty, let tally else { return }
            if tally.status == .open {
                _ = try await session.settle(seq, settings: .object(changes), signingKey: try await signer())
            } else {
                _ = try await session.update(ChipsSession.talliesView, fields: changes, where: .object(["tally_seq": .int(seq)]))
            }
            await load()
        } catch {
            self.error = await session.describe(error)
        }
    }

    /// Asks the negotiation for `action` and runs what it asks for.
    public func perform(_ action: Action) async {
        for effect in negotiation.handle(.chose(action)) {
            let outcome: TallyNegotiation.Event
            do {
                outcome = try await run(effect)
            } catch {
                outcome = .failed((error as? ChipsError) ?? .invalidResponse(String(describing: error)))
                _ = negotiation.handle(outcome)
                self.error = await session.describe(error)
                return
            }
            _ = negotiation.handle(outcome)
        }
        if case .refused(action, let failure) = negotiation.step {
            self.error = await session.describe(failure)
        } else {
            error = nil
        }
    }

    private func run(_ effect: TallyNegotiation.Effect) async throws -> TallyNegotiation.Event {
        switch effect {
        case .makeInvitation:
            return .invited(try await session.invite(seq))
        case .signAndOffer:
            return .changed(try await session.offer(seq, changes: try changes(), signingKey: try await signer()))
        case .signAndAccept:
            return .changed(try await session.acceptOffer(seq, signingKey: try await signer()))
        case .reject:
            return .changed(try await session.reject(seq))
        case .signAndClose:
            _ = try await session.close(seq, signingKey: try await signer())
            return .changed(try await session.tally(seq))
        }
    }
}

/// Chits View: a tally's chits with date, type, amount and status, and whether its history
/// checks out on this device.
@MainActor
@Observable
public final class ChitsViewModel {
    public private(set) var chits: [ChipsChit] = []
    public private(set) var chain: ChainReport?
    public private(set) var error: String?
    let session: ChipsSession
    public let seq: Int64

    public init(session: ChipsSession, seq: Int64) {
        self.session = session
        self.seq = seq
    }

    public func load() async {
        do {
            chits = try await session.chits(tally: seq)
            chain = try await session.verifyChain(seq)
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    /// Requests the partner sent that wait for the user.
    public var requests: [ChipsChit] { chits.filter(\.needsAction) }
}

/// Pay: an amount (CHIPs) and a memo to a partner on an open tally, checked against the credit
/// the partner grants before it is signed. A scanned invoice fills it in.
@MainActor
@Observable
public final class PayViewModel {
    public var amount = ""
    public var memo = ""
    public var reference: String?
    public private(set) var sent: ChipsChit?
    public private(set) var error: String?
    let session: ChipsSession
    let signer: ChipsSigner
    public var tally: ChipsTally
    /// The local currency beside the amount, when the user set one.
    public var rate: ChipsExchangeRate?
    /// The signed chit of an attempt not known to have arrived, and the form it was signed for:
    /// sending the same form again delivers the same chit, which the provider stores once — a
    /// payment whose answer was lost is not paid twice.
    @ObservationIgnored private var attempt: (chit: SignedChit, form: [String])?

    public init(session: ChipsSession, tally: ChipsTally, signer: @escaping ChipsSigner, invoice: PaymentRequest? = nil) {
        self.session = session
        self.tally = tally
        self.signer = signer
        if let invoice {
            amount = invoice.units.map { ChipsUnits.format($0) } ?? ""
            memo = invoice.memo ?? ""
            reference = invoice.reference
        }
    }

    /// The amount typed so far in the local currency ("≈ 29.38 USD"), when a rate is set and the
    /// amount reads.
    public var localAmount: String? {
        guard let rate, let units = try? ChipsUnits.parse(amount) else { return nil }
        return "≈ \(DecimalAmount.format(rate.convert(units), decimals: rate.currencyDecimals, minimumDecimals: rate.currencyDecimals)) \(rate.currency)"
    }

    /// What the user can pay before passing the partner's credit limit.
    public var available: Int64 { CheckedAmount.saturatingSum([tally.creditFromPartner, tally.net]) }

    /// The amount in milliCHIPs, or why it cannot be sent.
    public var check: Result<Int64, ChipsError> {
        do {
            let units = try ChipsUnits.parse(amount)
            guard units > 0 else { return .failure(ChipsError(.invalidLink, "enter an amount above zero", code: "amount")) }
            guard units <= available else {
                let most = "\(ChipsUnits.format(max(0, available))) CHIP"
                return .failure(ChipsError(.invalidLink, "that is more than your partner's credit allows: at most \(most)", code: "overlimit", values: ["units": most]))
            }
            return .success(units)
        } catch {
            return .failure(ChipsError(.invalidLink, error.message, code: "amount"))
        }
    }

    public func send() async {
        switch check {
        case .failure(let failure): error = await session.describe(failure)
        case .success(let units):
            let form = [String(tally.seq), String(units), memo, reference ?? ""]
            do {
                let chit: SignedChit
                if let attempt, attempt.form == form {
                    chit = attempt.chit
                } else {
                    chit = try await session.signChit(tally.seq, units: units, memo: memo.isEmpty ? nil : memo, reference: reference.map(JSONValue.string),
                                                      signingKey: try await signer())
                }
                attempt = (chit, form)
                sent = try await session.deliverConfirmed(chit, seq: tally.seq)
                attempt = nil
                error = nil
            } catch {
                self.error = await session.describe(error)
            }
        }
    }
}

/// Request / Invoice: ask a partner on a tally to pay, or make an invoice link (and its QR) for
/// anyone to pay this user's CHIP address.
@MainActor
@Observable
public final class RequestViewModel {
    public var amount = ""
    public var memo = ""
    public var reference = ""
    public private(set) var sent: ChipsChit?
    public private(set) var error: String?
    /// The tally the request is for, when the page was opened from one (Tally Edit, Home, an
    /// invoice asked for).
    public private(set) var tally: ChipsTally?
    let session: ChipsSession

    public init(session: ChipsSession, tally: ChipsTally? = nil, memo: String? = nil, units: Int64? = nil) {
        self.session = session
        self.tally = tally
        self.memo = memo ?? ""
        self.amount = units.map { ChipsUnits.format($0) } ?? ""
    }

    /// Asks the partner of the page's tally to pay.
    public func send() async {
        guard let tally else { return }
        await send(on: tally.seq)
    }

    /// Asks the partner on tally `seq` to pay.
    public func send(on seq: Int64) async {
        do {
            let units = try ChipsUnits.parse(amount)
            sent = try await session.request(seq, units: units, memo: memo.isEmpty ? nil : memo, reference: reference.isEmpty ? nil : .string(reference))
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    /// `https://mychips.org/pay?chad=…&units=…&ref=…&memo=…` for this user.
    public func invoice() async throws -> PaymentRequest {
        let units = amount.isEmpty ? nil : try ChipsUnits.parse(amount)
        return try await session.paymentRequest(units: units, reference: reference.isEmpty ? nil : reference, memo: memo.isEmpty ? nil : memo)
    }

    /// The invoice link as a QR code.
    public func invoiceQR() async throws -> QRCode {
        try QRCode.encode(text: try await invoice().link, errorCorrection: .medium)
    }
}

/// History: every chit on every tally, sortable, filtered by partner, with "pay again" and
/// "request again".
@MainActor
@Observable
public final class HistoryViewModel {
    public enum Sort: String, Sendable { case date, amount, partner }

    public private(set) var chits: [ChipsChit] = []
    public private(set) var tallies: [Int64: ChipsTally] = [:]
    public private(set) var error: String?
    public var sort: Sort = .date
    /// A tally number to show only that partner.
    public var partner: Int64?
    let session: ChipsSession

    public init(session: ChipsSession) { self.session = session }

    public func load() async {
        do {
            tallies = Dictionary(uniqueKeysWithValues: try await session.tallies().map { ($0.seq, $0) })
            chits = try await session.chits().filter { $0.core.type == .tran }
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    public var rows: [ChipsChit] {
        let shown = chits.filter { partner == nil || $0.seq == partner }
        switch sort {
        case .date: return shown.sorted { $0.core.date > $1.core.date }
        case .amount: return shown.sorted { abs($0.net) > abs($1.net) }
        case .partner: return shown.sorted { (tallies[$0.seq]?.partnerName ?? "") < (tallies[$1.seq]?.partnerName ?? "") }
        }
    }

    /// The Pay page filled in as `chit` was.
    public func payAgain(_ chit: ChipsChit, signer: @escaping ChipsSigner) -> PayViewModel? {
        guard let tally = tallies[chit.seq] else { return nil }
        let model = PayViewModel(session: session, tally: tally, signer: signer)
        model.amount = ChipsUnits.format(chit.units)
        model.memo = chit.memo ?? ""
        return model
    }

    /// The Request page filled in as `chit` was.
    public func requestAgain(_ chit: ChipsChit) -> RequestViewModel {
        let model = RequestViewModel(session: session)
        model.amount = ChipsUnits.format(chit.units)
        model.memo = chit.memo ?? ""
        return model
    }
}

/// Settings: language (``LanguagePickerViewModel``), notifications, the defaults new tallies take
/// (contract, credit limit) and the local currency, kept in the app's preferences.
@MainActor
@Observable
public final class WalletSettingsViewModel {
    static let notificationsKey = "mychips.notifications"
    static let creditKey = "mychips.defaultCredit"
    static let contractKey = "mychips.defaultContract"
    static let currencyKey = "mychips.currency"

    public var notifications: Bool { didSet { preferences.set(notifications ? "on" : "off", forKey: Self.notificationsKey) } }
    /// The device's APNs token, once the platform hands it over.
    public var deviceToken: String?
    /// The credit, in CHIPs, a new tally grants the partner.
    public var defaultCredit: Int64 { didSet { preferences.set(String(defaultCredit), forKey: Self.creditKey) } }
    /// The `rid` of the contract new tallies name (the provider's newest when nil).
    public var defaultContract: String? { didSet { preferences.set(defaultContract, forKey: Self.contractKey) } }
    public var rate: ChipsExchangeRate? {
        didSet { preferences.set(rate.flatMap { try? String(decoding: JSONEncoder().encode($0), as: UTF8.self) }, forKey: Self.currencyKey) }
    }
    /// Where the rate comes from automatically: an HTTPS URL answering
    /// `{"currency": "USD", "per_chip": "2.35"}` (the currency's units per CHIP, as a decimal
    /// string); nil: the rate set by hand.
    public var rateURL: String? { didSet { preferences.set(rateURL, forKey: Self.rateURLKey) } }
    static let rateURLKey = "mychips.rateURL"
    public private(set) var contracts: [JSONValue] = []
    let preferences: any Preferences
    let session: ChipsSession

    /// Fetches the rate from ``rateURL`` and keeps it as ``rate``.
    public func refreshRate() async throws {
        guard let text = rateURL, let url = URL(string: text) else { return }
        let response = try await session.connection.fetch(url)
        guard response.status == 200, let body = try? StrictJSON.parse(Array(response.body)),
              let currency = body["currency"]?.stringValue, currency.range(of: "^[A-Z]{3}$", options: .regularExpression) != nil,
              let perChip = body["per_chip"]?.stringValue else {
            throw ChipsError.invalidResponse("the rate at \(text) is not {currency, per_chip}")
        }
        let decimals = Int(body["decimals"]?.int64Value ?? 2)
        guard (0...4).contains(decimals), let minor = try? DecimalAmount.parse(perChip, decimals: decimals), minor > 0 else {
            throw ChipsError.invalidResponse("the rate at \(text) is not a positive amount")
        }
        rate = ChipsExchangeRate(currency: currency, minorUnitsPerCHIP: minor, currencyDecimals: decimals)
    }

    public init(session: ChipsSession, preferences: any Preferences) {
        self.session = session
        self.preferences = preferences
        notifications = preferences.string(forKey: Self.notificationsKey) != "off"
        defaultCredit = preferences.string(forKey: Self.creditKey).flatMap { Int64($0) } ?? 0
        defaultContract = preferences.string(forKey: Self.contractKey)
        rate = preferences.string(forKey: Self.currencyKey).flatMap { try? JSONDecoder().decode(ChipsExchangeRate.self, from: Data($0.utf8)) }
        rateURL = preferences.string(forKey: Self.rateURLKey)
    }

    /// Registers the device for pushes, or retires it, as `notifications` says.
    public func applyNotifications() async throws {
        guard let deviceToken else { return }
        try await session.registerForPushes(deviceToken: deviceToken, enabled: notifications)
    }

    public func loadContracts() async throws {
        contracts = try await session.select(ChipsSession.contractsView)
    }

    /// A new draft with these defaults: the user grants `defaultCredit`, under the chosen contract.
    public func newTally(type: TallySide = .stock) async throws -> ChipsTally {
        var tally = try await session.createTally(type: type, holdTerms: ["limit": .int(defaultCredit), "call": 30], partTerms: ["limit": 0, "call": 30])
        if let rid = defaultContract, contracts.contains(where: { $0["rid"]?.stringValue == rid }) {
            // A tally names its contract as MyCHIPs does: `{source: rid}`.
            tally = try ChipsTally(row: try await session.update(ChipsSession.talliesView, fields: ["contract": ["source": .string(rid)]],
                                                                 where: .object(["tally_seq": .int(tally.seq)])))
        }
        return tally
    }
}

/// Account: the provider this install uses, and the signing key's export (a passphrase-sealed
/// `signkey` link and QR) and import.
@MainActor
@Observable
public final class AccountViewModel {
    public private(set) var account: ChipsKeychain.Account?
    public private(set) var exported: SigningKeyBackup?
    public private(set) var error: String?
    let keychain: ChipsKeychain
    let session: ChipsSession
    let gate: any BiometricGate

    public init(keychain: ChipsKeychain, session: ChipsSession, gate: any BiometricGate) {
        self.keychain = keychain
        self.session = session
        self.gate = gate
    }

    public func load() async {
        account = try? await keychain.account()
    }

    /// The biometric prompt's text in the user's language; `fallback` when the language data
    /// cannot be reached.
    private func prompt(_ code: String, or fallback: String) async -> String {
        guard let words = try? await session.words(), words.app?.messages[code] != nil else { return fallback }
        return words.message(code).title
    }

    public func export(passphrase: String) async {
        do {
            let key = try await session.signingKey(in: keychain, unlockingWith: gate, reason: await prompt("keyexport", or: "Export your signing key"))
            exported = try SigningKeyBackup.seal(key, passphrase: passphrase)
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    /// The connection key and provider, sealed with `passphrase` behind the biometric gate, as
    /// a link and QR for another device.
    public private(set) var exportedConnection: ConnectionKeyBackup?

    public func exportConnection(passphrase: String) async {
        do {
            exportedConnection = try await keychain.exportConnection(passphrase: passphrase, unlockingWith: gate,
                                                                     reason: await prompt("connexport", or: "Export your connection key"))
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    /// Opens a connection key backup and stores it: this device logs in as the other one.
    public func importConnection(_ backup: ConnectionKeyBackup, passphrase: String) async {
        do {
            account = try await keychain.importConnection(backup, passphrase: passphrase)
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    /// Opens a backup, stores its key and publishes it in the user's certificate.
    public func importKey(_ backup: SigningKeyBackup, passphrase: String) async {
        do {
            let key = try backup.open(passphrase: passphrase)
            try await keychain.save(key)
            try await session.publish(signingKey: key)
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }
}

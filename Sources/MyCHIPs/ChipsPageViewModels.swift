import Foundation
import Observation
import PurseFormats

/// The wallet's pages, as the MyCHIPs mobile design lists them: each has its help text in the
/// language data (`mychips.chark` messages) and, where it shows a view's fields, their labels.
public enum ChipsPage: String, CaseIterable, Sendable {
    case home, scan, tallyEdit, chits, pay, request, account, settings, profile, history

    /// The app message that explains the page.
    public var helpCode: String {
        switch self {
        case .home: "hlphome"
        case .scan: "hlpscan"
        case .tallyEdit: "hlptally"
        case .chits: "hlpchits"
        case .pay: "hlppay"
        case .request: "hlprequest"
        case .account: "hlpaccount"
        case .settings: "hlpsettings"
        case .profile: "hlpprofile"
        case .history: "hlphistory"
        }
    }

    /// The view whose fields the page shows, for their help.
    public var view: String? {
        switch self {
        case .tallyEdit: ChipsSession.talliesView
        case .chits, .pay, .request, .history: ChipsSession.chitsView
        case .profile: ChipsSession.usersView
        default: nil
        }
    }
}

/// Help: one button in the same place on every page, answering for the page (and the field)
/// the user is on, from the language data, without leaving the page.
@MainActor
@Observable
public final class HelpViewModel {
    public struct Field: Equatable, Sendable {
        public var name: String
        public var title: String
        public var help: String
    }

    public private(set) var page: ChipsPage?
    public private(set) var title = ""
    public private(set) var text = ""
    /// The page's fields with their help; the one asked about first.
    public private(set) var fields: [Field] = []
    public private(set) var error: String?
    public var isShown: Bool { page != nil }
    let session: ChipsSession

    public init(session: ChipsSession) { self.session = session }

    /// Shows the help of `page`, `field` (a column of its view) first among its fields.
    public func show(_ page: ChipsPage, field: String? = nil) async {
        do {
            let words = try await session.words()
            let topic = words.message(page.helpCode)
            var fields: [Field] = []
            if let view = page.view {
                let texts = try await session.texts(view)
                fields = texts.columns.map { Field(name: $0.key, title: $0.value.title, help: $0.value.help) }
                    .sorted { ($0.name == field ? 0 : 1, $0.title) < ($1.name == field ? 0 : 1, $1.title) }
            }
            self.page = page
            title = topic.title
            text = topic.help
            self.fields = fields
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    public func dismiss() {
        page = nil
        fields = []
    }
}

/// The Pay and Request buttons of Home: how to pay (or ask to be paid) — choose a partner from
/// the balance sheet, or scan their code; CHIP addresses are never typed — with the partners
/// the user can choose.
@MainActor
@Observable
public final class InstructionsViewModel {
    public enum Kind: Sendable { case pay, request }

    public let kind: Kind
    public private(set) var title = ""
    public private(set) var text = ""
    /// Open tallies, by partner name.
    public private(set) var partners: [ChipsTally] = []
    public private(set) var error: String?
    let session: ChipsSession

    public init(session: ChipsSession, kind: Kind) {
        self.session = session
        self.kind = kind
    }

    public func load() async {
        do {
            let text = try await session.words().message(kind == .pay ? "payinst" : "reqinst")
            title = text.title
            self.text = text.help
            partners = try await session.tallies().filter { $0.status == .open }.sorted { ($0.partnerName ?? "") < ($1.partnerName ?? "") }
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    /// The Pay page for a chosen partner.
    public func pay(_ tally: ChipsTally, signer: @escaping ChipsSigner) -> PayViewModel {
        PayViewModel(session: session, tally: tally, signer: signer)
    }

    /// The Request page for a chosen partner (``RequestViewModel/send(on:)`` with its number).
    public func request(_ tally: ChipsTally) -> RequestViewModel {
        RequestViewModel(session: session, tally: tally)
    }
}

/// QR Scan: what a scanned code (or an opened link) leads to, ready to act on. A payment code or
/// invoice opens Pay on the open tally with its owner — filled in, or, without an amount, with
/// the choice to ask them for an invoice; a tally ticket opens its review before joining; a
/// signed chit goes to the outbox.
@MainActor
@Observable
public final class ScanViewModel {
    public enum Outcome {
        case connect(ChipsTicket)
        case review(TallyReviewViewModel)
        case pay(PayViewModel)
        /// A payment code of someone the user has no open tally with.
        case noTally(PaymentRequest, message: String)
        case queued(SignedChit)
        case importKey(SigningKeyBackup)
        case invalid(String)
    }

    public private(set) var outcome: Outcome?
    public private(set) var instructions = ""
    let session: ChipsSession
    let signer: ChipsSigner
    let outbox: ChipsOutbox?

    public init(session: ChipsSession, signer: @escaping ChipsSigner, outbox: ChipsOutbox? = nil) {
        self.session = session
        self.signer = signer
        self.outbox = outbox
    }

    /// The scanner's instructions, in the user's language.
    public func load() async {
        instructions = (try? await session.words().message("hlpscan").help) ?? ""
    }

    public func scanned(_ text: String) async {
        switch ChipsRouter.route(text) {
        case .connect(let ticket): outcome = .connect(ticket)
        case .tallyInvite(let invite):
            let review = TallyReviewViewModel(session: session, invite: invite)
            await review.load()
            outcome = .review(review)
        case .pay(let request): outcome = await payment(request)
        case .chit(let chit):
            await outbox?.enqueue(chit)
            outcome = .queued(chit)
        case .importKey(let backup): outcome = .importKey(backup)
        case .invalid(let reason):
            let words = try? await session.words()
            outcome = .invalid(words.map { $0.line(ChipsError.invalidLink(reason)) } ?? reason)
        default: outcome = .invalid(text)
        }
    }

    private func payment(_ request: PaymentRequest) async -> Outcome {
        do {
            guard let tally = try await session.openTally(with: request.chad) else {
                let words = try await session.words()
                return .noTally(request, message: words.line(ChipsError(.invalidLink, "no open tally with \(request.chad.text)", code: "notally")))
            }
            return .pay(PayViewModel(session: session, tally: tally, signer: signer, invoice: request))
        } catch {
            return .invalid(await session.describe(error))
        }
    }
}

/// A tally ticket, reviewed before joining: who invites, the terms from the user's side, the
/// comment and contract; then join (or not). After joining, the inviter signs and offers, and
/// Tally Edit shows the offer to accept, counter or reject.
@MainActor
@Observable
public final class TallyReviewViewModel {
    public let invite: TallyInvite
    public private(set) var preview: TallyPreview?
    /// True when the provider shows no terms before joining (they come with its offer).
    public private(set) var termsFollowOffer = false
    public private(set) var joined = false
    public private(set) var error: String?
    let session: ChipsSession

    public init(session: ChipsSession, invite: TallyInvite) {
        self.session = session
        self.invite = invite
    }

    public func load() async {
        do {
            preview = try await session.preview(invite)
            termsFollowOffer = preview == nil
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }

    public var isExpired: Bool { (preview?.expires ?? invite.expires).map { $0 < Date() } ?? false }

    public func join() async {
        do {
            try await session.accept(invite)
            joined = true
            error = nil
        } catch {
            self.error = await session.describe(error)
        }
    }
}

/// What the share sheet offers for a link (an invitation, an invoice, a signed chit): the text
/// and link for messages, an e-mail, and a printable page with its QR code.
public struct ChipsShare: Sendable, Equatable {
    public var title: String
    public var link: String

    public init(title: String, link: String) {
        self.title = title
        self.link = link
    }

    /// For a messaging app: the title and the link.
    public var text: String { "\(title)\n\(link)" }

    /// A `mailto:` URL with the title as subject and the link as body.
    public func mail(to address: String = "") -> URL? {
        var components = URLComponents()
        components.scheme = "mailto"
        components.path = address
        components.queryItems = [URLQueryItem(name: "subject", value: title), URLQueryItem(name: "body", value: text)]
        return components.url
    }

    /// A printable HTML page: the title, the QR code and the link.
    public func printable() throws -> String {
        let code = try QRCode.encode(text: link, errorCorrection: .medium).svg()
        return """
            <!doctype html><html><head><meta charset="utf-8"><title>\(HTML.escape(title))</title>
            <style>body{font-family:sans-serif;text-align:center;margin:2em}svg{width:60%;max-width:320px;height:auto}p{word-break:break-all}</style>
            </head><body><h1>\(HTML.escape(title))</h1>\(code)<p>\(HTML.escape(link))</p></body></html>
            """
    }
}

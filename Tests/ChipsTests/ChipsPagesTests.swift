import ChipsProtocol
import Foundation
import HTTPTypes
import MyCHIPs
import PurseDatabase
import PurseFormats
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import PurseTestSupport
import Testing

/// The seed's pages as view models over a live provider: Help, the Pay and Request
/// instructions, scan → pay / no tally / review before joining, asking for an invoice, Tally
/// Edit with pay, request, call, contract, the invitation's QR and the printable agreement,
/// Home's pending lists and totals, and the share sheet.
@MainActor
@Suite("MyCHIPs wallet pages: help, instructions, scanning, invoices, review, tally edit, home")
struct ChipsPagesTests {
    @Test("help answers for the page and the field the user is on, in their language; the instructions list the partners")
    func helpAndInstructions() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            _ = try await pair.openTally(limit: 20)
            let help = HelpViewModel(session: pair.bob)
            await help.show(.tallyEdit, field: "comment")
            #expect(help.isShown && help.title == "A Tally" && help.text.contains("credit agreement"))
            #expect(help.fields.first?.name == "comment" && help.fields.count > 3)
            _ = try await pair.bob.setLanguage("spa")
            await help.show(.pay)
            #expect(help.title == "Pagar", "\(help.title)")
            help.dismiss()
            #expect(!help.isShown)

            let instructions = InstructionsViewModel(session: pair.bob, kind: .pay)
            await instructions.load()
            #expect(instructions.title == "Cómo pagar" && instructions.text.contains("nunca se escriben"))
            #expect(instructions.partners.count == 1)
            let request = InstructionsViewModel(session: pair.alice, kind: .request)
            await request.load()
            #expect(request.title == "How to Request" && request.request(request.partners[0]).tally?.seq == request.partners[0].seq)
            await pair.done()
        }
    }

    @Test("a scanned invoice opens Pay on the tally with its owner, filled in; a stranger's code says there is no tally; junk is not a MyCHIPs code")
    func scanToPay() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            let (_, bobTally) = try await pair.openTally(limit: 50)
            let invoice = RequestViewModel(session: pair.alice)
            invoice.amount = "4.2"
            invoice.memo = "Tomatoes"
            let link = try await invoice.invoice().link
            let bobKey = pair.bobKey
            let scan = ScanViewModel(session: pair.bob, signer: { bobKey })
            await scan.load()
            #expect(scan.instructions.contains("MyCHIPs code"))
            await scan.scanned(link)
            guard case .pay(let pay)? = scan.outcome else { Issue.record("an invoice opens Pay: \(String(describing: scan.outcome))"); return }
            #expect(pay.tally.seq == bobTally.seq && pay.amount == "4.2" && pay.memo == "Tomatoes")
            await pay.send()
            #expect(pay.sent?.units == 4_200 && pay.error == nil)

            await scan.scanned("https://mychips.org/pay?chad=\(URIComponent.encode(#"{"cuid":"zed","agent":"elsewhere"}"#))")
            if case .noTally(_, let message)? = scan.outcome { #expect(message.hasPrefix("No Open Tally")) } else { Issue.record("a stranger's code: \(String(describing: scan.outcome))") }
            await scan.scanned("hello")
            if case .invalid(let message)? = scan.outcome { #expect(message.hasPrefix("Not a MyCHIPs Code")) } else { Issue.record("junk") }
            await pair.done()
        }
    }

    @Test("a payer at a vendor's code without an amount asks for an invoice: the vendor is told, and answers with a request", arguments: TestEngines.all)
    func invoiceRequest(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let pair = try await WalletPair.make(provider)
            let (aliceTally, bobTally) = try await pair.openTally(limit: 50)
            var notices = await pair.alice.connection.notifications().makeAsyncIterator()
            try await pair.bob.requestInvoice(bobTally.seq, memo: "Table 4")
            var route: ChipsRoute?
            while route == nil, let notice = await notices.next() {
                if notice.data["reason"] == "invoice" { route = ChipsRouter.route(notice) }
            }
            #expect(route == .invoiceRequested(seq: aliceTally.seq, memo: "Table 4", units: nil))
            let page = RequestViewModel(session: pair.alice, tally: aliceTally, memo: "Table 4")
            page.amount = "7"
            await page.send()
            #expect(page.sent?.state == "A.pend" && page.sent?.memo == "Table 4")
            let draft = try await pair.bob.createTally(type: .foil, holdTerms: ["limit": 1], partTerms: ["limit": 1])
            do {
                try await pair.bob.requestInvoice(draft.seq)
                Issue.record("an invoice asked for on a draft")
            } catch let error as ChipsError {
                #expect(error.code == "!mychips.tallies:NOP", "only on an open tally: \(error)")
            }
            await pair.done()
        }
    }

    @Test("a tally ticket is reviewed before joining: the inviter and the terms from the joiner's side; then join")
    func reviewBeforeJoining() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            let draft = try await pair.alice.createTally(type: .stock, holdTerms: ["limit": 40, "call": 30], partTerms: ["limit": 15, "call": 30], comment: "Bread")
            let invite = try await pair.alice.invite(draft.seq)
            let bobKey = pair.bobKey
            let scan = ScanViewModel(session: pair.bob, signer: { bobKey })
            await scan.scanned(invite.link)
            guard case .review(let review)? = scan.outcome else { Issue.record("an invitation opens its review"); return }
            let preview = try #require(review.preview)
            #expect(preview.inviter == "Anders" && preview.side == .foil && preview.comment == "Bread")
            #expect(preview.lend == 15 && preview.borrow == 40 && preview.call == 30, "the joiner grants 15 and is granted 40")
            #expect(!review.isExpired && !review.termsFollowOffer)
            #expect(try await pair.alice.tally(draft.seq).partner == nil, "reviewing did not join")
            await review.join()
            #expect(review.joined && review.error == nil)
            #expect(try await pair.alice.tally(draft.seq).partner?.cuid != nil)
            let again = TallyReviewViewModel(session: pair.bob, invite: invite)
            await again.load()
            #expect(again.error?.isEmpty == false, "a spent ticket previews no more")
            await pair.done()
        }
    }

    @Test("Tally Edit: call and contract on a draft, the invitation's QR, pay and request on an open tally, the agreement as a page")
    func tallyEdit() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            let (aliceKey, bobKey) = (pair.aliceKey, pair.bobKey)
            let draft = try await pair.alice.createTally(type: .stock, holdTerms: ["limit": 40, "call": 30], partTerms: ["limit": 15, "call": 30])
            let edit = TallyEditViewModel(session: pair.alice, seq: draft.seq, signer: { aliceKey })
            await edit.load()
            #expect(edit.call == "30" && !edit.contracts.isEmpty)
            edit.call = "45"
            edit.contractID = try #require(edit.contracts.first?["rid"]?.stringValue)
            await edit.perform(.invite)
            #expect(edit.inviteQR != nil && edit.inviteShare?.link.hasPrefix("https://mychips.org/invite?") == true)
            try await pair.bob.accept(try #require(edit.invite))
            await edit.load()
            edit.call = "45"
            edit.contractID = try #require(edit.contracts.first?["rid"]?.stringValue)
            await edit.perform(.offer)
            #expect(edit.error == nil, "\(edit.error ?? "")")
            let offered = try await pair.alice.tally(draft.seq)
            #expect(offered.holdTerms["call"] == 45 && offered.partTerms["call"] == 45 && offered.contract["source"]?.stringValue == edit.contractID)
            #expect(edit.pay() == nil, "no payments before the tally opens")
            let bobSeq = try #require(try await pair.bob.tallies().first { $0.uuid == draft.uuid }?.seq)
            _ = try await pair.bob.acceptOffer(bobSeq, signingKey: bobKey)
            await edit.load()
            #expect(edit.canTrade)
            let pay = try #require(edit.pay())
            pay.amount = "1"
            await pay.send()
            #expect(pay.sent?.state == "L.good")
            let request = try #require(edit.request())
            request.amount = "2"
            await request.send()
            #expect(request.sent?.state == "A.pend")
            let page = try #require(await edit.agreementPage())
            #expect(page.hasPrefix("<!doctype html>") && page.contains("<h2>") && page.contains("Anders") && page.contains("Baker"), "\(edit.error ?? "")")
            await pair.done()
        }
    }

    @Test("Home lists the user's drafts and offers, shows closed tallies on request, and totals assets and liabilities")
    func home() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            let (_, bobTally) = try await pair.openTally(limit: 50)
            _ = try await pair.bob.pay(bobTally.seq, units: 3_000, signingKey: pair.bobKey)
            _ = try await pair.alice.createTally(type: .stock, holdTerms: ["limit": 5], partTerms: ["limit": 5])
            let home = HomeViewModel(session: pair.alice)
            await home.load()
            #expect(home.drafts.count == 1 && home.offered.isEmpty && home.rows.count == 1)
            #expect(home.totals == ("3 CHIP", "0 CHIP", "3 CHIP"))
            let svg = home.chart.svg()
            #expect(svg.contains("Assets 3") && svg.contains("Liabilities 0"))
            home.rate = ChipsExchangeRate(currency: "USD", minorUnitsPerCHIP: 235)
            #expect(home.totals.net == "3 CHIP ≈ 7.05 USD")
            let pay = PayViewModel(session: pair.bob, tally: bobTally, signer: { pair.bobKey })
            pay.rate = home.rate
            pay.amount = "2"
            #expect(pay.localAmount == "≈ 4.70 USD")
            await pair.done()
        }
    }

    /// Rates as a rate service answers them (`{currency, per_chip}`), over HTTPS only.
    struct RateService: HTTPTransport {
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            switch request.url.path {
            case "/rate": TransportResponse(status: 200, body: Data(#"{"currency": "USD", "per_chip": "2.35"}"#.utf8))
            case "/yen": TransportResponse(status: 200, body: Data(#"{"currency": "JPY", "per_chip": "350", "decimals": 0}"#.utf8))
            case "/negative": TransportResponse(status: 200, body: Data(#"{"currency": "USD", "per_chip": "-1"}"#.utf8))
            default: TransportResponse(status: 200, body: Data("{}".utf8))
            }
        }
    }

    @Test("Settings takes the local currency's rate from a URL, refusing answers that are not a positive rate, and plain HTTP elsewhere")
    func rateFromURL() async throws {
        let keychain = ChipsKeychain(store: InMemorySecureStore())
        try await keychain.save(ConnectionKey())
        try await keychain.save(ChipsKeychain.Account(host: "127.0.0.1", port: 1025, user: "ann", secure: false))
        let connection = ChipsConnection(keychain: keychain, transport: ScriptedProvider(), http: RateService())
        let settings = WalletSettingsViewModel(session: ChipsSession(connection: connection, preferences: InMemoryPreferences()), preferences: InMemoryPreferences())
        settings.rateURL = "https://rates.example/rate"
        try await settings.refreshRate()
        #expect(settings.rate == ChipsExchangeRate(currency: "USD", minorUnitsPerCHIP: 235))
        settings.rateURL = "https://rates.example/yen"
        try await settings.refreshRate()
        #expect(settings.rate == ChipsExchangeRate(currency: "JPY", minorUnitsPerCHIP: 350, currencyDecimals: 0))
        for bad in ["https://rates.example/negative", "https://rates.example/empty", "http://rates.example/rate"] {
            settings.rateURL = bad
            await #expect(throws: ChipsError.self, "\(bad)") { try await settings.refreshRate() }
        }
        #expect(settings.rate?.currency == "JPY", "a refused answer keeps the last rate")
    }

    @Test("the share sheet: text, e-mail and a printable page with the QR code")
    func share() throws {
        let share = ChipsShare(title: "Invoice <4>", link: "https://mychips.org/pay?chad=x")
        #expect(share.text == "Invoice <4>\nhttps://mychips.org/pay?chad=x")
        let mail = try #require(share.mail(to: "ann@example.com")?.absoluteString)
        #expect(mail.hasPrefix("mailto:ann@example.com?subject=Invoice%20%3C4%3E&body="))
        let page = try share.printable()
        #expect(page.contains("<svg") && page.contains("Invoice &lt;4&gt;") && !page.contains("<4>"))
    }
}

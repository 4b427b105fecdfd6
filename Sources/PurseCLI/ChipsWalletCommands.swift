import ArgumentParser
import Foundation
import HTTPTypes
import PurseHTTP
import MyCHIPs
import PurseFormats
import PurseKit

/// `purse chips tally|pay|request|answer|chits|balance|history`: the wallet as two people in two
/// terminals use it — open a tally and pay each other. Each logs in with the profile's stored
/// connection key. Commands that sign use the profile's signing key, made and published with the
/// user's first tally; a profile that does not hold the key the certificate publishes is told
/// to import its backup, and never replaces it unasked (`purse chips key replace`).
extension ChipsCommand {
    /// Runs `work` logged in, with the signing key the user's certificate publishes.
    static func withWallet<T: Sendable>(_ options: ProfileOptions, _ work: @Sendable (ChipsSession, SigningKey) async throws -> T) async throws -> T {
        let keychain = ChipsKeychain(store: EncryptedFileSecureStore(directory: try options.directory))
        return try await withSession(options) { session in
            let key: SigningKey
            do {
                key = try await session.signingKey(in: keychain, unlockingWith: SoftwareBiometricGate(available: false) { _ in .unavailable },
                                                   reason: "sign MyCHIPs tallies and chits")
            } catch let error as ChipsError where error == .signingKeyElsewhere || error == .signingKeyDiffers {
                throw CLIError(Self.keyAdvice(error, profile: options.profile))
            }
            return try await work(session, key)
        }
    }

    /// Runs `work` logged in, for commands that sign nothing. A failure once logged in reads as
    /// the wallet words it, from the provider's language data in the profile's language.
    static func withSession<T: Sendable>(_ options: ProfileOptions, _ work: @Sendable (ChipsSession) async throws -> T) async throws -> T {
        let session = try await options.session()
        return try await run {
            try await session.connection.connect()
            do {
                let result = try await work(session)
                await session.connection.disconnect()
                return result
            } catch let error as ChipsError {
                let words = await session.describe(error)
                await session.connection.disconnect()
                throw CLIError(error.code.map { "\(words) (\($0))" } ?? words)
            } catch {
                await session.connection.disconnect()
                throw error
            }
        }
    }

    static func keyAdvice(_ error: ChipsError, profile: String) -> String {
        let flag = profile == "default" ? "" : " --profile \(profile)"
        let head = error == .signingKeyElsewhere
            ? "your certificate publishes a signing key this profile does not hold: it was made on another device."
            : "this profile's signing key is not the one your certificate publishes."
        return head + """

             Bring that key here: on the other device run `purse chips key export`, then here `purse chips key import\(flag) LINK`.
             Or replace it (partners check your new chits against the new key): `purse chips key replace\(flag)`.
            """
    }

    /// A tally named by its number, its partner's CHIP user id, or the partner's name or a part
    /// of it ("Smith" for "Smith, Adam"); when several match, the user is asked to choose by number.
    static func tally(_ name: String, in session: ChipsSession, open: Bool = true) async throws -> ChipsTally {
        let tallies = try await session.tallies().filter { !open || $0.status == .open }
        let matches = ChipsPartnerMatch.tallies(name, in: tallies)
        guard matches.count == 1 else {
            guard !matches.isEmpty else { throw CLIError("no \(open ? "open " : "")tally with \(name)") }
            let choices = matches.map { "  \($0.seq)  \($0.partnerName ?? $0.partner?.text ?? "?")" }.joined(separator: "\n")
            throw CLIError("several \(open ? "open " : "")tallies match \(name); name one by its number:\n\(choices)")
        }
        return matches[0]
    }

    static func units(_ text: String) throws -> Int64 {
        do { return try ChipsUnits.parse(text) } catch { throw CLIError("\(error)") }
    }

    static func printTally(_ tally: ChipsTally, json: Bool) {
        if json {
            print(JavaScriptJSON.stringify(.object([
                "tally_seq": .int(tally.seq), "tally_uuid": .string(tally.uuid.rawValue), "tally_type": .string(tally.type.rawValue), "state": .string(tally.state.rawValue),
                "partner": tally.partner.map { .string($0.text) } ?? .null, "part_name": tally.partnerName.map(JSONValue.string) ?? .null,
                "net": .int(tally.net), "chits": .int(tally.chits), "hold_terms": tally.holdTerms, "part_terms": tally.partTerms,
            ])))
            return
        }
        let partner = tally.partnerName ?? tally.partner?.text ?? "(no partner yet)"
        print("tally \(tally.seq)  \(tally.state.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0))  \(tally.type.rawValue)  \(partner)  balance \(ChipsUnits.format(tally.net)) CHIP  chits \(tally.chits)")
    }

    static func printChit(_ chit: ChipsChit, json: Bool) {
        if json {
            print(JavaScriptJSON.stringify(.object([
                "chit_seq": .int(chit.seq), "chit_idx": .int(chit.index), "chit_uuid": .string(chit.uuid.rawValue), "chit_type": .string(chit.core.type.rawValue),
                "chit_date": .string(JavaScriptDate.string(epochMillis: chit.core.date)), "units": chit.core.units.map(JSONValue.int) ?? .null,
                "net": .int(chit.net), "state": .string(chit.state.rawValue), "memo": chit.memo.map(JSONValue.string) ?? .null,
                "chain_idx": chit.chainIndex.map(JSONValue.int) ?? .null, "chain_dgst": chit.chainHash.map(JSONValue.string) ?? .null,
            ])))
            return
        }
        let amount = chit.core.type == .set ? "settings \(JavaScriptJSON.stringify(chit.core.reference ?? .null))" : "\(ChipsUnits.format(chit.net)) CHIP"
        print("\(JavaScriptDate.string(epochMillis: chit.core.date))  tally \(chit.seq)#\(chit.index)  \(chit.state.rawValue.padding(toLength: 7, withPad: " ", startingAt: 0))  \(amount)  \(chit.memo ?? "")  \(chit.uuid)")
    }

    struct Tally: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Tallies: draft one, invite a partner, accept an invitation, offer, accept an offer, close, list.",
                                                        subcommands: [New.self, Invite.self, Accept.self, Offer.self, Open.self, Reject.self, Close.self, List.self,
                                                                      Agreement.self])

        struct New: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Draft a tally.")
            @OptionGroup var options: ProfileOptions
            @Option(help: "Your end: stock (you are normally owed value) or foil (you normally owe it).") var type: String = "stock"
            @Option(help: "The most you let the partner owe you, in CHIPs.") var lend: Int64 = 0
            @Option(help: "The most you ask the partner to let you owe, in CHIPs.") var borrow: Int64 = 0
            @Option(help: "Days of notice before calling a balance due.") var call: Int64 = 30
            @Option(help: "A comment both partners sign.") var comment: String?

            func run() async throws {
                guard let side = TallySide(rawValue: type) else { throw ValidationError("--type is stock or foil") }
                let tally = try await ChipsCommand.withWallet(options) { session, _ in
                    try await session.createTally(type: side, holdTerms: ["limit": .int(lend), "call": .int(call)],
                                                  partTerms: ["limit": .int(borrow), "call": .int(call)], comment: comment)
                }
                ChipsCommand.printTally(tally, json: options.json)
            }
        }

        struct Invite: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Make a tally ticket for a draft: a link and a QR code for the partner.")
            @OptionGroup var options: ProfileOptions
            @Argument(help: "The draft's number.") var id: Int64

            func run() async throws {
                let invite = try await ChipsCommand.withSession(options) { session in try await session.invite(id) }
                if options.json {
                    print(JavaScriptJSON.stringify(.object(["token": .string(invite.token), "chad": invite.chad.json, "link": .string(invite.link)])))
                    return
                }
                print(invite.link)
                if let code = try? QRCode.encode(text: invite.link, errorCorrection: .low) { print(code.terminal()) }
            }
        }

        struct Accept: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Present a partner's tally ticket (its link): their draft gets your certificate and they offer it to you.")
            @OptionGroup var options: ProfileOptions
            @Argument(help: "The https://mychips.org/invite?… link.") var link: String

            func run() async throws {
                let parsed = try await ChipsCommand.run { try ChipsLink.parse(link) }
                guard case .invite(let invite) = parsed else { throw CLIError("this is a \(parsed.kind) link, not a tally invitation") }
                try await ChipsCommand.withWallet(options) { session, _ in try await session.accept(invite) }
                print(options.json ? JavaScriptJSON.stringify(.object(["ticket_process": true])) : "joined the tally of \(invite.chad.text); their offer follows")
            }
        }

        struct Offer: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Sign a tally and offer it to the partner; with terms, a counter-offer.")
            @OptionGroup var options: ProfileOptions
            @Argument(help: "The tally's number.") var id: Int64
            @Option(help: "Change the most you let the partner owe you (CHIPs).") var lend: Int64?
            @Option(help: "Change the most the partner lets you owe (CHIPs).") var borrow: Int64?
            @Option(help: "Change the comment.") var comment: String?

            func run() async throws {
                let (lend, borrow, comment) = (lend, borrow, comment)
                let tally = try await ChipsCommand.withWallet(options) { session, key in
                    let current = try await session.tally(id)
                    var changes: [String: JSONValue] = [:]
                    if let lend, case .object(var terms) = current.holdTerms { terms["limit"] = .int(lend); changes["hold_terms"] = .object(terms) }
                    if let borrow, case .object(var terms) = current.partTerms { terms["limit"] = .int(borrow); changes["part_terms"] = .object(terms) }
                    if let comment { changes["comment"] = .string(comment) }
                    return try await session.offer(id, changes: changes, signingKey: key)
                }
                ChipsCommand.printTally(tally, json: options.json)
            }
        }

        struct Open: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Accept the partner's offer as it stands: sign it, and the tally opens.")
            @OptionGroup var options: ProfileOptions
            @Argument(help: "The tally's number.") var id: Int64

            func run() async throws {
                let tally = try await ChipsCommand.withWallet(options) { session, key in try await session.acceptOffer(id, signingKey: key) }
                ChipsCommand.printTally(tally, json: options.json)
            }
        }

        struct Reject: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Reject an offer, or withdraw your draft or offer.")
            @OptionGroup var options: ProfileOptions
            @Argument(help: "The tally's number.") var id: Int64

            func run() async throws {
                let tally = try await ChipsCommand.withSession(options) { session in try await session.reject(id) }
                ChipsCommand.printTally(tally, json: options.json)
            }
        }

        struct Close: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Ask to close an open tally: it closes when its balance is zero.")
            @OptionGroup var options: ProfileOptions
            @Argument(help: "The tally's number.") var id: Int64

            func run() async throws {
                let tally = try await ChipsCommand.withWallet(options) { session, key in
                    _ = try await session.close(id, signingKey: key)
                    return try await session.tally(id)
                }
                ChipsCommand.printTally(tally, json: options.json)
            }
        }

        struct Agreement: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "The tally agreement as the provider renders it: a web page (or --pdf), its link or --out FILE.")
            @OptionGroup var options: ProfileOptions
            @Argument(help: "The tally's number.") var id: Int64
            @Flag(help: "The PDF rather than the web page.") var pdf = false
            @Option(help: "Write the page (or PDF) to this file instead of printing its link.") var out: String?

            func run() async throws {
                let (asPDF, file) = (pdf, out)
                let link = try await ChipsCommand.withSession(options) { session -> URL in
                    let link = try await session.agreementLink(id, page: !asPDF)
                    if let file {
                        let response = try await session.connection.fetch(link)
                        guard response.status == 200 else { throw CLIError("the provider answered \(response.status) for the agreement") }
                        try response.body.write(to: URL(fileURLWithPath: file))
                    }
                    return link
                }
                print(file.map { "wrote \($0)" } ?? link.absoluteString)
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List your tallies.")
            @OptionGroup var options: ProfileOptions

            func run() async throws {
                let tallies = try await ChipsCommand.withSession(options) { session in try await session.tallies() }
                if options.json {
                    print("[" + tallies.map { tally -> String in
                        JavaScriptJSON.stringify(.object(["tally_seq": .int(tally.seq), "tally_uuid": .string(tally.uuid.rawValue), "state": .string(tally.state.rawValue),
                                                          "tally_type": .string(tally.type.rawValue), "net": .int(tally.net),
                                                          "partner": tally.partner.map { .string($0.text) } ?? .null]))
                    }.joined(separator: ",") + "]")
                    return
                }
                if tallies.isEmpty { print("no tallies") }
                for tally in tallies { ChipsCommand.printTally(tally, json: false) }
            }
        }
    }

    struct Pay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Pay a partner on your open tally: purse chips pay PARTNER 12.5 --memo …")
        @OptionGroup var options: ProfileOptions
        @Argument(help: "The tally's number, the partner's CHIP user id, or their name.") var partner: String
        @Argument(help: "CHIPs, up to three decimals.") var amount: String
        @Option(help: "A note for the partner.") var memo: String?
        @Option(help: "An invoice or order reference.") var ref: String?
        @Flag(help: "Sign it but do not send it: print the chit as a link and QR code for the partner's app to deliver.") var link = false

        func run() async throws {
            let units = try ChipsCommand.units(amount)
            let (partner, memo, ref, asLink) = (partner, memo, ref, link)
            if asLink {
                let signed = try await ChipsCommand.withWallet(options) { session, key in
                    let tally = try await ChipsCommand.tally(partner, in: session)
                    return try await session.signChit(tally.seq, units: units, memo: memo, reference: ref.map(JSONValue.string), signingKey: key)
                }
                print(signed.link)
                if !options.json, let code = try? QRCode.encode(text: signed.link, errorCorrection: .low) { print(code.terminal()) }
                return
            }
            let outbox = ChipsOutbox(preferences: FilePreferences(file: try options.directory.appendingPathComponent("preferences.json")))
            let chit = try await ChipsCommand.withWallet(options) { session, key in
                let tally = try await ChipsCommand.tally(partner, in: session)
                let reference = ref.map(JSONValue.string)
                // The same payment whose answer was lost before is sent again as it was signed,
                // never signed anew: the provider stores its id once.
                let signed: SignedChit
                if let earlier = await outbox.pending.first(where: {
                    $0.core.tally == tally.uuid && $0.core.units == units && $0.core.memo == memo && $0.core.reference == reference
                }) {
                    signed = earlier
                } else {
                    signed = try await session.signChit(tally.seq, units: units, memo: memo, reference: reference, signingKey: key)
                }
                await outbox.enqueue(signed)
                do {
                    let stored = try await session.deliverConfirmed(signed, seq: tally.seq)
                    await outbox.remove(signed)
                    return stored
                } catch let error as ChipsError where error.isAnswerLost {
                    throw CLIError("""
                        no answer came from the provider (\(error.message)), so this payment may or may not be stored.
                        It is kept: run the same command again to send the very same payment; the provider stores it once.
                        """)
                } catch {
                    await outbox.remove(signed)
                    throw error
                }
            }
            ChipsCommand.printChit(chit, json: options.json)
        }
    }

    struct Receive: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Deliver a chit a partner signed and passed as a link (purse chips pay --link) to your provider.")
        @OptionGroup var options: ProfileOptions
        @Argument(help: "The https://mychips.org/chit?… link.") var link: String

        func run() async throws {
            let parsed = try await ChipsCommand.run { try ChipsLink.parse(link) }
            guard case .chit(let signed) = parsed else { throw CLIError("this is a \(parsed.kind) link, not a chit") }
            let chit = try await ChipsCommand.withSession(options) { session in try await session.deliver(signed) }
            ChipsCommand.printChit(chit, json: options.json)
        }
    }

    struct Request: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Ask a partner to pay you: purse chips request PARTNER 3 --memo …")
        @OptionGroup var options: ProfileOptions
        @Argument(help: "The tally's number, the partner's CHIP user id, or their name.") var partner: String
        @Argument(help: "CHIPs, up to three decimals.") var amount: String
        @Option(help: "A note for the partner.") var memo: String?
        @Option(help: "An invoice or order reference.") var ref: String?

        func run() async throws {
            let units = try ChipsCommand.units(amount)
            let (partner, memo, ref) = (partner, memo, ref)
            let chit = try await ChipsCommand.withSession(options) { session in
                let tally = try await ChipsCommand.tally(partner, in: session)
                return try await session.request(tally.seq, units: units, memo: memo, reference: ref.map(JSONValue.string))
            }
            ChipsCommand.printChit(chit, json: options.json)
        }
    }

    struct Invoice: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make an invoice (your payment code) for anyone to scan and pay, or --ask a partner for theirs.",
            discussion: """
                purse chips invoice 4.2 --memo Tomatoes      a link and a QR code: pay me 4.2 CHIP
                purse chips invoice                          your payment address: the payer chooses the amount
                purse chips invoice --ask Baker --memo "Table 4"   ask a partner (at their payment code) to invoice you
                """)
        @OptionGroup var options: ProfileOptions
        @Argument(help: "CHIPs, up to three decimals (none: the payer chooses).") var amount: String?
        @Option(help: "A note for the payer.") var memo: String?
        @Option(help: "An invoice or order reference.") var ref: String?
        @Option(help: "Ask this partner (tally number, CHIP user id or name) for an invoice instead.") var ask: String?

        func run() async throws {
            let units = try amount.map(ChipsCommand.units)
            let (memo, ref, ask) = (memo, ref, ask)
            if let ask {
                try await ChipsCommand.withSession(options) { session in
                    let tally = try await ChipsCommand.tally(ask, in: session)
                    try await session.requestInvoice(tally.seq, memo: memo, units: units)
                }
                print(options.json ? #"{"invoice":"asked"}"# : "asked \(ask) for an invoice; their request to pay will follow")
                return
            }
            let request = try await ChipsCommand.withSession(options) { session in
                try await session.paymentRequest(units: units, reference: ref, memo: memo)
            }
            print(request.link)
            if !options.json, let code = try? QRCode.encode(text: request.link, errorCorrection: .medium) { print(code.terminal()) }
        }
    }

    struct Scan: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "What a scanned code or opened link leads to, as the app's scanner does: an invoice is paid (with --pay) on the tally with its owner.")
        @OptionGroup var options: ProfileOptions
        @Argument(help: "The code's text: a mychips.org link or a ticket's JSON.") var code: String
        @Flag(help: "Pay the invoice it names.") var pay = false
        @Option(help: "The amount to pay, when the code names none (CHIPs).") var amount: String?

        func run() async throws {
            let parsed = try await ChipsCommand.run { try ChipsLink.parse(code) }
            guard case .pay(let request) = parsed else {
                print("\(parsed.kind): open it with the command for it (connect, tally accept, receive, key import)")
                return
            }
            let units = try amount.map(ChipsCommand.units) ?? request.units
            let (paying, memo, reference) = (pay, request.memo, request.reference.map(JSONValue.string))
            let outcome = try await ChipsCommand.withWallet(options) { session, key -> ChipsChit? in
                guard let tally = try await session.openTally(with: request.chad) else { throw CLIError("no open tally with \(request.chad.text): ask for their tally invitation, or invite them") }
                guard paying else {
                    print("invoice from \(tally.partnerName ?? request.chad.text) on tally \(tally.seq): \(units.map { ChipsUnits.format($0) + " CHIP" } ?? "amount of your choice")\(memo.map { " — " + $0 } ?? "")")
                    return nil
                }
                guard let units else { throw CLIError("the code names no amount: give --amount, or ask for an invoice (purse chips invoice --ask)") }
                return try await session.pay(tally.seq, units: units, memo: memo, reference: reference, signingKey: key)
            }
            if let outcome { ChipsCommand.printChit(outcome, json: options.json) }
        }
    }

    struct Answer: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Answer a partner's request to pay: --pay signs it, --refuse voids it.")
        @OptionGroup var options: ProfileOptions
        @Argument(help: "The request's chit id (from purse chips history); none: the one request waiting for you.") var chit: String?
        @Flag(help: "Pay it.") var pay = false
        @Flag(help: "Refuse it.") var refuse = false

        func run() async throws {
            guard pay != refuse else { throw ValidationError("give --pay or --refuse") }
            let (uuid, paying) = (chit?.lowercased(), pay)
            let answered = try await ChipsCommand.withWallet(options) { session, key in
                let found: ChipsChit
                if let uuid {
                    guard let chit = try await session.chits().first(where: { $0.uuid.rawValue == uuid }) else { throw CLIError("no chit \(uuid)") }
                    found = chit
                } else {
                    let waiting = try await session.chits().filter(\.needsAction)
                    guard waiting.count == 1 else {
                        throw CLIError(waiting.isEmpty ? "no request is waiting for you" : "\(waiting.count) requests are waiting: name one by its id (purse chips history)")
                    }
                    found = waiting[0]
                }
                return paying ? try await session.acceptRequest(found, signingKey: key) : try await session.refuseRequest(found)
            }
            ChipsCommand.printChit(answered, json: options.json)
        }
    }

    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stay connected and print the provider's notices (tally offers, payments …) as they come.")
        @OptionGroup var options: ProfileOptions
        @Option(help: "Stop after this many notices.") var count: Int = 1
        @Option(help: "Stop after this many seconds.") var seconds: Int = 60

        func run() async throws {
            let (count, seconds, json) = (count, seconds, options.json)
            let seen = try await ChipsCommand.withSession(options) { session -> Int in
                let notices = await session.connection.notifications()
                print(json ? #"{"state":"connected"}"# : "connected; waiting for notices")
                fflush(nil)
                return await withTaskGroup(of: Int.self) { group in
                    group.addTask {
                        var seen = 0
                        for await notice in notices where notice.data["target"] != "users" {
                            print(json ? JavaScriptJSON.stringify(notice.data) : "\(notice.channel ?? "-") \(notice.data["target"]?.stringValue ?? "?") \(notice.data["state"]?.stringValue ?? "")")
                            fflush(nil)
                            seen += 1
                            if seen >= count { break }
                        }
                        return seen
                    }
                    group.addTask {
                        try? await Task.sleep(for: .seconds(seconds))
                        return -1
                    }
                    let first = await group.next() ?? -1
                    group.cancelAll()
                    return first
                }
            }
            if seen < count { throw CLIError("fewer than \(count) notices in \(seconds) s") }
        }
    }

    struct Chits: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The chits of a tally, with the hash chain checked on this machine.")
        @OptionGroup var options: ProfileOptions
        @Argument(help: "The tally's number.") var id: Int64

        func run() async throws {
            let id = id
            let (chits, report) = try await ChipsCommand.withSession(options) { session in
                let chits = try await session.chits(tally: id)
                let tally = try await session.tally(id)
                return (chits, tally.digest == nil ? nil : try await session.verifyChain(id))
            }
            for chit in chits { ChipsCommand.printChit(chit, json: options.json) }
            if let report, !options.json {
                print("chain: \(report.links) links intact, checksum \(report.checksum)" + (report.unsignedChits.isEmpty ? "" : "; unsigned: \(report.unsignedChits)"))
            }
        }
    }

    struct Balance: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The balance sheet: what each partner owes you and you owe them; --visual writes the provider's bubble chart (SVG).")
        @OptionGroup var options: ProfileOptions
        @Option(help: "Write the visual balance sheet (SVG) to this file.") var visual: String?

        func run() async throws {
            let wantsVisual = visual != nil
            let (sheet, svg) = try await ChipsCommand.withSession(options) { session in
                // The provider draws the chart (/chips/balance.svg) from the same balances.
                (try await session.balanceSheet(), wantsVisual ? try await session.balanceSheetSVG() : nil)
            }
            if let visual, let svg {
                try svg.write(toFile: visual, atomically: true, encoding: .utf8)
            }
            if options.json {
                print(JavaScriptJSON.stringify(.object([
                    "assets": .int(sheet.totalAssets), "liabilities": .int(sheet.totalLiabilities), "net": .int(sheet.net),
                    "entries": .array(sheet.entries.map { .object(["tally_seq": .string($0.id), "partner": .string($0.partner), "net": .int($0.net)]) }),
                ])))
                return
            }
            for entry in sheet.assets { print("asset      \(entry.partner)  \(ChipsUnits.format(entry.net)) CHIP") }
            for entry in sheet.liabilities { print("liability  \(entry.partner)  \(ChipsUnits.format(entry.net)) CHIP") }
            print("assets \(ChipsUnits.format(sheet.totalAssets))  liabilities \(ChipsUnits.format(sheet.totalLiabilities))  net \(ChipsUnits.format(sheet.net)) CHIP")
            if let visual { print("wrote \(visual)") }
        }
    }

    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Every chit on your tallies, newest first.")
        @OptionGroup var options: ProfileOptions
        @Option(help: "Only this partner (tally number, CHIP user id or name).") var partner: String?

        func run() async throws {
            let partner = partner
            let chits = try await ChipsCommand.withSession(options) { session -> [ChipsChit] in
                var chits = try await session.chits()
                if let partner {
                    let tally = try await ChipsCommand.tally(partner, in: session, open: false)
                    chits = chits.filter { $0.seq == tally.seq }
                }
                return chits.sorted { $0.core.date > $1.core.date }
            }
            if chits.isEmpty && !options.json { print("no chits") }
            for chit in chits { ChipsCommand.printChit(chit, json: options.json) }
        }
    }
}

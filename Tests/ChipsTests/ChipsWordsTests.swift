import ChipsProtocol
import Foundation
import MyCHIPs
import PurseFormats
import PurseHTTPNIO
import PurseDatabase
import PurseServer
import SQLKit
import PurseTestSupport
import Testing

/// Every text a person reads comes from the provider's language data by code, in their language:
/// refusals, the pages' own checks, and pushes.
@MainActor
@Suite("MyCHIPs words: refusals, page texts and pushes in the user's language")
struct ChipsWordsTests {
    @Test("a refusal reads as the language data's message for its code; the Pay page's checks too, in Spanish")
    func refusals() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            let (_, bobTally) = try await pair.openTally(limit: 10)
            _ = try await pair.bob.setLanguage("spa")
            var refusal: ChipsError?
            do { _ = try await pair.bob.pay(bobTally.seq, units: 50_000, signingKey: pair.bobKey) } catch let error as ChipsError { refusal = error }
            let lmt = try #require(refusal)
            #expect(lmt.code == "!mychips.chits:LMT")
            let words = try await pair.bob.words()
            #expect(words.explain(lmt).title == "Sobre el límite", "\(words.explain(lmt))")
            #expect(words.explain(ChipsError.disconnected).title == "Sin respuesta")
            #expect(words.explain(ChipsError.signingKeyElsewhere).title == "Clave en otro dispositivo")
            #expect(words.message("payinst").help.contains("nunca se escriben"))

            let pay = PayViewModel(session: pair.bob, tally: bobTally, signer: { pair.bobKey })
            pay.amount = "0"
            await pay.send()
            #expect(pay.error?.hasPrefix("Escriba una cantidad") == true, "\(pay.error ?? "")")
            pay.amount = "11"
            await pay.send()
            #expect(pay.error == "Sobre el crédito: Eso supera el crédito que le concede su socio: como máximo 10 CHIP", "\(pay.error ?? "")")
            pay.amount = "abc"
            await pay.send()
            #expect(pay.error?.hasPrefix("Escriba una cantidad") == true)
            #expect(pay.sent == nil)
            await pair.done()
        }
    }

    @Test("a push is worded in the language the user chose")
    func spanishPush() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            let token = String(repeating: "b2", count: 32)
            _ = try await pair.alice.setLanguage("spa")
            #expect(try await pair.alice.registerForPushes(deviceToken: token))
            let (_, bobTally) = try await pair.openTally(limit: 50)
            await pair.alice.connection.disconnect()
            let database = try #require(provider.environment?.database)
            #expect(try await eventually(10) {
                try await database.read { db in try await db.raw("SELECT 1 AS x FROM chips_presence WHERE username = 'alice'").all().isEmpty }
            })
            _ = try await pair.bob.pay(bobTally.seq, units: 2_500, memo: "Semillas", signingKey: pair.bobKey)
            #expect(try await eventually(30) {
                try await database.read { db in
                    try await db.raw("SELECT body FROM chips_pushes WHERE username = 'alice'").all()
                        .contains { (try? $0.decode(column: "body", as: String.self)) == "Recibió 2.5 CHIP: Semillas" }
                }
            })
            await pair.done()
        }
    }
}

import Foundation
import MyCHIPs
import PurseFormats
import PurseTestSupport
import Testing

@Suite("MyCHIPs view models: first launch, the connection banner, profile, language picker")
@MainActor
struct ChipsViewModelTests {
    @Test("first launch: a ticket without a user asks for one, then logs in; an expired or foreign code is refused")
    func firstLaunch() async throws {
        try await ChipsProvider.with { provider in
            let session = provider.client()
            let model = FirstLaunchViewModel(connection: session.connection)
            var ticket = try await provider.ticket(for: "kate")
            ticket.user = nil
            await model.received(ticket.link)
            ticket.expires = nil  // a link does not carry the expiry
            #expect(model.step == .askUsername(ticket))
            model.username = "kate"
            await model.submitUsername()
            #expect(model.step == .done)
            #expect(try await session.me().username == "kate")

            model.startOver()
            await model.received("https://mychips.org/ticket?host=h&port=1")
            if case .failed = model.step {} else { Issue.record("a ticket without a token is refused") }
            model.startOver()
            var expired = try await provider.ticket(for: "kate")
            expired.expires = provider.clock.now.addingTimeInterval(-1)
            await model.received(expired.json)
            #expect(model.step == .failed(ChipsError.ticketExpired.message))
            await connectionDone(session)
        }
    }

    @Test("the banner follows the connection in the user's language")
    func banner() async throws {
        try await ChipsProvider.with { provider in
            let session = provider.client()
            let banner = ConnectionBannerViewModel(session: session)
            let following = Task { await banner.run() }
            try await session.connection.connect(ticket: try await provider.ticket(for: "liam"))
            #expect(try await eventually { await MainActor.run { banner.title == "Connected" } })
            #expect(!banner.isVisible)
            let texts = try await session.setLanguage("spa")
            banner.languageChanged(try #require(texts[ChipsSession.appTexts]))
            #expect(banner.title == "Conectado")
            await session.connection.disconnect()
            #expect(try await eventually { await MainActor.run { banner.title == "Sin conexión" } })
            #expect(banner.isVisible)
            following.cancel()
        }
    }

    @Test("profile: labels and editability from the provider; a refusal shown in the user's words")
    func profile() async throws {
        try await ChipsProvider.with { provider in
            let session = provider.client()
            try await session.connection.connect(ticket: try await provider.ticket(for: "mona", name: "Lisa"))
            let model = ProfileViewModel(session: session)
            await model.load()
            #expect(model.user?.surname == "Lisa" && model.label("born_date") == "Birth Date")
            #expect(model.isEditable("country") && !model.isEditable("peer_cuid"))
            model.draft = ["country": "italy"]
            await model.save()
            #expect(model.error == "Bad Country: A country is two capital letters (ISO 3166)")
            #expect(model.draft == ["country": "italy"])
            model.draft = ["country": "IT", "fir_name": "Mona"]
            await model.save()
            #expect(model.error == nil && model.user?.displayName == "Mona Lisa" && model.draft.isEmpty)
            await connectionDone(session)
        }
    }

    @Test("the language picker lists the provider's languages and switches every label")
    func languagePicker() async throws {
        try await ChipsProvider.with { provider in
            let session = provider.client()
            try await session.connection.connect(ticket: try await provider.ticket(for: "nina"))
            let picker = LanguagePickerViewModel(session: session)
            await picker.load()
            #expect(picker.languages.map(\.name) == ["English", "Español"] && picker.selected == "eng")
            await picker.choose("spa")
            #expect(picker.selected == "spa" && picker.texts[ChipsSession.usersView]?.title == "Mi perfil")
            #expect(await session.language == "spa")
            await connectionDone(session)
        }
    }
}

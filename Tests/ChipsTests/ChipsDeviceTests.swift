import ChipsProtocol
import Foundation
import MyCHIPs
import PurseDatabase
import PurseFormats
import PurseKit
import PurseHTTPNIO
import PurseTestSupport
import Synchronization
import Testing

@Suite("MyCHIPs wallet: lost answers and a user's second device")
struct ChipsDeviceTests {
    static let noBiometrics = SoftwareBiometricGate(available: false) { _ in .unavailable }

    @Test("a payment whose answer is lost is sent again as the same chit, and stored once", arguments: TestEngines.all)
    func lostAnswer(engine: DatabaseEngine) async throws {
        try await ChipsProvider.with(engine: engine) { provider in
            let pair = try await WalletPair.make(provider)
            let (aliceTally, bobTally) = try await pair.openTally(limit: 50)
            let link = AnswerLosingTransport()
            link.loseNextAnswer(to: ChipsSession.chitsView)
            let phone = provider.client(timeout: .seconds(5), transport: link)
            try await phone.connection.connect(ticket: try await provider.ticket(for: "bob"))

            let paid = try await phone.pay(bobTally.seq, units: 1_500, memo: "Lost answer", signingKey: pair.bobKey)
            #expect(link.armed.withLock { $0 } == nil, "the first answer was lost")
            #expect(paid.state == "L.good" && paid.units == 1_500)
            let stored = try await pair.alice.chits(tally: aliceTally.seq).filter { $0.memo == "Lost answer" }
            #expect(stored.map(\.uuid) == [paid.uuid], "one payment, under the chit's own id")
            #expect(try await pair.alice.tally(aliceTally.seq).net == 1_500)
            await connectionDone(phone)
            await pair.done()
        }
    }

    @MainActor
    @Test("the connection key moves to another device sealed with a passphrase, behind the biometric gate; that device logs in by signature")
    func connectionKeyExport() async throws {
        try await ChipsProvider.with { provider in
            let store = InMemorySecureStore()
            let phone = provider.client(store: store)
            try await phone.connection.connect(ticket: try await provider.ticket(for: "alice", name: "Anders"))
            let refused = SoftwareBiometricGate(available: true) { _ in .failed }
            let account = AccountViewModel(keychain: ChipsKeychain(store: store), session: phone, gate: refused)
            await account.exportConnection(passphrase: "two devices")
            #expect(account.exportedConnection == nil && account.error != nil, "not without the owner's biometrics")
            let prompts = Mutex<[String]>([])
            let allowed = AccountViewModel(keychain: ChipsKeychain(store: store), session: phone, gate: SoftwareBiometricGate(available: true) { reason in
                prompts.withLock { $0.append(reason) }
                return .success
            })
            _ = try await phone.setLanguage("spa")
            await allowed.exportConnection(passphrase: "two devices")
            #expect(prompts.withLock { $0 } == ["Exportar su clave de conexión"], "the biometric prompt speaks the user's language")
            let backup = try #require(allowed.exportedConnection)
            guard case .connectKey(let scanned) = try ChipsLink.parse(backup.link), case .connectKey(let fromJSON) = try ChipsLink.parse(backup.json) else {
                Issue.record("the backup reads back as a connection key"); return
            }
            #expect(scanned == backup && fromJSON == backup)
            #expect(throws: ChipsError.self) { _ = try backup.open(passphrase: "wrong") }

            let tabletStore = InMemorySecureStore()
            let tablet = provider.client(store: tabletStore)
            let page = AccountViewModel(keychain: ChipsKeychain(store: tabletStore), session: tablet, gate: Self.noBiometrics)
            await page.importConnection(scanned, passphrase: "two devices")
            #expect(page.account?.user == "alice" && page.error == nil)
            try await tablet.connection.connect()
            #expect(try await tablet.me().username == "alice")
            for session in [phone, tablet] { await connectionDone(session) }
        }
    }

    @Test("a second device finds the published signing key it does not hold: it asks for the backup and replaces the key only when told")
    func secondDevice() async throws {
        try await ChipsProvider.with { provider in
            let pair = try await WalletPair.make(provider)
            let published = { try await pair.alice.me().certificate["public"] }
            let before = try await published()
            #expect(ChipsSignature.sameKey(before, .string(pair.aliceKey.publicJWK)))

            let store = InMemorySecureStore()
            let tablet = provider.client(store: store)
            try await tablet.connection.connect(ticket: try await provider.ticket(for: "alice"))
            let keychain = ChipsKeychain(store: store)
            await #expect(throws: ChipsError.signingKeyElsewhere) {
                _ = try await tablet.signingKey(in: keychain, unlockingWith: Self.noBiometrics, reason: "sign")
            }
            #expect(try await keychain.signingKey(passphrase: "") == nil, "no key was made")
            #expect(try await published() == before, "the certificate is unchanged")

            // Another key on this device is refused too, and not published.
            try await keychain.save(SigningKey())
            await #expect(throws: ChipsError.signingKeyDiffers) {
                _ = try await tablet.signingKey(in: keychain, unlockingWith: Self.noBiometrics, reason: "sign")
            }
            #expect(try await published() == before)

            // The backup brings the key.
            let backup = try SigningKeyBackup.seal(pair.aliceKey, passphrase: "two devices")
            try await keychain.save(try backup.open(passphrase: "two devices"))
            let key = try await tablet.signingKey(in: keychain, unlockingWith: Self.noBiometrics, reason: "sign")
            #expect(key.publicJWK == pair.aliceKey.publicJWK)

            // Replacing is the user's explicit choice.
            let fresh = SigningKey()
            try await tablet.replaceSigningKey(with: fresh, in: keychain)
            #expect(ChipsSignature.sameKey(try await published(), .string(fresh.publicJWK)))
            await #expect(throws: ChipsError.signingKeyElsewhere) {
                _ = try await pair.alice.signingKey(in: ChipsKeychain(store: InMemorySecureStore()), unlockingWith: Self.noBiometrics, reason: "sign")
            }

            // A user's first device makes and publishes the key.
            let carol = provider.client()
            try await carol.connection.connect(ticket: try await provider.ticket(for: "carol", name: "Carol"))
            let carolKeys = ChipsKeychain(store: InMemorySecureStore())
            let made = try await carol.signingKey(in: carolKeys, unlockingWith: Self.noBiometrics, reason: "sign")
            #expect(ChipsSignature.sameKey(try await carol.me().certificate["public"], .string(made.publicJWK)))
            for session in [tablet, carol] { await connectionDone(session) }
            await pair.done()
        }
    }
}

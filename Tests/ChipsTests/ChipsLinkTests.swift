import Foundation
import MyCHIPs
import PurseFormats
import PurseKit
import Testing

@Suite("MyCHIPs links: the four forms, parsed and produced; signing key backups")
struct ChipsLinkTests {
    @Test("every form round-trips through its link; the scanner tells them apart")
    func roundTrips() throws {
        let chad = ChipsAddress(cuid: "ada", agent: "D8yA6x3Yy-apifHFsueyfQ", host: "chips.example", port: 1025)
        let links: [ChipsLink] = [
            .ticket(ChipsTicket(token: "cc42", expires: nil, host: "chips.example", port: 1025, user: "ada")),
            .invite(TallyInvite(token: "t0k3n", chad: chad, expires: Date(timeIntervalSince1970: 1_800_000_000))),
            .pay(PaymentRequest(chad: ChipsAddress(cuid: "ada", agent: "D8yA6x3Yy-apifHFsueyfQ"), units: 12_500, reference: "inv 42/7", memo: "Lunch & coffee = ☕")),
            .pay(PaymentRequest(chad: ChipsAddress(cuid: "bob", agent: "x"))),
            // Addresses that `cuid:agent` cannot say travel as JSON.
            .pay(PaymentRequest(chad: ChipsAddress(cuid: "p1001", agent: "P0mychips://invite?token1"), reference: "or01T00:der00:-")),
            .pay(PaymentRequest(chad: ChipsAddress(cuid: "cy", agent: "k1", host: "chips.example", port: 1025), units: 1)),
            .signkey(try SigningKeyBackup.seal(SigningKey(), passphrase: "pass phrase")),
        ]
        for link in links {
            let parsed = try ChipsLink.parse(link.link)
            #expect(parsed == link, "\(link.link)")
            #expect(try ChipsLink.parse(link.link.replacingOccurrences(of: "https://mychips.org/", with: "mychips://")) == link)
        }
        #expect(links.map(\.kind) == ["ticket", "invite", "pay", "pay", "pay", "pay", "signkey"])
        #expect(links[2].link == "https://mychips.org/pay?chad=ada%3AD8yA6x3Yy-apifHFsueyfQ&units=12500&ref=inv%2042%2F7&memo=Lunch%20%26%20coffee%20%3D%20%E2%98%95")
        // A payment address written by hand reads too.
        #expect(try ChipsLink.parse("https://mychips.org/pay?chad=ada:agent1&units=3000") == .pay(PaymentRequest(chad: ChipsAddress(cuid: "ada", agent: "agent1"), units: 3000)))
    }

    @Test("links with wrong fields are refused with the reason")
    func refusals() {
        for text in ["https://mychips.org/pay?units=5", "https://mychips.org/pay?chad=ada", "https://mychips.org/pay?chad=a:b&units=-1",
                     "https://mychips.org/pay?chad=a:b&units=1.5", "https://mychips.org/invite?chad=a:b", "https://mychips.org/invite?token=t",
                     "https://mychips.org/signkey?s=00&i=00&d=AA", "https://mychips.org/refund?x=1", "https://example.org/pay?chad=a:b"] {
            #expect(throws: ChipsError.self, "\(text)") { try ChipsLink.parse(text) }
        }
    }

    @Test("a signing key backup opens with its passphrase only, as a link or as JSON")
    func signkey() throws {
        let key = SigningKey()
        let backup = try SigningKeyBackup.seal(key, passphrase: "correct horse")
        #expect(backup.salt.count == 8 && backup.iv.count == 12)
        #expect(try backup.open(passphrase: "correct horse").publicJWK == key.publicJWK)
        #expect(throws: ChipsError.keyStore("the passphrase does not open this signing key")) { try backup.open(passphrase: "correct horsE") }
        guard case .signkey(let fromJSON) = try ChipsLink.parse(backup.json) else { Issue.record("JSON form"); return }
        #expect(fromJSON == backup)
        var tampered = backup
        tampered.sealed[0] ^= 1
        #expect(throws: ChipsError.self) { try tampered.open(passphrase: "correct horse") }
        #expect(throws: ChipsError.self) { try SigningKeyBackup.seal(key, passphrase: "") }
        // The signing key signs; its signatures verify as a connection key's do.
        let signature = try key.sign("chit")
        #expect(key.verifies(signature, over: "chit") && !key.verifies(signature, over: "chip"))
    }

    @Test("a signkey made by Python's cryptography opens here")
    func pythonSignkey() throws {
        let url = try #require(Bundle.module.url(forResource: "signkey_python", withExtension: "txt", subdirectory: "Fixtures"))
        let link = try String(contentsOf: url, encoding: .utf8)
        guard case .signkey(let backup) = try ChipsLink.parse(link) else { Issue.record("not a signkey"); return }
        let key = try backup.open(passphrase: "correct horse battery")
        #expect(key.verifies(try key.sign("x"), over: "x"))
    }

    /// Writes a signkey made here for `scripts/oracles/chips_wyseman.py signkey-open`
    /// (`CHIPS_SIGNKEY_OUT=FILE`, passphrase "correct horse battery").
    @Test("a signkey made here is what the oracle opens")
    func writesSignkey() throws {
        let backup = try SigningKeyBackup.seal(SigningKey(), passphrase: "correct horse battery")
        if let path = ProcessInfo.processInfo.environment["CHIPS_SIGNKEY_OUT"] {
            try Data(backup.link.utf8).write(to: URL(fileURLWithPath: path))
        }
        #expect(backup.link.hasPrefix("https://mychips.org/signkey?s="))
    }

    @Test("CHIP amounts: 1 CHIP = 1,000 units, shown with a local currency")
    func units() throws {
        #expect(try ChipsUnits.parse("12.5") == 12_500)
        #expect(throws: ChipsError.self) { try ChipsUnits.parse("12.5001") }
        #expect(throws: ChipsError.self) { try ChipsUnits.parse("-3") }
        #expect(try ChipsUnits.parse("-3", signed: true) == -3_000)
        #expect(ChipsUnits.format(12_500) == "12.5")
        #expect(ChipsExchangeRate(currency: "USD", minorUnitsPerCHIP: 235).display(12_500) == "12.5 CHIP ≈ 29.38 USD")
        #expect(ChipsExchangeRate(currency: "NGN", minorUnitsPerCHIP: 350_000).display(1) == "0.001 CHIP ≈ 3.50 NGN")
    }

    /// With QR_PNG_DIR set, writes a QR code of each link form (PNG, and the payload's hex) for
    /// zbarimg (`scripts/oracles/qr_zbar.sh`); always checks they encode.
    @Test("every link form fits a QR code an independent decoder reads")
    func writesLinkQRCodes() throws {
        let chad = ChipsAddress(cuid: "ada", agent: "D8yA6x3Yy-apifHFsueyfQ", host: "chips.example", port: 1025)
        let links: [ChipsLink] = [
            .ticket(ChipsTicket(token: "cc42dfab4094f2aa18c0b28f6359828e", expires: nil, host: "chips.example", port: 1025, user: "ada")),
            .invite(TallyInvite(token: "5b5c3b7220d92d9c7a99240c6ef733ba", chad: chad)),
            .pay(PaymentRequest(chad: ChipsAddress(cuid: "ada", agent: "D8yA6x3Yy-apifHFsueyfQ"), units: 12_500, memo: "Lunch")),
            .signkey(try SigningKeyBackup.seal(SigningKey(), passphrase: "correct horse battery")),
            .chit(try Self.signedChit()),
        ]
        for link in links {
            let code = try QRCode.encode(text: link.link, errorCorrection: .low)
            if let directory = ProcessInfo.processInfo.environment["QR_PNG_DIR"] {
                try Data(code.png(scale: 4)).write(to: URL(fileURLWithPath: "\(directory)/chips-\(link.kind).png"))
                try Data(Hex.encode(Array(link.link.utf8)).utf8).write(to: URL(fileURLWithPath: "\(directory)/chips-\(link.kind).hex"))
            }
        }
    }

    static func signedChit() throws -> SignedChit {
        let core = ChitCore(tally: "6f1c1b7e-2c59-4d0c-9a55-1b2b7c3f0d11", by: .foil, type: .tran, uuid: "0b8e0a2e-7a33-4f6e-8d0f-5a0b9d1e2c44",
                            date: 1_764_000_000_123, units: 12_500, reference: nil, memo: "Lunch é")
        return SignedChit(core: core, signature: try SigningKey().sign(core.signingText))
    }

    @Test("a signed chit as a link: round trip, and a tampered or partial one is refused")
    func chitLinks() throws {
        let chit = try Self.signedChit()
        #expect(try ChipsLink.parse(chit.link) == .chit(chit))
        #expect(try ChipsLink.parse(chit.link.replacingOccurrences(of: "https://mychips.org/", with: "mychips://")) == .chit(chit))
        #expect(throws: ChipsError.self) { try ChipsLink.parse("https://mychips.org/chit?c=" + Base64URL.encode(Data(#"{"tally":"x","units":1}"#.utf8))) }
        #expect(throws: ChipsError.self) { try ChipsLink.parse("https://mychips.org/chit?c=%%%") }
    }

    @Test("without biometrics the signing key is sealed with a passphrase on the device")
    func passphraseProtectedKey() async throws {
        let keychain = ChipsKeychain(store: InMemorySecureStore())
        let gate = SoftwareBiometricGate(available: false) { _ in .unavailable }
        let key = SigningKey()
        try await keychain.save(key)
        try await keychain.protectSigningKey(passphrase: "river stone 42")
        #expect(try await keychain.signingKeyNeedsPassphrase())
        await #expect(throws: ChipsError.self) { _ = try await keychain.signingKey(unlockingWith: gate, reason: "sign") }
        await #expect(throws: ChipsError.self) { _ = try await keychain.signingKey(passphrase: "wrong") }
        #expect(try await keychain.signingKey(passphrase: "river stone 42")?.publicJWK == key.publicJWK)
    }
}

import Crypto
import CutiEService
import Foundation
import MyCHIPs
import PurseFormats
import PurseServer
import X509

/// The hot routes' fast JSON reader against Foundation's: whatever it accepts, Foundation reads
/// the same, so a request never means one thing on the fast path and another on the slow one.
enum FlatJSONHarness {
    /// A body of the shapes the hot routes read: every kind of member, some optional.
    struct Body: Decodable, Equatable {
        var text: String
        var count: Int64
        var small: Int?
        var amount: Double?
        var flag: Bool?
        var note: String?
        var unsigned: UInt32?
    }

    static func run(_ bytes: [UInt8]) {
        let data = Data(bytes)
        let flat = FlatJSONDecoder()
        if let fast = flat.decodeIfFlat(Body.self, from: data) {
            let slow = try? JSONDecoder().decode(Body.self, from: data)
            require(slow == fast, "flat read \(fast), Foundation \(String(describing: slow)) from \(String(decoding: data.prefix(200), as: UTF8.self))")
        }
        _ = flat.decodeIfFlat([String: String].self, from: data)
        data.withUnsafeBytes { raw in
            if case .decoded(let fast) = flat.decodeFlat(Body.self, from: raw) {
                require((try? JSONDecoder().decode(Body.self, from: data)) == fast, "decodeFlat disagrees with Foundation")
            }
        }
    }
}

/// What a scanned QR code or an opened link holds (the wallet's one parser for both): whatever
/// it accepts, its own link reads back the same.
enum ChipsLinkHarness {
    static func run(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let link = try? ChipsLink.parse(text) else { return }
        let written = link.link
        let again = try? ChipsLink.parse(written)
        require(again.map(withoutExpiry) == withoutExpiry(link), "link round trip: \(link) → \(written.prefix(300)) → \(String(describing: again))")
    }

    /// A ticket's link does not carry its expiry (as MyCHIPs' own links do not).
    static func withoutExpiry(_ link: ChipsLink) -> ChipsLink {
        guard case .ticket(var ticket) = link else { return link }
        ticket.expires = nil
        return .ticket(ticket)
    }
}

/// Apple's signatures as Cuti-E checks them: App Attest attestations (Apple's roots, at a time
/// inside Apple's published sample's validity) and assertions, and App Store JWS (under a fixed
/// development root). Corpus seeds are genuine ones, so mutations reach the deep checks.
enum AppleHarness {
    static let attestation = try! AppAttestVerifier.apple()
    static let sampleDate = Date(timeIntervalSince1970: 1_713_441_600) // 2024-04-18T12:00:00Z
    static let assertionKey = P256.Signing.PrivateKey(compactRepresentable: false)
    static let storeKit: (signer: StoreKitDevelopmentSigner, verifier: StoreKitVerifier) = {
        func key(_ byte: UInt8) -> P256.Signing.PrivateKey { try! P256.Signing.PrivateKey(rawRepresentation: Data(repeating: byte, count: 32)) }
        let signer = try! StoreKitDevelopmentSigner(rootKey: key(1), intermediateKey: key(2), leafKey: key(3), now: Date(timeIntervalSince1970: 1_790_000_000))
        return (signer, StoreKitVerifier(roots: [signer.root]))
    }()

    static func run(_ target: FuzzTarget, _ bytes: [UInt8]) {
        let data = Data(bytes)
        switch target {
        case .appattest:
            blocking {
                _ = try? await attestation.verify(attestation: data, appID: "0352187391.com.apple.example_app_attest",
                                                  clientDataHash: Data("test_server_challenge".utf8),
                                                  keyID: Data(base64Encoded: "bSrEhF8TIzIvWSPwvZ0i2+UOBre4ASH84rK15m6emNY=")!,
                                                  environment: .production, at: sampleDate)
            }
            _ = try? AppAttestVerifier.verifyAssertion(data, clientData: Data("fuzz".utf8), publicKey: assertionKey.publicKey,
                                                        appID: "PURSETEAM0.com.purse.cutie.sandbox", after: 0)
        case .storekit:
            let jws = String(decoding: bytes, as: UTF8.self)
            blocking { _ = try? await storeKit.verifier.verify(jws, at: Date(timeIntervalSince1970: 1_790_000_100)) }
        default:
            return
        }
    }

    /// A genuine JWS for the storekit corpus (`PurseFuzz --seed`).
    static func storeKitSeed() throws -> String {
        struct Payload: Encodable { var bundleId = "com.purse.cutie.sandbox"; var productId = "com.cutie.pro.monthly"; var transactionId = "1000" }
        return try storeKit.signer.sign(Payload())
    }
}

import Foundation
import Starknet

/// A service users can buy: a phone top-up of a fixed amount, a bill paid with an amount the user
/// chooses within limits, or a gift card. Amounts in centavos (MXN minor units).
struct SKU: Sendable, Hashable {
    enum Category: String, Sendable, CaseIterable {
        case phoneTopup = "phone_topup"
        case bill
        case giftCard = "gift_card"
    }

    /// What the purchase is delivered to, and the pattern it must match.
    struct Reference: Sendable, Hashable {
        var label: String
        var pattern: String
        var example: String

        static let phone = Reference(label: "10-digit phone number", pattern: "^[0-9]{10}$", example: "5512345678")
        static let cfe = Reference(label: "12-digit CFE service number", pattern: "^[0-9]{12}$", example: "012345678901")
        static let email = Reference(label: "E-mail address", pattern: "^[^@\\s]{1,64}@[^@\\s]+\\.[^@\\s]{2,}$", example: "ana@example.com")
    }

    var id: String
    var name: String
    var provider: String
    var category: Category
    /// The fixed price, or nil when the user chooses within `minimum`…`maximum`.
    var fixed: Int64?
    var minimum: Int64
    var maximum: Int64
    var reference: Reference

    static let currency = "MXN"

    static func fixed(_ id: String, _ name: String, _ provider: String, _ category: Category, pesos: Int64, _ reference: Reference) -> SKU {
        SKU(id: id, name: name, provider: provider, category: category, fixed: pesos * 100, minimum: pesos * 100, maximum: pesos * 100, reference: reference)
    }

    /// Whether `reference` is what this SKU delivers to.
    func accepts(reference text: String) -> Bool {
        text.utf8.count <= 254 && text.range(of: reference.pattern, options: .regularExpression) != nil
    }

    /// Whether `centavos` is a price this SKU can be bought at.
    func accepts(centavos: Int64) -> Bool {
        if let fixed { return centavos == fixed }
        return (minimum...maximum).contains(centavos)
    }
}

/// The provider's catalogue. Prices in MXN.
enum SKUCatalogue {
    static let all: [SKU] = [
        .fixed("telcel_50", "Telcel 50 MXN", "Telcel", .phoneTopup, pesos: 50, .phone),
        .fixed("telcel_100", "Telcel 100 MXN", "Telcel", .phoneTopup, pesos: 100, .phone),
        .fixed("telcel_200", "Telcel 200 MXN", "Telcel", .phoneTopup, pesos: 200, .phone),
        .fixed("att_50", "AT&T 50 MXN", "AT&T", .phoneTopup, pesos: 50, .phone),
        .fixed("att_100", "AT&T 100 MXN", "AT&T", .phoneTopup, pesos: 100, .phone),
        .fixed("movistar_50", "Movistar 50 MXN", "Movistar", .phoneTopup, pesos: 50, .phone),
        .fixed("movistar_100", "Movistar 100 MXN", "Movistar", .phoneTopup, pesos: 100, .phone),
        SKU(id: "cfe_electricity", name: "CFE Electricity", provider: "CFE", category: .bill, fixed: nil,
            minimum: 50_00, maximum: 10_000_00, reference: .cfe),
        SKU(id: "telmex_bill", name: "Telmex", provider: "Telmex", category: .bill, fixed: nil,
            minimum: 100_00, maximum: 5_000_00, reference: SKU.Reference(label: "10-digit Telmex phone number", pattern: "^[0-9]{10}$", example: "5555123456")),
        .fixed("spotify_115", "Spotify Gift Card 115 MXN", "Spotify", .giftCard, pesos: 115, .email),
        .fixed("netflix_219", "Netflix Gift Card 219 MXN", "Netflix", .giftCard, pesos: 219, .email),
        .fixed("xbox_300", "Xbox Gift Card 300 MXN", "Xbox", .giftCard, pesos: 300, .email),
    ]

    static let byID: [String: SKU] = Dictionary(uniqueKeysWithValues: all.map { ($0.id, $0) })
}

/// MXN prices to STRK at a rate of centavos per STRK, rounded up to the fri so the provider is
/// never paid short.
public struct STRKRate: Sendable, Hashable {
    /// Centavos one STRK buys (20 MXN/STRK = 2000).
    public var centavosPerSTRK: Int64

    static let friPerSTRK: UInt128 = 1_000_000_000_000_000_000

    func fri(forCentavos centavos: Int64) -> UInt256 {
        let numerator = UInt128(centavos) * Self.friPerSTRK
        let rate = UInt128(centavosPerSTRK)
        return UInt256((numerator + rate - 1) / rate)
    }

    /// "20" or "19.75" MXN per STRK.
    public init?(mxnPerSTRK text: String) {
        guard let centavos = Money.centavos(text), centavos > 0 else { return nil }
        centavosPerSTRK = centavos
    }

    public init(centavosPerSTRK: Int64) { self.centavosPerSTRK = centavosPerSTRK }

    var mxnPerSTRK: String { Money.pesos(centavosPerSTRK) }
}

/// MXN between decimal text ("50", "50.5", "123.45") and centavos, exactly.
enum Money {
    static func centavos(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, !whole.isEmpty, whole.count <= 12, whole.allSatisfy({ $0.isASCII && $0.isNumber }), let pesos = Int64(whole), pesos >= 0 else { return nil }
        var cents: Int64 = 0
        if parts.count == 2 {
            let fraction = parts[1]
            guard (1...2).contains(fraction.count), fraction.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(fraction) else { return nil }
            cents = fraction.count == 1 ? value * 10 : value
        }
        return pesos * 100 + cents
    }

    /// A JSON number such as 50.0 or 123.45: at most two decimals, up to a trillion pesos.
    static func centavos(_ number: Double) -> Int64? {
        guard number.isFinite, number >= 0, number < 1e12 else { return nil }
        let scaled = (number * 100).rounded()
        guard abs(number * 100 - scaled) < 1e-6 else { return nil }
        return Int64(scaled)
    }

    static func pesos(_ centavos: Int64) -> String {
        let cents = centavos % 100
        return cents == 0 ? "\(centavos / 100)" : String(format: "%lld.%02lld", centavos / 100, cents)
    }
}

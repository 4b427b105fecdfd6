import Foundation
import PurseFormats

/// CHIP amounts: integers in milliCHIPs (1 CHIP = 1,000 units), as tallies and chits carry them,
/// shown as CHIPs and, at a configured rate, in a local currency.
public enum ChipsUnits {
    public static let decimals = 3

    /// 12500 → "12.5"; with `minimumDecimals: 3` → "12.500".
    public static func format(_ units: Int64, minimumDecimals: Int = 0) -> String {
        DecimalAmount.format(units, decimals: decimals, minimumDecimals: minimumDecimals)
    }
}

/// What one CHIP is worth in a local currency, for showing amounts beside their CHIP value.
public struct ChipsExchangeRate: Sendable, Equatable, Codable {
    /// ISO 4217 code (`USD`, `NGN`).
    public var currency: String
    /// The currency's minor units per CHIP (235 for 2.35 USD).
    public var minorUnitsPerCHIP: Int64
    /// The currency's decimals (2 for USD).
    public var currencyDecimals: Int

    public init(currency: String, minorUnitsPerCHIP: Int64, currencyDecimals: Int = 2) {
        self.currency = currency
        self.minorUnitsPerCHIP = minorUnitsPerCHIP
        self.currencyDecimals = currencyDecimals
    }

    /// `units` milliCHIPs in the currency's minor units, rounded half to even.
    public func convert(_ units: Int64) -> Int64 {
        DecimalAmount.convert(units, decimals: ChipsUnits.decimals, rate: minorUnitsPerCHIP)
    }

    /// "12.5 CHIP ≈ 29.38 USD".
    public func display(_ units: Int64) -> String {
        "\(ChipsUnits.format(units)) CHIP ≈ \(DecimalAmount.format(convert(units), decimals: currencyDecimals, minimumDecimals: currencyDecimals)) \(currency)"
    }
}

import Foundation
import PurseFormats

extension ChipsUnits {
    /// "12.5" → 12500. Negative amounts only where `signed` (balances).
    public static func parse(_ text: String, signed: Bool = false) throws(ChipsError) -> Int64 {
        do {
            return try DecimalAmount.parse(text, decimals: decimals, signed: signed)
        } catch {
            throw .invalidLink(error.description.replacingOccurrences(of: "An amount", with: "A CHIP amount"))
        }
    }
}

/// Token amounts with 18 decimals (STRK, ETH on Starknet) between decimal text and base units,
/// exactly: "2.5" is 2500000000000000000, never a Double on the way.
public enum STRKAmount {
    public static let decimals = 18

    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case malformed
        case tooManyDecimals
        case tooLarge

        public var description: String {
            switch self {
            case .malformed: "An amount is digits with at most one decimal point, such as 10 or 2.5"
            case .tooManyDecimals: "An amount has at most 18 decimals"
            case .tooLarge: "The amount is too large"
            }
        }
    }

    /// Parses "10", "2.5", "0.000000000000000001"; refuses signs, exponents, spaces, more than 18
    /// decimals and values of 2^256 base units or more.
    public static func parse(_ text: String) throws(ParseError) -> UInt256 {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count == 2 ? parts[1] : ""
        guard !whole.isEmpty || !fraction.isEmpty, parts.count == 1 || !fraction.isEmpty,
              whole.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), fraction.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            throw .malformed
        }
        guard fraction.count <= decimals else { throw .tooManyDecimals }
        let digits = (whole.isEmpty ? "0" : String(whole)) + fraction + String(repeating: "0", count: decimals - fraction.count)
        guard let value = UInt256(digits) else { throw .tooLarge }
        return value
    }

    /// "2.5" for 2500000000000000000; whole amounts without a point ("10").
    public static func format(_ amount: UInt256) -> String {
        let digits = amount.description
        let padded = String(repeating: "0", count: max(0, decimals + 1 - digits.count)) + digits
        let whole = padded.dropLast(decimals)
        var fraction = padded.suffix(decimals)
        while fraction.last == "0" { fraction = fraction.dropLast() }
        return fraction.isEmpty ? String(whole) : "\(whole).\(fraction)"
    }
}

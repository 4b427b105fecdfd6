/// Exact decimal amounts held as integers in minor units (`Int64`), with a fixed number of
/// decimals: milliCHIPs (3), kobo and cents (2). Text in and out never passes through a `Double`.
public enum DecimalAmount {
    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case malformed
        case tooManyDecimals(Int)
        case tooLarge

        public var description: String {
            switch self {
            case .malformed: "An amount is digits with at most one decimal point, such as 10 or 2.5"
            case .tooManyDecimals(let decimals): "An amount has at most \(decimals) decimals"
            case .tooLarge: "The amount is too large"
            }
        }
    }

    /// Parses "12", "12.5", "-0.125" (a sign only where `signed`) into minor units.
    public static func parse(_ text: String, decimals: Int, signed: Bool = false) throws(ParseError) -> Int64 {
        var body = Substring(text)
        var negative = false
        if signed, body.first == "-" {
            negative = true
            body = body.dropFirst()
        }
        let parts = body.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count == 2 ? parts[1] : ""
        guard !whole.isEmpty, parts.count == 1 || !fraction.isEmpty,
              whole.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), fraction.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            throw .malformed
        }
        guard fraction.count <= decimals else { throw .tooManyDecimals(decimals) }
        let digits = String(whole) + fraction + String(repeating: "0", count: decimals - fraction.count)
        guard digits.count <= 18, let value = Int64(digits) else { throw .tooLarge }
        return negative ? -value : value
    }

    /// "12.5" for 12500 milliCHIPs; at least `minimumDecimals` decimals ("12.50" with 2), whole
    /// amounts without a point when that is 0.
    public static func format(_ units: Int64, decimals: Int, minimumDecimals: Int = 0) -> String {
        let magnitude = units.magnitude
        let digits = String(magnitude)
        let padded = String(repeating: "0", count: max(0, decimals + 1 - digits.count)) + digits
        let whole = padded.dropLast(decimals)
        var fraction = padded.suffix(decimals)
        while fraction.count > minimumDecimals, fraction.last == "0" { fraction = fraction.dropLast() }
        let text = fraction.isEmpty ? String(whole) : "\(whole).\(fraction)"
        return units < 0 ? "-" + text : text
    }

    /// `units` (with `decimals`) times `rate` — minor units of the other currency per whole unit
    /// of this one — rounded half to even into the other currency's minor units: 12500 milliCHIPs
    /// at 2.35 USD per CHIP (rate 235 cents) → 2938 cents.
    public static func convert(_ units: Int64, decimals: Int, rate: Int64) -> Int64 {
        // units × rate / 10^decimals, computed wide so no product overflows.
        let product = Int128(units) * Int128(rate)
        var divisor: Int128 = 1
        for _ in 0..<decimals { divisor *= 10 }
        let (quotient, remainder) = product.quotientAndRemainder(dividingBy: divisor)
        let twice = remainder.magnitude * 2
        var result = quotient
        if twice > divisor.magnitude || (twice == divisor.magnitude && quotient % 2 != 0) {
            result += product < 0 ? -1 : 1
        }
        return Int64(clamping: result)
    }
}

import Foundation

/// Dates as JavaScript's `Date.prototype.toISOString()` writes them (`2026-11-25T13:18:33.123Z`):
/// UTC, milliseconds, `Z`. Wyseman's login date, MyCHIPs tickets' expiry and certificates' dates
/// are in this form; reading also takes it without the fraction.
public enum JavaScriptDate {
    /// `date` to the nearest millisecond, written exactly (``string(epochMillis:)``), so what
    /// ``parse(_:)`` read is written back unchanged, centuries ago included.
    public static func string(_ date: Date) -> String {
        guard let millis = Int64(exactly: (date.timeIntervalSince1970 * 1000).rounded()) else {
            return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC")!))
        }
        return string(epochMillis: millis)
    }

    /// An ISO 8601 date as Foundation reads one (a valid calendar date, any offset), at the
    /// millisecond the text names when it is in UTC. Like a JavaScript `Date`, it holds whole
    /// milliseconds: a finer fraction is dropped, so ``string(_:)`` writes back the same instant.
    public static func parse(_ text: String) -> Date? {
        guard let date = (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text)) else {
            return nil
        }
        if let millis = epochMillis(text) { return Date(timeIntervalSince1970: Double(millis) / 1000) }
        return Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }
}

extension JavaScriptDate {
    /// `toISOString()` of a time in Unix milliseconds, by integer arithmetic: exact to the
    /// millisecond, as signed texts need (a `Double` of seconds can show `.122` for `.123`).
    public static func string(epochMillis: Int64) -> String {
        let days = epochMillis >= 0 ? epochMillis / 86_400_000 : (epochMillis - 86_399_999) / 86_400_000
        let inDay = epochMillis - days * 86_400_000
        // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(inDay / 3_600_000, 2)):\(pad(inDay / 60_000 % 60, 2)):"
            + "\(pad(inDay / 1000 % 60, 2)).\(pad(inDay % 1000, 3))Z"
    }

    /// Unix milliseconds of `YYYY-MM-DDTHH:MM:SS[.fff…]Z` (UTC only), exact; nil for anything else.
    public static func epochMillis(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                guard index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
                value = value * 10 + Int64(bytes[index] - 0x30)
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
              bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60 else { return nil }
        var millis: Int64 = 0
        let rest = bytes.count - 1
        if rest > 19 {
            // Any number of fraction digits, of which the first three are the milliseconds: the
            // rest are read as digits only, so a long fraction can never overflow.
            let digits = rest - 20
            guard bytes[19] == UInt8(ascii: "."), digits > 0, bytes[min(23, rest)..<rest].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let fraction = number(20..<min(23, rest)) else { return nil }
            millis = digits >= 3 ? fraction : fraction * (digits == 1 ? 100 : 10)
        }
        // A civil date to days since 1970-01-01.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = month > 2 ? month - 3 : month + 9
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    }
}

import Foundation
import PurseDatabase

/// RFC 3339 timestamps in UTC (`2026-11-21T18:04:05Z`), the format of every `timestamp` field.
///
/// `ISO8601DateFormatter` builds an ICU formatter each time it is created and is not `Sendable`,
/// so hot paths created one per response; this is the same output from integer arithmetic.
public enum InternetDateTime {
    /// Whole seconds, rounded down, with a `Z` suffix.
    public static func string(from date: Date) -> String {
        let seconds = Int64((date.timeIntervalSince1970).rounded(.down))
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = civil(fromDays: days)
        // `YYYY-MM-DDTHH:MM:SSZ`, written into the string's own storage: every write response
        // carries one, made on the database's one writer.
        let text = String(unsafeUninitializedCapacity: 20) { buffer in
            func put(_ value: Int64, at offset: Int, width: Int) {
                var value = value
                for index in stride(from: offset + width - 1, through: offset, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value % 10)
                    value /= 10
                }
            }
            put(min(max(year, 0), 9999), at: 0, width: 4)
            buffer[4] = UInt8(ascii: "-")
            put(month, at: 5, width: 2)
            buffer[7] = UInt8(ascii: "-")
            put(day, at: 8, width: 2)
            buffer[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, at: 11, width: 2)
            buffer[13] = UInt8(ascii: ":")
            put(secondOfDay % 3600 / 60, at: 14, width: 2)
            buffer[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, at: 17, width: 2)
            buffer[19] = UInt8(ascii: "Z")
            return 20
        }
        guard (0...9999).contains(year) else {
            // Years of other widths or signs: the year as `String` writes it, then the rest.
            var yearText = ""
            append(year, width: 4, to: &yearText)
            return yearText + text.dropFirst(4)
        }
        return text
    }

    /// Year, month and day of the proleptic Gregorian calendar for days since 1970-01-01
    /// (H. Hinnant's `civil_from_days`).
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func append(_ value: Int64, width: Int, to text: inout String) {
        let digits = String(value)
        if digits.count < width { text.append(String(repeating: "0", count: width - digits.count)) }
        text.append(digits)
    }
}

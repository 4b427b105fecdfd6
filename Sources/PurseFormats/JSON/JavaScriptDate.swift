import Foundation

/// Dates as JavaScript's `Date.prototype.toISOString()` writes them (`2026-11-25T13:18:33.123Z`):
/// UTC, milliseconds, `Z`. Wyseman's login date, MyCHIPs tickets' expiry and certificates' dates
/// are in this form; reading also takes it without the fraction.
public enum JavaScriptDate {
    public static func string(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC")!))
    }

    public static func parse(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}

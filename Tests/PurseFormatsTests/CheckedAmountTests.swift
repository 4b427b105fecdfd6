import Foundation
import PurseFormats
import Testing

@Suite struct CheckedAmountTests {
    @Test func overflowIsReportedNotWrappedOrTrapped() throws {
        #expect(try CheckedAmount.add(2, 3) == 5)
        #expect(throws: CheckedAmount.Overflow.self) { try CheckedAmount.add(.max, 1) }
        #expect(throws: CheckedAmount.Overflow.self) { try CheckedAmount.add(-2, -.max) }
        #expect(try CheckedAmount.add(-1, -.max) == .min)
        #expect(throws: CheckedAmount.Overflow.self) { try CheckedAmount.subtract(.min, 1) }
        #expect(throws: CheckedAmount.Overflow.self) { try CheckedAmount.negate(.min) }
        #expect(try CheckedAmount.negate(.max) == -.max)
        #expect(throws: CheckedAmount.Overflow.self) { try CheckedAmount.multiply(.max / 2 + 1, 2) }
        #expect(throws: CheckedAmount.Overflow.self) { try CheckedAmount.sum([.max, 1, -5]) }
        #expect(try CheckedAmount.sum([.max, -5, 5]) == .max)
        #expect(CheckedAmount.saturatingSum([.max, .max]) == .max)
        #expect(CheckedAmount.saturatingSum([.min, -1]) == .min)
    }

    /// A client's `X-Timestamp` of Int64.min against the clock: outside any window, no trap.
    @Test func timestampWindowsNeverOverflow() {
        let now: Int64 = 1_790_000_000_000
        #expect(CheckedAmount.within(300_000, now, now - 300_000))
        #expect(!CheckedAmount.within(300_000, now, now - 300_001))
        #expect(!CheckedAmount.within(300_000, now, .min))
        #expect(!CheckedAmount.within(300_000, now, .max))
        #expect(!CheckedAmount.within(300_000, .min, .max))
        #expect(!CheckedAmount.within(.min, 0, 1))
    }

    @Test func doublesBecomeIntegersOnlyWhenTheyFit() {
        #expect(CheckedAmount.exactInteger(42) == 42)
        #expect(CheckedAmount.exactInteger(1e19) == nil)
        #expect(CheckedAmount.exactInteger(.infinity) == nil)
        #expect(CheckedAmount.exactInteger(-.infinity) == nil)
        #expect(CheckedAmount.exactInteger(.nan) == nil)
        #expect(CheckedAmount.exactInteger(2.5) == nil)
        #expect(CheckedAmount.exactInteger(-9_223_372_036_854_775_808) == .min)
    }

    /// JavaScript writes whole doubles below 1e21 as digits: 1e20 is not an Int64, and must not
    /// trap on its way to text (a refusal message quoting a client's `where` value does this).
    @Test func javaScriptNumbersPastInt64() {
        #expect(JavaScriptJSON.stringify(.double(1e20)) == "100000000000000000000")
        #expect(JavaScriptJSON.stringify(.double(-9.5e18)) == "-9500000000000000000")
        #expect(JavaScriptJSON.stringify(.double(1e21)) == "1e+21" || JavaScriptJSON.stringify(.double(1e21)).contains("e"))
    }

    /// A date with a long fraction (a hostile `chit_date`) is read, or refused, without overflow.
    @Test func longDateFractions() {
        #expect(JavaScriptDate.epochMillis("2026-01-01T00:00:00.123Z") == JavaScriptDate.epochMillis("2026-01-01T00:00:00.123999999999999999999999999Z"))
        #expect(JavaScriptDate.epochMillis("2026-01-01T00:00:00.5Z")! % 1000 == 500)
        #expect(JavaScriptDate.epochMillis("2026-01-01T00:00:00.05Z")! % 1000 == 50)
        #expect(JavaScriptDate.epochMillis("2026-01-01T00:00:00.12x4Z") == nil)
        #expect(JavaScriptDate.epochMillis("2026-01-01T00:00:00.Z") == nil)
    }

    /// A date read through `Date` is written back to the millisecond, centuries ago too (the
    /// fuzzer found an invite's `expires` of year 226 losing its millisecond on the way out).
    @Test func datesSurviveTheirOwnWriter() {
        for text in ["0226-12-01T00:00:00.001Z", "1969-12-31T23:59:59.999Z", "2026-11-26T12:03:58.466Z", "9999-12-31T23:59:59.999Z"] {
            #expect(JavaScriptDate.parse(text).map(JavaScriptDate.string) == text)
        }
        #expect(JavaScriptDate.parse("2026-11-26T12:00:00+02:00").map(JavaScriptDate.string) == "2026-11-26T10:00:00.000Z")
        // Finer than a millisecond, a date holds what a JavaScript Date holds: the first three
        // digits (the fuzzer found an invite's expiry that did not read back as itself).
        for (text, written) in [("2026-11-26T12:00:00.1239+02:00", "2026-11-26T10:00:00.123Z"),
                                ("2025-12-01T00:00:00.00005Z-01T00:00:00.00000Z", "2025-12-01T00:00:00.000Z")] {
            guard let date = JavaScriptDate.parse(text) else { continue }
            #expect(JavaScriptDate.string(date) == written)
            #expect(JavaScriptDate.parse(JavaScriptDate.string(date)) == date)
        }
    }

    /// Wrapping arithmetic (`&+`, `&-`, `&*` and their assignments) turns a huge amount into a
    /// small or negative one: it lives only in the hash and curve code, where wrapping is the
    /// algorithm. A new use anywhere else fails here, naming its line.
    @Test func wrappingOperatorsOnlyInHashAndCurveCode() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        let allowed = [
            "Starknet/Arithmetic/",  // Montgomery multiplication and 256-bit limbs
            "Starknet/Curve/",       // constant-time table lookups
            "Starknet/Hashing/",     // Keccak, Pedersen, Poseidon
            "PurseP521/",            // P-521's field limbs and Montgomery products modulo its order
        ]
        let pattern = try Regex(#"&[+\-*]=?"#)
        var found: [String] = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)!
        for case let file as URL in files where file.pathExtension == "swift" {
            let path = String(file.path.dropFirst(sources.path.count + 1))
            if allowed.contains(where: path.hasPrefix) { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                if code.contains(pattern) { found.append("\(path):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))") }
            }
        }
        #expect(found.isEmpty, "wrapping arithmetic outside the hash and curve code:\n\(found.joined(separator: "\n"))")
    }
}

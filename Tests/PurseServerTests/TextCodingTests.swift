import PurseDatabase
import PurseFormats
import Foundation
@testable import PurseServer
import Testing

/// The hand-written encoders of hot paths agree with Foundation's.
@Suite("Text coding")
struct TextCodingTests {
    @Test func hexMatchesFormat() {
        var generator = SystemRandomNumberGenerator()
        for count in [0, 1, 2, 12, 32, 333] {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let expected = bytes.map { String(format: "%02x", $0) }.joined()
            #expect(Hex.encode(bytes) == expected)
            #expect(bytes.withUnsafeBytes { Hex.encode($0) } == expected)
            #expect(Hex.encode(AnySequence(bytes)) == expected, "a sequence without contiguous storage")
        }
        #expect(Hex.encode([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
    }

    /// Byte for byte what the shared encoder writes, for awkward strings too (quotes, backslashes,
    /// every control character, slashes, non-ASCII, empty).
    @Test func jsonObjectWriterMatchesTheEncoder() throws {
        struct Inner: Encodable { var a: Int; var b: String; var c: Bool }
        struct Outer: Encodable { var inner: Inner; var name: String; var ok: Bool; var total: Int }
        var awkward = ["", "plain", "tx_019aa7c3b2e15f0c9d81e4a27b36", "q\"uote\\back/slash", "naïve ₦500 🙂", "2026-11-22T19:00:00Z"]
        awkward.append(String(String.UnicodeScalarView((0..<0x20).compactMap(Unicode.Scalar.init))))
        awkward.append("\u{7F}\u{2028}\u{FEFF}end")
        for text in awkward {
            for number in [0, -1, 7, Int.max, Int.min] {
                let value = Outer(inner: Inner(a: number, b: text, c: number > 0), name: text, ok: number == 0, total: number)
                var inner = JSONObjectWriter()
                inner.field("a", number)
                inner.field("b", text)
                inner.field("c", number > 0)
                var outer = JSONObjectWriter()
                outer.field("inner", inner)
                outer.field("name", text)
                outer.field("ok", number == 0)
                outer.field("total", number)
                let expected = try JSONCoding.encoder.encode(value)
                #expect(outer.data == expected, "\(String(decoding: outer.data, as: UTF8.self)) != \(String(decoding: expected, as: UTF8.self))")
            }
        }
        #expect(JSONObjectWriter().data == Data("{}".utf8))
    }

    @Test func internetDateTimeMatchesISO8601DateFormatter() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        var generator = SystemRandomNumberGenerator()
        // Leap days, year and century boundaries, fractions (rounded down), and random instants
        // from 1970 to 2200.
        var instants: [TimeInterval] = [0, 0.998, 59, 86_399.5, 951_782_400, 951_868_799, 978_307_199, 1_709_164_800, 4_102_444_800, 7_258_118_399]
        // Foundation's formatter works in whole milliseconds (it rounds 32.9996 s up to 33 s;
        // we drop the fraction), so the random fractions are whole milliseconds.
        for _ in 0..<2_000 {
            instants.append(Double(UInt64.random(in: 0...7_258_118_399, using: &generator)) + Double(Int.random(in: 0...998, using: &generator)) / 1000)
        }
        for instant in instants {
            let date = Date(timeIntervalSince1970: instant)
            #expect(InternetDateTime.string(from: date) == formatter.string(from: date), "\(instant)")
        }
        #expect(InternetDateTime.string(from: Date(timeIntervalSince1970: 1_795_284_245)) == "2026-11-21T18:04:05Z")
        // Before 1970, and the edges of four-digit years (the one-buffer path) and past them.
        for instant: TimeInterval in [-1, -86_400.5, -2_208_988_800, -12_219_292_800, 253_402_300_799] {
            let date = Date(timeIntervalSince1970: instant)
            #expect(InternetDateTime.string(from: date) == formatter.string(from: date), "\(instant)")
        }
        #expect(InternetDateTime.string(from: Date(timeIntervalSince1970: 253_402_300_800)) == "10000-01-01T00:00:00Z")
        // RFC 3339 counts in the proleptic Gregorian calendar (Foundation turns Julian before 1582).
        #expect(InternetDateTime.string(from: Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00Z")
    }

    /// The ids' random words come 512 to a system call: across refills, all distinct, and every
    /// bit set about half the time (4,096 words: each bit's count within ±6 standard deviations).
    @Test func pooledRandomWordsAreRandom() {
        let words = (0..<(8 * RandomWords.batch)).map { _ in RandomWords.shared.next() }
        #expect(Set(words).count == words.count)
        for bit in 0..<64 {
            let ones = words.reduce(0) { $0 + Int($1 >> UInt64(bit) & 1) }
            #expect(abs(ones - words.count / 2) < 6 * 32, "bit \(bit): \(ones) of \(words.count)")
        }
        var buffer = [UInt8](repeating: 0, count: 1_000)
        buffer.withUnsafeMutableBytes { RandomWords.fill($0) }
        #expect(buffer.filter { $0 == 0 }.count < 20)
    }

    @Test func randomIDsHaveTheirShape() {
        let ids = (0..<1_000).map { _ in RandomID.make("tx") }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.count == 31 && $0.hasPrefix("tx_") && $0.dropFirst(3).allSatisfy { "0123456789abcdef".contains($0) } })
        // Time first: ids made later sort later; the time part is the current millisecond.
        let millis = UInt64(Date().timeIntervalSince1970 * 1000)
        let stamp = UInt64(ids[0].dropFirst(3).prefix(12), radix: 16) ?? 0
        #expect(stamp <= millis && millis - stamp < 60_000)
        let later = RandomID.make("tx")
        #expect(UInt64(later.dropFirst(3).prefix(12), radix: 16)! >= stamp)
        if let first = ids.first, let last = ids.last, first.prefix(15) != last.prefix(15) { #expect(first < last) }
        #expect(RandomID.bytes(5).count == 5 && RandomID.bytes(0).isEmpty && RandomID.bytes(17).count == 17)
    }
}

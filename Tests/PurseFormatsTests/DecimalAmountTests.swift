import PurseFormats
import Testing

@Suite("Decimal amounts in minor units")
struct DecimalAmountTests {
    @Test func parsesAndFormatsExactly() throws {
        #expect(try DecimalAmount.parse("12.5", decimals: 3) == 12_500)
        #expect(try DecimalAmount.parse("0.001", decimals: 3) == 1)
        #expect(try DecimalAmount.parse("7", decimals: 2) == 700)
        #expect(try DecimalAmount.parse("-0.125", decimals: 3, signed: true) == -125)
        #expect(DecimalAmount.format(12_500, decimals: 3) == "12.5")
        #expect(DecimalAmount.format(12_500, decimals: 3, minimumDecimals: 3) == "12.500")
        #expect(DecimalAmount.format(-125, decimals: 3) == "-0.125")
        #expect(DecimalAmount.format(700, decimals: 2, minimumDecimals: 2) == "7.00")
        #expect(DecimalAmount.format(Int64.min, decimals: 3) == "-9223372036854775.808")
    }

    @Test func refusesWhatIsNotAnAmount() {
        for text in ["", ".5", "5.", "1e3", "+1", "-1", " 1", "1,5", "0x10"] {
            #expect(throws: DecimalAmount.ParseError.malformed, "\(text)") { try DecimalAmount.parse(text, decimals: 3) }
        }
        #expect(throws: DecimalAmount.ParseError.tooManyDecimals(3)) { try DecimalAmount.parse("1.0001", decimals: 3) }
        #expect(throws: DecimalAmount.ParseError.tooLarge) { try DecimalAmount.parse("99999999999999999", decimals: 3) }
    }

    @Test func convertsRoundingHalfToEven() {
        #expect(DecimalAmount.convert(12_500, decimals: 3, rate: 235) == 2_938)   // 29.375 → 29.38
        #expect(DecimalAmount.convert(12_300, decimals: 3, rate: 125) == 1_538)   // 15.375 → 15.38
        #expect(DecimalAmount.convert(10_100, decimals: 3, rate: 125) == 1_262)   // 12.625 → 12.62
        #expect(DecimalAmount.convert(-12_500, decimals: 3, rate: 235) == -2_938)
        #expect(DecimalAmount.convert(Int64.max, decimals: 3, rate: Int64.max) == Int64.max)
    }
}

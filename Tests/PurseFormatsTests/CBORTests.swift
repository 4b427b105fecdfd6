import Foundation
import PurseFormats
import Testing

@Suite("Formats: CBOR")
struct CBORTests {
    func hex(_ data: Data) -> String { Hex.encode(data) }

    /// RFC 8949 appendix A: the encoder writes each example's bytes and the decoder reads them back.
    @Test(arguments: [
        (CBOR.unsigned(0), "00"), (.unsigned(23), "17"), (.unsigned(24), "1818"), (.unsigned(1000), "1903e8"),
        (.unsigned(1_000_000), "1a000f4240"), (.unsigned(1_000_000_000_000), "1b000000e8d4a51000"),
        (.unsigned(UInt64.max), "1bffffffffffffffff"), (.negative(-1), "20"), (.negative(-1000), "3903e7"),
        (.bytes(Data([1, 2, 3, 4])), "4401020304"), (.text("IETF"), "6449455446"), (.text("\u{00fc}"), "62c3bc"),
        (.array([.unsigned(1), .array([.unsigned(2), .unsigned(3)])]), "8201820203"),
        (.map([(.text("a"), .unsigned(1)), (.text("b"), .array([.unsigned(2), .unsigned(3)]))]), "a26161016162820203"),
        (.tagged(1, .unsigned(1_363_896_240)), "c11a514b67b0"), (.bool(false), "f4"), (.bool(true), "f5"),
        (.null, "f6"), (.undefined, "f7"), (.float(1.1), "fb3ff199999999999a"),
    ])
    func appendixAExamples(item: CBOR, expected: String) throws {
        #expect(hex(item.encoded) == expected)
        #expect(try CBORDecoder.decode(item.encoded) == item)
    }

    @Test func intPicksTheMajorTypeBySign() {
        #expect(CBOR.int(7) == .unsigned(7))
        #expect(CBOR.int(-7) == .negative(-7))
        #expect(CBOR.int(-7).intValue == -7)
        // A COSE EC2 key as a WebAuthn authenticator writes it, read back by label.
        let key = CBOR.map([(.int(1), .int(2)), (.int(3), .int(-7)), (.int(-2), .bytes(Data([9])))])
        let decoded = try? CBORDecoder.decode(key.encoded)
        #expect(decoded?[int: 3]?.intValue == -7)
        #expect(decoded?[int: -2]?.bytesValue == Data([9]))
    }

    @Test func decoderReadsOtherEncodersForms() throws {
        // Indefinite-length strings, arrays and maps, and half and single precision floats.
        #expect(try CBORDecoder.decode(Data([0x5f, 0x42, 1, 2, 0x41, 3, 0xff])) == .bytes(Data([1, 2, 3])))
        #expect(try CBORDecoder.decode(Data([0x9f, 0x01, 0x02, 0xff])) == .array([.unsigned(1), .unsigned(2)]))
        #expect(try CBORDecoder.decode(Data([0xbf, 0x61, 0x61, 0x01, 0xff])) == .map([(.text("a"), .unsigned(1))]))
        #expect(try CBORDecoder.decode(Data([0xf9, 0x3c, 0x00])) == .float(1.0))
        #expect(try CBORDecoder.decode(Data([0xfa, 0x47, 0xc3, 0x50, 0x00])) == .float(100_000.0))
    }

    @Test func decoderRefusesMalformedInput() {
        let cases: [(Data, String)] = [
            (Data(), "unexpected end of CBOR"),
            (Data([0x01, 0x02]), "trailing bytes after CBOR item"),
            (Data([0x5a, 0xff, 0xff, 0xff, 0xff]), "CBOR length exceeds input"),
            (Data([0x62, 0xc3, 0x28]), "invalid UTF-8 in CBOR text"),
            (Data([0x1c]), "reserved CBOR additional info 28"),
            (Data(repeating: 0x81, count: 20) + [0x00], "CBOR nested too deeply"),
        ]
        for (bytes, message) in cases {
            #expect(throws: CBORError(message)) { try CBORDecoder.decode(bytes) }
        }
    }
}

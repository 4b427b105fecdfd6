import Foundation
import Testing
@testable import PurseFormats

@Suite("QR codes")
struct QRCodeTests {
    struct Vectors: Decodable {
        struct Case: Decodable {
            var payload: String
            var version: Int
            var level: String
            var mask: Int
            var rows: [String]
        }

        var cases: [Case]
    }

    static let vectors: Vectors = {
        let url = Bundle.module.url(forResource: "qr_vectors", withExtension: "json", subdirectory: "Fixtures")!
        return try! JSONDecoder().decode(Vectors.self, from: Data(contentsOf: url))
    }()

    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }

    static func level(_ text: String) -> QRCode.ErrorCorrection {
        switch text {
        case "L": .low
        case "M": .medium
        case "Q": .quartile
        default: .high
        }
    }

    /// python-qrcode (an independent encoder) draws exactly our modules for the same version and mask.
    @Test func matchesPythonQRCodeModuleForModule() throws {
        #expect(Self.vectors.cases.count >= 50)
        for vector in Self.vectors.cases {
            let code = try QRCode.encode(Self.bytes(vector.payload), errorCorrection: Self.level(vector.level), minVersion: vector.version, mask: vector.mask)
            #expect(code.version == vector.version, "\(vector.version)-\(vector.level)")
            let rows = code.rows.map { row in String(row.map { $0 ? "1" : "0" }) }
            #expect(rows == vector.rows, "version \(vector.version) level \(vector.level) mask \(vector.mask)")
        }
    }

    /// With QR_PNG_DIR set, writes a PNG and the payload's hex per case, for zbarimg (in CI).
    @Test func writesPNGsForAnIndependentDecoder() throws {
        guard let directory = ProcessInfo.processInfo.environment["QR_PNG_DIR"] else { return }
        for (index, vector) in Self.vectors.cases.enumerated() {
            let code = try QRCode.encode(Self.bytes(vector.payload), errorCorrection: Self.level(vector.level), minVersion: vector.version)
            try Data(code.png(scale: 4)).write(to: URL(fileURLWithPath: "\(directory)/case\(index)-v\(vector.version)\(vector.level).png"))
            try Data(vector.payload.utf8).write(to: URL(fileURLWithPath: "\(directory)/case\(index)-v\(vector.version)\(vector.level).hex"))
        }
    }

    /// The whole-line penalty (versions up to 25) scores every symbol as the module-by-module one.
    @Test func bothPenaltiesAgree() throws {
        // A fixed linear congruential sequence: the same symbols every run.
        var state: UInt64 = 7
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        for version in [1, 2, 7, 10, 17, 25] {
            for _ in 0..<20 {
                var symbol = Symbol(version: version)
                symbol.modules = (0..<(symbol.size * symbol.size)).map { _ in next() % 3 == 0 }
                #expect(symbol.penaltyByLines() == symbol.penaltyByModules(), "version \(version)")
            }
            // Real symbols under every mask too.
            var real = Symbol(version: version)
            real.drawFunctionPatterns(errorCorrection: .medium)
            real.drawCodewords(QRCode.codewords(Array(repeating: 0x5A, count: 10), version: version, .medium))
            for mask in 0..<8 {
                var masked = real
                masked.applyMask(mask)
                #expect(masked.penaltyByLines() == masked.penaltyByModules(), "version \(version) mask \(mask)")
            }
        }
    }

    /// The mask search on lines picks the mask the search module by module picks, at every
    /// version it serves and every level.
    @Test func bothMaskSearchesAgree() throws {
        var state: UInt64 = 11
        func next() -> UInt8 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
        var chosen = Set<Int>()
        for version in 1...25 {
            for level in QRCode.ErrorCorrection.allCases {
                var symbol = Symbol(version: version)
                symbol.drawFunctionPatterns(errorCorrection: level)
                let count = QRCode.byteCapacity(version: version, level)
                symbol.drawCodewords(QRCode.codewords((0..<count).map { _ in next() }, version: version, level))
                let byLines = symbol.bestMaskByLines(errorCorrection: level)
                #expect(byLines == symbol.bestMaskByModules(errorCorrection: level), "version \(version) level \(level)")
                chosen.insert(byLines)
            }
        }
        #expect(chosen.count >= 6, "the symbols exercise most masks: \(chosen.sorted())")
    }

    @Test func capacityAndRefusals() throws {
        #expect(QRCode.byteCapacity(version: 1, .low) == 17)
        #expect(QRCode.byteCapacity(version: 40, .low) == 2953)
        #expect(QRCode.byteCapacity(version: 40, .high) == 1273)
        #expect(try QRCode.encode(Array(repeating: 0x41, count: 17), errorCorrection: .low).version == 1)
        #expect(try QRCode.encode(Array(repeating: 0x41, count: 18), errorCorrection: .low).version == 2)
        #expect(throws: QRCode.Failure.tooLong(bytes: 2954, capacity: 2953)) { try QRCode.encode(Array(repeating: 0, count: 2954), errorCorrection: .low) }
        #expect(throws: QRCode.Failure.invalidMask) { try QRCode.encode([1], mask: 8) }
        #expect(throws: QRCode.Failure.invalidVersion) { try QRCode.encode([1], minVersion: 41) }
    }

    @Test func renderings() throws {
        let code = try QRCode.encode(text: "https://mychips.org/ticket?host=localhost&port=8080")
        #expect(code.size == 17 + 4 * code.version)
        let png = code.png(scale: 2)
        #expect(Array(png.prefix(8)) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        #expect(Array(png.suffix(12)) == [0, 0, 0, 0, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82])
        #expect(code.svg().hasPrefix("<svg") && code.svg().contains("<path d=\"M"))
        let lines = code.terminal(border: 2).split(separator: "\n")
        #expect(lines.count == (code.size + 4 + 1) / 2 && lines.allSatisfy { $0.count == code.size + 4 })
    }
}

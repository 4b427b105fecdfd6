import Foundation
import PurseFormats

/// PurseFormats' parsers: JSON, CBOR, JavaScript dates, decimal amounts, base64url, hex, URI
/// components, checked arithmetic, WebAuthn authenticator data, image headers and PDF text.
enum FormatsHarness {
    static func run(_ target: FuzzTarget, _ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        switch target {
        case .strictjson:
            guard let value = try? StrictJSON.parse(bytes) else { return }
            // What is accepted is written back (JavaScript's way, keys sorted) and read as the same value.
            let written = JavaScriptJSON.stringify(value)
            guard let again = try? StrictJSON.parse(Array(written.utf8)) else { fatalError("its own output does not parse: \(written.prefix(200))") }
            require(JavaScriptJSON.stringify(again) == written, "round trip changed \(written.prefix(200))")
        case .cbor:
            guard let value = try? CBORDecoder.decode(Data(bytes)) else { return }
            _ = try? CBORDecoder.decode(value.encoded)
        case .jsdate:
            guard let millis = JavaScriptDate.epochMillis(text) else { return }
            let written = JavaScriptDate.string(epochMillis: millis)
            require(JavaScriptDate.epochMillis(written) == millis, "\(text) → \(millis) → \(written)")
        case .decimal:
            guard let first = bytes.first else { return }
            let decimals = Int(first % 7)
            let body = String(decoding: bytes.dropFirst(), as: UTF8.self)
            guard let units = try? DecimalAmount.parse(body, decimals: decimals, signed: first & 0x80 != 0) else { return }
            let written = DecimalAmount.format(units, decimals: decimals)
            require((try? DecimalAmount.parse(written, decimals: decimals, signed: true)) == units, "\(body) → \(units) → \(written)")
        case .base64url:
            guard let data = Base64URL.decode(text) else { return }
            require(Base64URL.decode(Base64URL.encode(data)) == data, "base64url round trip of \(text.prefix(80))")
        case .hex:
            guard let decoded = Hex.decode(text) else { return }
            require(Hex.decode(Hex.encode(decoded)) == decoded, "hex round trip of \(text.prefix(80))")
        case .uri:
            let encoded = URIComponent.encode(text)
            require(encoded.utf8.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: " ") }, "URIComponent left \(encoded.prefix(80))")
            require(encoded.removingPercentEncoding == text, "URIComponent round trip of \(text.prefix(80))")
        case .checked:
            // Four Int64s from the bytes: every checked operation agrees with 128-bit arithmetic.
            guard bytes.count >= 16 else { return }
            let a = bytes[0..<8].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            let b = bytes[8..<16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            func agrees(_ result: Int64?, _ wide: Int128) -> Bool { result.map { Int128($0) == wide } ?? (wide < Int128(Int64.min) || wide > Int128(Int64.max)) }
            require(agrees(try? CheckedAmount.add(a, b), Int128(a) + Int128(b)), "add \(a) \(b)")
            require(agrees(try? CheckedAmount.subtract(a, b), Int128(a) - Int128(b)), "subtract \(a) \(b)")
            require(agrees(try? CheckedAmount.multiply(a, b), Int128(a) * Int128(b)), "multiply \(a) \(b)")
            require(agrees(try? CheckedAmount.negate(a), -Int128(a)), "negate \(a)")
            let window = Int64(bytes.count)
            let distance = Int128(a) - Int128(b)
            require(CheckedAmount.within(window, a, b) == (distance.magnitude <= UInt128(window)), "within \(window) \(a) \(b)")
            require(Int128(CheckedAmount.saturatingSum([a, b, a])) == max(Int128(Int64.min), min(Int128(Int64.max), 2 * Int128(a) + Int128(b))), "saturating \(a) \(b)")
        case .authdata:
            _ = try? AuthenticatorData(Data(bytes))
        case .imageheader:
            // What is read as an image has a size and the magic of its format.
            guard let header = ImageHeader.read(bytes) else { return }
            require(header.width > 0 && header.height > 0, "a \(header.format) of \(header.width)×\(header.height)")
            let magic: [UInt8] = switch header.format {
            case .jpeg: [0xFF, 0xD8]
            case .png: [0x89, 0x50, 0x4E, 0x47]
            case .gif: Array("GIF8".utf8)
            }
            require(bytes.starts(with: magic), "\(header.format) without its magic")
        case .pdftext:
            // Any text makes a document whose cross-reference table points at its objects.
            var document = PDFText(title: String(text.prefix(40)))
            for paragraph in text.split(separator: "\u{0}", maxSplits: 8) { document.add(String(paragraph)) }
            let pdf = [UInt8](document.data())
            let written = String(decoding: pdf, as: UTF8.self)
            guard let mark = written.range(of: "startxref\n", options: .backwards), let xref = Int(written[mark.upperBound...].prefix { $0.isNumber }) else {
                fatalError("no startxref")
            }
            require(xref + 4 <= pdf.count && Array(pdf[xref..<(xref + 4)]) == Array("xref".utf8), "startxref does not name the table")
            let lines = String(decoding: pdf[xref...], as: UTF8.self).split(separator: "\n")
            let count = lines.count > 1 ? Int(lines[1].split(separator: " ").last ?? "") ?? 0 : 0
            for object in 1..<max(count, 1) {
                guard 2 + object < lines.count, let offset = Int(lines[2 + object].prefix(10)) else { fatalError("entry \(object) missing") }
                let label = Array("\(object) 0 obj".utf8)
                require(offset + label.count <= pdf.count && Array(pdf[offset..<(offset + label.count)]) == label, "object \(object) not at its offset")
            }
        default: return
        }
    }
}

/// JSON text exactly as Python's `json.dumps(value, separators=(',', ':'), sort_keys=True)`
/// writes it — the serialization MyCHIPs hashes (`mychips.j2h`) for tally digests, chit digests
/// and the chit hash chain, so that a digest made here is the digest the real backend (or any
/// Python checker) makes of the same record.
///
/// Keys are sorted by code point, there are no spaces, and `ensure_ascii` holds: every character
/// outside printable ASCII is written `\uXXXX` (lower-case hex; characters beyond the BMP as a
/// surrogate pair), with `\b \f \n \r \t` by name.
public enum PythonJSON {
    public static func dumps(_ value: JSONValue) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        append(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func append(_ value: JSONValue, to out: inout [UInt8]) {
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .int(let number): out += Array(String(number).utf8)
        case .uint(let number): out += Array(String(number).utf8)
        case .double(let number): out += Array(formatDouble(number).utf8)
        case .string(let text): appendString(text, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                append(item, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted(by: { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                append(members[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// `repr(float)`: the shortest text that reads back as the same number, `1.0` for whole
    /// numbers, exponents from 1e16 up and below 1e-4 (`1e-05`, `1e+16`), as Swift writes them too.
    private static func formatDouble(_ number: Double) -> String {
        guard number.isFinite else { return number.isNaN ? "NaN" : (number < 0 ? "-Infinity" : "Infinity") }
        return String(number)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func appendString(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for unit in text.utf16 {
            switch unit {
            case 0x22: out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case 0x5C: out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x08: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x20...0x7E: out.append(UInt8(unit))
            default:
                out += [UInt8(ascii: "\\"), UInt8(ascii: "u"),
                        hexDigits[Int(unit >> 12)], hexDigits[Int((unit >> 8) & 0xf)], hexDigits[Int((unit >> 4) & 0xf)], hexDigits[Int(unit & 0xf)]]
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

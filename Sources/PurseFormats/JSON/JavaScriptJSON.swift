/// JSON text exactly as JavaScript's `JSON.stringify` writes it, for texts that are signed by one
/// side and rebuilt by the other: Wyseman's login message (`{ip, cookie, userAgent, date}` in
/// that order) and MyCHIPs' stable JSON of tallies and chits (keys sorted).
///
/// `JSON.stringify` writes no spaces, escapes only `"`, `\`, the control characters (`\b \f \n
/// \r \t` by name, the rest as `\u00xx`) and lone surrogates, and leaves `/` and every other
/// character as it is. Members whose value is `undefined` are left out; here that is a member the
/// caller does not pass (`null` is written as `null`).
public enum JavaScriptJSON {
    /// An object whose members keep the order given.
    public static func object(_ members: [(key: String, value: JSONValue)]) -> String {
        var out = "{"
        for (index, member) in members.enumerated() {
            if index > 0 { out += "," }
            appendString(member.key, to: &out)
            out += ":"
            append(member.value, sortingKeys: false, to: &out)
        }
        return out + "}"
    }

    /// Any value; object members in code-point order of their keys when `sortingKeys` (MyCHIPs'
    /// "stable" JSON), else in the order a dictionary happens to hold them.
    public static func stringify(_ value: JSONValue, sortingKeys: Bool = true) -> String {
        var out = ""
        append(value, sortingKeys: sortingKeys, to: &out)
        return out
    }

    /// MyCHIPs' stable JSON, the text tallies and chits are signed over: keys sorted, no spaces,
    /// and object members whose value is null left out (at every depth; array items stay).
    public static func stable(_ value: JSONValue) -> String {
        stringify(droppingNulls(value), sortingKeys: true)
    }

    private static func droppingNulls(_ value: JSONValue) -> JSONValue {
        switch value {
        // `Optional.none`, not `nil`: JSONValue is itself nil-literal-expressible.
        case .object(let members): .object(members.compactMapValues { $0.isNull ? Optional<JSONValue>.none : droppingNulls($0) })
        case .array(let items): .array(items.map(droppingNulls))
        default: value
        }
    }

    /// A string literal with its quotes.
    public static func quoted(_ text: String) -> String {
        var out = ""
        appendString(text, to: &out)
        return out
    }

    private static func append(_ value: JSONValue, sortingKeys: Bool, to out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .int(let number): out += String(number)
        case .uint(let number): out += String(number)
        case .double(let number): out += number.isFinite ? formatDouble(number) : "null"
        case .string(let text): appendString(text, to: &out)
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                append(item, sortingKeys: sortingKeys, to: &out)
            }
            out += "]"
        case .object(let members):
            // JavaScript orders keys by UTF-16 code units; for the ASCII keys of these protocols
            // that is the same as Swift's `<` on strings.
            let keys = sortingKeys ? members.keys.sorted { Array($0.utf16).lexicographicallyPrecedes(Array($1.utf16)) } : Array(members.keys)
            out += "{"
            for (index, key) in keys.enumerated() {
                if index > 0 { out += "," }
                appendString(key, to: &out)
                out += ":"
                append(members[key]!, sortingKeys: sortingKeys, to: &out)
            }
            out += "}"
        }
    }

    /// Whole numbers as integers (`1`, not `1.0`), as JavaScript has one number type.
    private static func formatDouble(_ number: Double) -> String {
        // Int128 holds every whole double below 1e21 (JavaScript's switch to exponent form).
        if number == number.rounded(), abs(number) < 1e21 { return String(Int128(number)) }
        return String(number)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func appendString(_ text: String, to out: inout String) {
        var text = text
        // Most strings need no escape: copy their UTF-8 as it is.
        let clean = text.withUTF8 { bytes in !bytes.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") } }
        out += "\""
        if clean {
            out += text
        } else {
            var escaped: [UInt8] = []
            escaped.reserveCapacity(text.utf8.count + 8)
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): escaped += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
                case UInt8(ascii: "\\"): escaped += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case 0x08: escaped += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
                case 0x0C: escaped += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
                case 0x0A: escaped += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case 0x0D: escaped += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case 0x09: escaped += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case 0x00..<0x20:
                    escaped += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xf)]]
                default: escaped.append(byte)
                }
            }
            out += String(decoding: escaped, as: UTF8.self)
        }
        out += "\""
    }
}

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
        String(decoding: objectBytes(members), as: UTF8.self)
    }

    /// ``object(_:)``'s UTF-8, for a writer that sends bytes (a websocket frame) without making
    /// a `String` of them first.
    public static func objectBytes(_ members: [(key: String, value: JSONValue)]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendString(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            append(member.value, sortingKeys: false, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Any value; object members in code-point order of their keys when `sortingKeys` (MyCHIPs'
    /// "stable" JSON), else in the order a dictionary happens to hold them.
    public static func stringify(_ value: JSONValue, sortingKeys: Bool = true) -> String {
        var out: [UInt8] = []
        append(value, sortingKeys: sortingKeys, to: &out)
        return String(decoding: out, as: UTF8.self)
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
        var out: [UInt8] = []
        appendString(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    // The text is written as UTF-8 bytes and made a `String` once: appending through `String`
    // cost more than the rest of a Wyseman answer's writing.
    private static func append(_ value: JSONValue, sortingKeys: Bool, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .int(let number): out.append(contentsOf: String(number).utf8)
        case .uint(let number): out.append(contentsOf: String(number).utf8)
        case .double(let number): out.append(contentsOf: (number.isFinite ? formatDouble(number) : "null").utf8)
        case .string(let text): appendString(text, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                append(item, sortingKeys: sortingKeys, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            // JavaScript orders keys by UTF-16 code units; for the ASCII keys of these protocols
            // that is the same as Swift's `<` on strings.
            out.append(UInt8(ascii: "{"))
            var first = true
            func member(_ key: String, _ value: JSONValue) {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                append(value, sortingKeys: sortingKeys, to: &out)
            }
            if sortingKeys {
                for (key, value) in members.sorted(by: { $0.key.utf16.lexicographicallyPrecedes($1.key.utf16) }) { member(key, value) }
            } else {
                for (key, value) in members { member(key, value) }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Whole numbers as integers (`1`, not `1.0`), as JavaScript has one number type.
    private static func formatDouble(_ number: Double) -> String {
        // Int128 holds every whole double below 1e21 (JavaScript's switch to exponent form).
        if number == number.rounded(), abs(number) < 1e21 { return String(Int128(number)) }
        return String(number)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func appendString(_ text: String, to out: inout [UInt8]) {
        var text = text
        out.append(UInt8(ascii: "\""))
        text.withUTF8 { bytes in
            // Most strings need no escape: copy their UTF-8 as it is.
            guard bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                out.append(contentsOf: bytes)
                return
            }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
                case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case 0x08: out += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
                case 0x0C: out += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
                case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case 0x00..<0x20:
                    out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xf)]]
                default: out.append(byte)
                }
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

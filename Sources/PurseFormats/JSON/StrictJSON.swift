/// RFC 8259's JSON grammar, checked strictly, plus the rule that an object names each key once.
///
/// Request bodies are checked with it before they are decoded: decoders differ in what they
/// forgive (a trailing comma, a repeated key whose first or last value wins, a leading zero), and
/// a body that one part of a system reads one way and another part another way is how requests
/// get smuggled past checks. A body that passes means one thing to every reader.
public enum StrictJSON {
    /// Why a text is not strict JSON, with the byte offset where that was found.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public var reason: String
        public var offset: Int
        public var description: String { "\(reason) at byte \(offset)" }

        public init(reason: String, offset: Int) {
            self.reason = reason
            self.offset = offset
        }
    }

    /// How deeply arrays and objects may nest.
    public static let maximumDepth = 64

    /// Checks that `bytes` is exactly one JSON value (with whitespace around it) in RFC 8259's
    /// grammar, that no object repeats a key (compared after unescaping), and that nesting stays
    /// within ``maximumDepth``.
    public static func validate(_ bytes: some Collection<UInt8>) throws(Failure) {
        _ = try scan(Array(bytes), building: false)
    }

    /// Checks `bytes` as ``validate(_:)`` does and returns the value, in the same pass: whole
    /// numbers as `int` (or `uint` above `Int64.max`), others as `double`.
    /// For documents read as data (Wyseman frames, JSON-RPC): several times faster than decoding
    /// ``JSONValue`` through `JSONDecoder`, which must try each type in turn.
    public static func parse(_ bytes: some Collection<UInt8>) throws(Failure) -> JSONValue {
        try scan(Array(bytes), building: true)
    }

    private static func scan(_ array: [UInt8], building: Bool) throws(Failure) -> JSONValue {
        var scanner = Scanner(bytes: array, building: building)
        scanner.skipWhitespace()
        let value = try scanner.value(depth: 0)
        scanner.skipWhitespace()
        guard scanner.index == array.count else { throw scanner.failure("text after the JSON value") }
        return value
    }

    /// The UTF-8 bytes of a JSON string's content (between its quotes, its escapes already
    /// known to be well formed: `\\` + one of `"\\/bfnrt`, or `\\u` + four hex digits), escapes
    /// resolved; nil when a `\\u` escape is a surrogate without its other half (readers differ
    /// on those).
    public static func unescaped(_ content: some Collection<UInt8>) -> [UInt8]? {
        let raw = Array(content)
        var utf8: [UInt8] = []
        utf8.reserveCapacity(raw.count)
        var index = 0
        func hex4(at index: Int) -> UInt32 {
            raw[index..<index + 4].reduce(0) { $0 << 4 | UInt32(hexValue($1) ?? 0) }
        }
        while index < raw.count {
            let byte = raw[index]
            index += 1
            guard byte == UInt8(ascii: "\\") else { utf8.append(byte); continue }
            let escape = raw[index]
            index += 1
            switch escape {
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(at: index)
                index += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    guard index + 6 <= raw.count, raw[index] == UInt8(ascii: "\\"), raw[index + 1] == UInt8(ascii: "u") else { return nil }
                    let low = hex4(at: index + 2)
                    guard (0xDC00..<0xE000).contains(low) else { return nil }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                } else if (0xDC00..<0xE000).contains(scalar) {
                    return nil
                }
                utf8.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
            default:  // ", \, /
                utf8.append(escape)
            }
        }
        return utf8
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private struct Scanner {
        let bytes: [UInt8]
        /// Whether to build the values (``StrictJSON/parse(_:)``) or only check them (`null` stands in).
        let building: Bool
        var index = 0
        /// How many members the last object finished at each depth had (building only). The
        /// next object at that depth starts with room for as many — the rows of an answer have
        /// the same members — instead of rehashing its members at every doubling. An object
        /// reserves no more than the one before it at its depth held, so what is reserved stays
        /// within twice what the input's objects hold.
        var lastMemberCounts: [Int]

        init(bytes: [UInt8], building: Bool) {
            self.bytes = bytes
            self.building = building
            lastMemberCounts = building ? [Int](repeating: 0, count: StrictJSON.maximumDepth + 2) : []
        }

        func failure(_ reason: String) -> Failure { Failure(reason: reason, offset: index) }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func expect(_ byte: UInt8, _ what: String) throws(Failure) {
            guard current == byte else { throw failure("expected \(what)") }
            index += 1
        }

        mutating func value(depth: Int) throws(Failure) -> JSONValue {
            guard let byte = current else { throw failure("expected a value") }
            switch byte {
            case UInt8(ascii: "{"): return try object(depth: depth + 1)
            case UInt8(ascii: "["): return try array(depth: depth + 1)
            case UInt8(ascii: "\""):
                if building { return .string(try stringValue()) }
                _ = try string()
                return .null
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
            default: throw failure("expected a value")
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let text = UnsafeRawBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
            guard index + text.count <= bytes.count, zip(bytes[index...], text).allSatisfy({ $0 == $1 }) else {
                throw failure("expected a value")
            }
            index += text.count
        }

        mutating func object(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= StrictJSON.maximumDepth else { throw failure("nested too deeply") }
            index += 1
            skipWhitespace()
            if current == UInt8(ascii: "}") { index += 1; return building ? .object([:]) : .null }
            var keys: Set<[UInt8]> = []
            var members: [String: JSONValue] = building ? Dictionary(minimumCapacity: lastMemberCounts[depth]) : [:]
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else {
                    throw failure(current == UInt8(ascii: "}") ? "trailing comma" : "expected a key")
                }
                let start = index
                var name = ""
                if building {
                    // A repeated key is found when its member is stored (one hash, not two).
                    name = try stringValue()
                } else {
                    let key = try string()
                    guard keys.insert(key).inserted else {
                        index = start
                        throw failure("repeated key \"\(String(decoding: key, as: UTF8.self))\"")
                    }
                }
                skipWhitespace()
                try expect(UInt8(ascii: ":"), "':'")
                skipWhitespace()
                let member = try value(depth: depth)
                if building, members.updateValue(member, forKey: name) != nil {
                    index = start
                    throw failure("repeated key \"\(name)\"")
                }
                skipWhitespace()
                if current == UInt8(ascii: ",") { index += 1; continue }
                try expect(UInt8(ascii: "}"), "',' or '}'")
                guard building else { return .null }
                lastMemberCounts[depth] = members.count
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws(Failure) -> JSONValue {
            guard depth <= StrictJSON.maximumDepth else { throw failure("nested too deeply") }
            index += 1
            skipWhitespace()
            if current == UInt8(ascii: "]") { index += 1; return building ? .array([]) : .null }
            var items: [JSONValue] = []
            while true {
                skipWhitespace()
                if current == UInt8(ascii: "]") { throw failure("trailing comma") }
                let item = try value(depth: depth)
                if building { items.append(item) }
                skipWhitespace()
                if current == UInt8(ascii: ",") { index += 1; continue }
                try expect(UInt8(ascii: "]"), "',' or ']'")
                return building ? .array(items) : .null
            }
        }

        /// A string as ``string()`` checks it, as a `String`: without escapes, straight from its
        /// bytes (validated once).
        mutating func stringValue() throws(Failure) -> String {
            let start = index + 1
            var end = start
            var ascii = true
            while end < bytes.count {
                let byte = bytes[end]
                if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                if byte >= 0x80 { ascii = false }
                end += 1
            }
            if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
                // ASCII is UTF-8 as it stands; anything else is validated (and refused when it is
                // not UTF-8) by the standard library's generic path.
                let text: String
                if ascii {
                    text = bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[start..<end]), as: UTF8.self) }
                } else {
                    guard let valid = String(validating: bytes[start..<end], as: UTF8.self) else { throw Failure(reason: "string is not UTF-8", offset: index) }
                    text = valid
                }
                index = end + 1
                return text
            }
            return String(decoding: try string(), as: UTF8.self)
        }

        /// A string whose grammar it checks; returns its value's UTF-8 bytes (escapes resolved by
        /// ``StrictJSON/unescaped(_:)``, for comparing keys).
        mutating func string() throws(Failure) -> [UInt8] {
            let start = index
            index += 1
            while true {
                guard let byte = current else { throw failure("unterminated string") }
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    let content = bytes[(start + 1)..<(index - 1)]
                    guard String(validating: content, as: UTF8.self) != nil else { throw Failure(reason: "string is not UTF-8", offset: start) }
                    guard let value = StrictJSON.unescaped(content) else { throw Failure(reason: "unpaired surrogate", offset: start) }
                    return value
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escaped = current else { throw failure("unterminated string") }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"),
                         UInt8(ascii: "r"), UInt8(ascii: "t"):
                        continue
                    case UInt8(ascii: "u"):
                        guard index + 4 <= bytes.count, bytes[index..<index + 4].allSatisfy({ StrictJSON.hexValue($0) != nil }) else {
                            throw failure("invalid \\u escape")
                        }
                        index += 4
                    default:
                        throw failure("invalid escape")
                    }
                case 0x00..<0x20:
                    throw failure("control character in string")
                default:
                    index += 1
                }
            }
        }

        mutating func number() throws(Failure) -> JSONValue {
            let start = index
            var integral = true
            if current == UInt8(ascii: "-") { index += 1 }
            guard let first = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { throw failure("invalid number") }
            index += 1
            if first == UInt8(ascii: "0"), let next = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(next) {
                throw failure("leading zero in number")
            }
            skipDigits()
            if current == UInt8(ascii: ".") {
                index += 1
                integral = false
                guard skipDigits() > 0 else { throw failure("invalid number") }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                integral = false
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard skipDigits() > 0 else { throw failure("invalid number") }
            }
            guard building else { return .null }
            if integral, index - start <= 18 {
                // Up to 18 digits fit an Int64 whatever they are.
                var value: Int64 = 0
                var position = start
                let negative = bytes[position] == UInt8(ascii: "-")
                if negative { position += 1 }
                while position < index {
                    value = value * 10 + Int64(bytes[position] - UInt8(ascii: "0"))
                    position += 1
                }
                return .int(negative ? -value : value)
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if integral {
                if let value = Int64(text) { return .int(value) }
                if let value = UInt64(text) { return .uint(value) }
            }
            let number = Double(text) ?? .nan
            // A whole number written with a fraction or exponent (`1.0`, `-0.5e+3`) is an integer,
            // as JSONDecoder reads it.
            if number == number.rounded(), abs(number) < 9.2e18 { return .int(Int64(number)) }
            return .double(number)
        }

        @discardableResult
        mutating func skipDigits() -> Int {
            let start = index
            while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
            return index - start
        }
    }
}

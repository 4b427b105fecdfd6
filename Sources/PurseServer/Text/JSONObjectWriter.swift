import Foundation

/// A JSON object written field by field, byte for byte as ``JSONCoding/encoder`` writes it when
/// the fields come in its (sorted) key order.
///
/// For the few responses built inside a write transaction — a money-moving request's answer is
/// stored with its idempotency key in the same transaction, so on SQLite it is encoded while
/// every other write waits — where `JSONEncoder`'s setup per call cost more than the rest of the
/// encoding. Everywhere else, encode `Codable` types as usual.
public struct JSONObjectWriter: Sendable {
    private var text = "{"
    private var empty = true

    public init() {}

    public mutating func field(_ key: String, _ value: String) {
        name(key)
        Self.appendString(value, to: &text)
    }

    public mutating func field(_ key: String, _ value: Int) {
        name(key)
        text += String(value)
    }

    public mutating func field(_ key: String, _ value: Bool) {
        name(key)
        text += value ? "true" : "false"
    }

    public mutating func field(_ key: String, _ object: JSONObjectWriter) {
        name(key)
        text += object.closed
    }

    /// The object's bytes.
    public var data: Data { Data(closed.utf8) }

    private var closed: String { text + "}" }

    private mutating func name(_ key: String) {
        if !empty { text += "," }
        empty = false
        Self.appendString(key, to: &text)
        text += ":"
    }

    /// A JSON string as `JSONEncoder` writes it with `.withoutEscapingSlashes`: quote, backslash
    /// and control characters escaped (the common ones by letter), everything else as is.
    static func appendString(_ value: String, to text: inout String) {
        text += "\""
        var plain = value.unicodeScalars.startIndex
        let scalars = value.unicodeScalars
        for index in scalars.indices {
            let scalar = scalars[index]
            let escaped: String
            switch scalar {
            case "\"": escaped = "\\\""
            case "\\": escaped = "\\\\"
            case "\n": escaped = "\\n"
            case "\r": escaped = "\\r"
            case "\t": escaped = "\\t"
            case "\u{8}": escaped = "\\b"
            case "\u{C}": escaped = "\\f"
            case _ where scalar.value < 0x20:
                escaped = "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: continue
            }
            text.unicodeScalars.append(contentsOf: scalars[plain..<index])
            text += escaped
            plain = scalars.index(after: index)
        }
        text.unicodeScalars.append(contentsOf: scalars[plain...])
        text += "\""
    }
}

import PurseDatabase
import PurseFormats
import Foundation

/// A JSON object written field by field, byte for byte as ``JSONCoding/encoder`` writes it when
/// the fields come in its (sorted) key order.
///
/// For the few responses built inside a write transaction — a money-moving request's answer is
/// stored with its idempotency key in the same transaction, so on SQLite it is encoded while
/// every other write waits — where `JSONEncoder`'s setup per call cost more than the rest of the
/// encoding. Everywhere else, encode `Codable` types as usual.
///
/// Works on UTF-8 bytes: a profile of the busiest write request showed appending through `String`'s scalar
/// views costing more than the SQL statements it sits between.
public struct JSONObjectWriter: Sendable {
    private var bytes: [UInt8]

    public init() {
        bytes = [UInt8(ascii: "{")]
        bytes.reserveCapacity(256)
    }

    public mutating func field(_ key: String, _ value: String) {
        name(key)
        Self.appendString(value, to: &bytes)
    }

    public mutating func field(_ key: String, _ value: Int) {
        name(key)
        Self.appendInteger(value, to: &bytes)
    }

    public mutating func field(_ key: String, _ value: Bool) {
        name(key)
        bytes.append(contentsOf: value ? Self.true : Self.false)
    }

    public mutating func field(_ key: String, _ value: Int64) {
        name(key)
        Self.appendInteger(Int(value), to: &bytes)
    }

    /// A field `JSONEncoder` writes only when it has a value (`encodeIfPresent`).
    public mutating func field(_ key: String, ifPresent value: String?) {
        if let value { field(key, value) }
    }

    /// A field `JSONEncoder` writes only when it has a value (`encodeIfPresent`).
    public mutating func field(_ key: String, ifPresent value: Int64?) {
        if let value { field(key, value) }
    }

    /// An array of objects.
    public mutating func field(_ key: String, _ objects: [JSONObjectWriter]) {
        name(key)
        bytes.append(UInt8(ascii: "["))
        for (index, object) in objects.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: object.bytes)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func field(_ key: String, _ object: JSONObjectWriter) {
        name(key)
        bytes.append(contentsOf: object.bytes)
        bytes.append(UInt8(ascii: "}"))
    }

    /// The object's bytes.
    public var data: Data {
        var data = Data(capacity: bytes.count + 1)
        data.append(contentsOf: bytes)
        data.append(UInt8(ascii: "}"))
        return data
    }

    private static let `true` = Array("true".utf8)
    private static let `false` = Array("false".utf8)

    private mutating func name(_ key: String) {
        if bytes.count > 1 { bytes.append(UInt8(ascii: ",")) }
        Self.appendString(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Decimal digits, as `JSONEncoder` writes an `Int`.
    static func appendInteger(_ value: Int, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            bytes.append(contentsOf: buffer[(20 - count)...])
        }
    }

    /// A JSON string as `JSONEncoder` writes it with `.withoutEscapingSlashes`: quote, backslash
    /// and control characters escaped (the common ones by letter), everything else — multi-byte
    /// UTF-8 included — as is.
    static func appendString(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var plain = 0
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plain..<index]))
                bytes.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), Hex.digit(byte >> 4), Hex.digit(byte & 0xF)])
                }
                plain = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plain...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

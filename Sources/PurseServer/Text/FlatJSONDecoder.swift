import Foundation
import NIOCore
import PurseDatabase
import PurseFormats

/// A fast path in front of Foundation's `JSONDecoder` for the documents the hot routes receive:
/// one JSON object whose values are strings, numbers, booleans or null — a purchase's body, a
/// token's header and claims.
///
/// It reads such a document in one pass without allocating for keys, and hands `Decodable` types
/// a decoder that finds members by comparing bytes. Foundation's decoder spent about a fifth of the
/// request threads' time on three such objects per request (scanning into a map, a dictionary of
/// keys per container, coding-path bookkeeping, generic metadata lookups).
///
/// It never answers differently from Foundation: where a document or a type asks for anything it
/// does not read exactly as Foundation would — nested values, duplicate keys, escaped keys, lone
/// surrogates, numbers that are not plain integers where an integer is asked for, non-primitive
/// members other than string- or number-backed enums, any decoding error — it returns nil and the
/// caller decodes with Foundation, which also makes the error messages.
public struct FlatJSONDecoder: Sendable {
    public init() {}

    /// `T` decoded from `bytes`, or nil when Foundation must decide (see the type's discussion).
    public func decodeIfFlat<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) -> T? {
        guard let object = FlatJSONObject(parsing: bytes) else { return nil }
        return try? T(from: FlatJSONObjectDecoder(object: object))
    }

    /// As ``decodeIfFlat(_:from:)-(_,UnsafeRawBufferPointer)``, but a whole-number field written
    /// with a fraction or exponent is `.refused` rather than handed back.
    public func decodeFlat<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) -> FlatDecoding<T> {
        guard let object = FlatJSONObject(parsing: bytes) else { return .handBack }
        do {
            return .decoded(try T(from: FlatJSONObjectDecoder(object: object)))
        } catch let error as FlatJSONNotAnInteger {
            return .refused("\(error.key) must be a whole number, written without a fraction or exponent")
        } catch {
            return .handBack
        }
    }

    public func decodeIfFlat<T: Decodable>(_ type: T.Type, from data: Data) -> T? {
        data.withUnsafeBytes { decodeIfFlat(type, from: $0) }
    }

    public func decodeIfFlat<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) -> T? {
        buffer.withUnsafeReadableBytes { decodeIfFlat(type, from: $0) }
    }
}

/// Why the flat decoder handed a document back to Foundation (never shown to anyone).
struct FlatJSONUnsupported: Error {}

/// A whole-number field written as `1.0` or `1e2`: refused outright.
struct FlatJSONNotAnInteger: Error { var key: String }

/// What ``FlatJSONDecoder/decodeFlat(_:from:)`` made of a body.
public enum FlatDecoding<T> {
    case decoded(T)
    /// Not a flat object of primitives, or a type the flat decoder leaves to Foundation.
    case handBack
    /// Flat, but wrong in a way Foundation would forgive: the message says how.
    case refused(String)
}

/// One parsed JSON object of primitive members, as byte ranges into the caller's buffer (valid
/// only while that buffer is).
struct FlatJSONObject {
    enum Value {
        case string(Range<Int>, escaped: Bool)
        /// A number in JSON's grammar; `integer` when it has neither fraction nor exponent.
        case number(Range<Int>, integer: Bool)
        case bool(Bool)
        case null
    }

    struct Member {
        var key: Range<Int>
        var value: Value
    }

    let bytes: UnsafeRawBufferPointer
    private(set) var members: [Member] = []

    /// Nil when `bytes` is not a single object of primitive members with distinct, unescaped keys.
    init?(parsing bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
        var reader = Reader(bytes: bytes)
        reader.skipWhitespace()
        guard reader.take(UInt8(ascii: "{")) else { return nil }
        reader.skipWhitespace()
        if !reader.take(UInt8(ascii: "}")) {
            members.reserveCapacity(8)
            repeat {
                reader.skipWhitespace()
                guard let (key, escaped) = reader.string(), !escaped else { return nil }
                reader.skipWhitespace()
                guard reader.take(UInt8(ascii: ":")) else { return nil }
                reader.skipWhitespace()
                guard let value = reader.value() else { return nil }
                // Foundation's handling of a repeated key is its own business: leave it to Foundation.
                guard index(ofKey: key) == nil else { return nil }
                members.append(Member(key: key, value: value))
                reader.skipWhitespace()
            } while reader.take(UInt8(ascii: ","))
            guard reader.take(UInt8(ascii: "}")) else { return nil }
        }
        reader.skipWhitespace()
        guard reader.atEnd else { return nil }
    }

    /// The member whose key is `key`'s UTF-8 bytes.
    func member(_ key: String) -> Member? {
        var key = key
        return key.withUTF8 { wanted in members.first { has($0, key: UnsafeRawBufferPointer(wanted)) } }
    }

    private func index(ofKey key: Range<Int>) -> Int? {
        let wanted = UnsafeRawBufferPointer(rebasing: bytes[key])
        return members.firstIndex { has($0, key: wanted) }
    }

    /// Whether `member`'s key is exactly the bytes `key`.
    private func has(_ member: Member, key: UnsafeRawBufferPointer) -> Bool {
        member.key.count == key.count
            && (key.isEmpty || memcmp(bytes.baseAddress! + member.key.lowerBound, key.baseAddress!, key.count) == 0)
    }

    func keyString(_ member: Member) -> String {
        String(decoding: UnsafeRawBufferPointer(rebasing: bytes[member.key]), as: UTF8.self)
    }

    /// The text of a string value, unescaped; nil for an escape Foundation might read differently
    /// (a lone surrogate). The reader has checked the bytes are UTF-8.
    func string(_ range: Range<Int>, escaped: Bool) -> String? {
        let raw = UnsafeRawBufferPointer(rebasing: bytes[range])
        guard escaped else { return String(decoding: raw, as: UTF8.self) }
        return StrictJSON.unescaped(raw).map { String(decoding: $0, as: UTF8.self) }
    }

    /// An integer written as plain digits (no fraction or exponent) that fits in `Int64`.
    func integer(_ range: Range<Int>) -> Int64? {
        var index = range.lowerBound
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var value: Int64 = 0
        while index < range.upperBound {
            let byte = bytes[index]
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let digit = Int64(byte - UInt8(ascii: "0"))
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { return nil }
            value = next
            index += 1
        }
        return value
    }

    /// A number's text, for `Double`'s parser (which rounds correctly, as Foundation's does).
    func numberText(_ range: Range<Int>) -> Substring {
        Substring(decoding: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self)
    }

    /// True when every digit before the exponent is 0 (the number is zero, not an underflow).
    func isZeroNumber(_ range: Range<Int>) -> Bool {
        for byte in bytes[range] {
            switch byte {
            case UInt8(ascii: "e"), UInt8(ascii: "E"): return true
            case UInt8(ascii: "1")...UInt8(ascii: "9"): return false
            default: continue
            }
        }
        return true
    }
}

/// A cursor over JSON text that checks the grammar as it goes.
private struct Reader {
    let bytes: UnsafeRawBufferPointer
    var index = 0

    var atEnd: Bool { index == bytes.count }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    mutating func take(literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count,
              memcmp(bytes.baseAddress! + index, literal.utf8Start, count) == 0 else { return false }
        index += count
        return true
    }

    /// A string's contents (between the quotes) and whether it has escapes; nil when it is not a
    /// well-formed JSON string (unterminated, a control character, a bad escape).
    mutating func string() -> (Range<Int>, escaped: Bool)? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        var escaped = false
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                // Foundation refuses a document with malformed UTF-8 anywhere, read or not.
                guard ascii || String(validating: UnsafeRawBufferPointer(rebasing: bytes[start..<index - 1]), as: UTF8.self) != nil else {
                    return nil
                }
                return (start..<index - 1, escaped)
            case UInt8(ascii: "\\"):
                escaped = true
                guard index + 1 < bytes.count else { return nil }
                switch bytes[index + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                     UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    guard index + 6 <= bytes.count,
                          bytes[index + 2..<index + 6].allSatisfy({ $0.isHexDigit }) else { return nil }
                    index += 6
                default:
                    return nil
                }
            case 0..<0x20:
                return nil
            case 0x80...:
                ascii = false
                index += 1
            default:
                index += 1
            }
        }
        return nil
    }

    mutating func value() -> FlatJSONObject.Value? {
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "\""):
            return string().map { .string($0.0, escaped: $0.escaped) }
        case UInt8(ascii: "t"):
            return take(literal: "true") ? .bool(true) : nil
        case UInt8(ascii: "f"):
            return take(literal: "false") ? .bool(false) : nil
        case UInt8(ascii: "n"):
            return take(literal: "null") ? .null : nil
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return number()
        default:
            return nil  // an object, an array, or not JSON
        }
    }

    /// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    mutating func number() -> FlatJSONObject.Value? {
        let start = index
        _ = take(UInt8(ascii: "-"))
        if take(UInt8(ascii: "0")) {
            // no leading zeros
        } else {
            guard digits() > 0 else { return nil }
        }
        var integer = true
        if take(UInt8(ascii: ".")) {
            integer = false
            guard digits() > 0 else { return nil }
        }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            integer = false
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            guard digits() > 0 else { return nil }
        }
        return .number(start..<index, integer: integer)
    }

    private mutating func digits() -> Int {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        return index - start
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        switch self {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"), UInt8(ascii: "A")...UInt8(ascii: "F"): true
        default: false
        }
    }
}

// MARK: - Decoder

private struct FlatJSONObjectDecoder: Decoder {
    let object: FlatJSONObject
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(FlatKeyedContainer<Key>(object: object))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw FlatJSONUnsupported() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw FlatJSONUnsupported() }
}

private struct FlatKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: FlatJSONObject
    var codingPath: [any CodingKey] { [] }

    var allKeys: [Key] {
        object.members.compactMap { Key(stringValue: object.keyString($0)) }
    }

    func contains(_ key: Key) -> Bool { object.member(key.stringValue) != nil }

    /// An integer member; a number with a fraction or exponent (`1.0`, `1e2`) is refused, not
    /// handed to Foundation, which would take it.
    private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        let member = try value(key)
        if case .number(_, integer: false) = member { throw FlatJSONNotAnInteger(key: key.stringValue) }
        return try FlatValue(object: object, value: member).integer()
    }

    private func value(_ key: Key) throws -> FlatJSONObject.Value {
        guard let member = object.member(key.stringValue) else { throw FlatJSONUnsupported() }
        return member.value
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        if case .null = try value(key) { return true }
        return false
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try FlatValue(object: object, value: value(key)).bool()
    }

    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try FlatValue(object: object, value: value(key)).string()
    }

    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try FlatValue(object: object, value: value(key)).floatingPoint()
    }

    /// Foundation may round through `Double` first; not worth matching.
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { throw FlatJSONUnsupported() }

    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }

    /// Only enums backed by a primitive (`enum Kind: String, Decodable`): their synthesised
    /// decoding reads one value. Everything else — nested objects, `Date`, `Data`, `URL`,
    /// `Decimal`, which Foundation decodes by its own strategies — goes to Foundation.
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard T.self is any RawRepresentable.Type else { throw FlatJSONUnsupported() }
        return try T(from: FlatValue(object: object, value: value(key)))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        throw FlatJSONUnsupported()
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw FlatJSONUnsupported() }
    func superDecoder() throws -> any Decoder { throw FlatJSONUnsupported() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw FlatJSONUnsupported() }
}

/// One member's value: typed reads for the keyed container, and a single-value decoder for
/// primitive-backed enums.
private struct FlatValue: Decoder, SingleValueDecodingContainer {
    let object: FlatJSONObject
    let value: FlatJSONObject.Value
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw FlatJSONUnsupported() }
    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw FlatJSONUnsupported() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool {
        if case .null = value { return true }
        return false
    }

    func bool() throws -> Bool {
        guard case .bool(let bool) = value else { throw FlatJSONUnsupported() }
        return bool
    }

    func string() throws -> String {
        guard case .string(let range, let escaped) = value, let string = object.string(range, escaped: escaped) else { throw FlatJSONUnsupported() }
        return string
    }

    func integer<T: FixedWidthInteger>() throws -> T {
        guard case .number(let range, integer: true) = value,
              let wide = object.integer(range), let narrow = T(exactly: wide) else { throw FlatJSONUnsupported() }
        return narrow
    }

    /// A finite, normal `Double` (or an exact zero): out-of-range numbers are Foundation's to judge.
    func floatingPoint() throws -> Double {
        guard case .number(let range, _) = value, let number = Double(object.numberText(range)), number.isFinite,
              number.isNormal || (number.isZero && object.isZeroNumber(range)) else {
            throw FlatJSONUnsupported()
        }
        return number
    }

    func decode(_ type: Bool.Type) throws -> Bool { try bool() }
    func decode(_ type: String.Type) throws -> String { try string() }
    func decode(_ type: Double.Type) throws -> Double { try floatingPoint() }
    func decode(_ type: Float.Type) throws -> Float { throw FlatJSONUnsupported() }
    func decode(_ type: Int.Type) throws -> Int { try integer() }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { throw FlatJSONUnsupported() }
}

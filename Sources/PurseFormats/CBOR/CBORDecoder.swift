import Foundation

public struct CBORError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A strict, bounded CBOR decoder: definite and indefinite lengths, nesting at most 16 deep,
/// lengths checked against the remaining input before anything is allocated.
public struct CBORDecoder {
    private let bytes: [UInt8]
    private var offset = 0
    private let maxDepth = 16

    /// Decodes one item and returns it with the number of bytes it used (WebAuthn's
    /// authenticator data has the COSE key followed by optional extensions).
    public static func decodePrefix(_ data: Data) throws -> (CBOR, Int) {
        var decoder = CBORDecoder(bytes: [UInt8](data))
        let item = try decoder.item(depth: 0)
        return (item, decoder.offset)
    }

    /// Decodes exactly one item; trailing bytes are an error.
    public static func decode(_ data: Data) throws -> CBOR {
        let (item, used) = try decodePrefix(data)
        guard used == data.count else { throw CBORError("trailing bytes after CBOR item") }
        return item
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    /// IEEE 754 half precision (RFC 8949 appendix D), without relying on `Float16`.
    static func halfToDouble(_ half: UInt16) -> Double {
        let exponent = Int((half >> 10) & 0x1F), mantissa = Double(half & 0x3FF)
        let magnitude: Double
        if exponent == 0 {
            magnitude = mantissa * pow(2, -24)
        } else if exponent != 31 {
            magnitude = (mantissa + 1024) * pow(2, Double(exponent - 25))
        } else {
            magnitude = mantissa == 0 ? .infinity : .nan
        }
        return half & 0x8000 != 0 ? -magnitude : magnitude
    }

    private mutating func byte() throws -> UInt8 {
        guard offset < bytes.count else { throw CBORError("unexpected end of CBOR") }
        defer { offset += 1 }
        return bytes[offset]
    }

    private mutating func take(_ count: UInt64) throws -> [UInt8] {
        guard count <= UInt64(bytes.count - offset) else { throw CBORError("CBOR length exceeds input") }
        let end = offset + Int(count)
        defer { offset = end }
        return Array(bytes[offset..<end])
    }

    private mutating func argument(_ info: UInt8) throws -> UInt64? {
        switch info {
        case 0..<24: return UInt64(info)
        case 24: return UInt64(try byte())
        case 25: return try take(2).reduce(0) { $0 << 8 | UInt64($1) }
        case 26: return try take(4).reduce(0) { $0 << 8 | UInt64($1) }
        case 27: return try take(8).reduce(0) { $0 << 8 | UInt64($1) }
        case 31: return nil  // indefinite
        default: throw CBORError("reserved CBOR additional info \(info)")
        }
    }

    private mutating func item(depth: Int) throws -> CBOR {
        guard depth <= maxDepth else { throw CBORError("CBOR nested too deeply") }
        let initial = try byte()
        let major = initial >> 5, info = initial & 0x1F
        switch major {
        case 0:
            guard let value = try argument(info) else { throw CBORError("indefinite integer") }
            return .unsigned(value)
        case 1:
            guard let value = try argument(info) else { throw CBORError("indefinite integer") }
            guard value < UInt64(Int64.max) else { throw CBORError("negative integer out of range") }
            return .negative(-1 - Int64(value))
        case 2, 3:
            var data = [UInt8]()
            if let length = try argument(info) {
                data = try take(length)
            } else {
                while true {
                    if offset < bytes.count, bytes[offset] == 0xFF { offset += 1; break }
                    guard case let chunk = try item(depth: depth + 1),
                          (major == 2 ? chunk.bytesValue.map([UInt8].init) : chunk.textValue.map { [UInt8]($0.utf8) }) != nil else {
                        throw CBORError("bad indefinite string chunk")
                    }
                    data += major == 2 ? [UInt8](chunk.bytesValue!) : [UInt8](chunk.textValue!.utf8)
                }
            }
            if major == 2 { return .bytes(Data(data)) }
            guard let text = String(validating: data, as: UTF8.self) else { throw CBORError("invalid UTF-8 in CBOR text") }
            return .text(text)
        case 4:
            var items: [CBOR] = []
            if let count = try argument(info) {
                guard count <= UInt64(bytes.count - offset) else { throw CBORError("CBOR array longer than input") }
                for _ in 0..<count { items.append(try item(depth: depth + 1)) }
            } else {
                while true {
                    if offset < bytes.count, bytes[offset] == 0xFF { offset += 1; break }
                    items.append(try item(depth: depth + 1))
                }
            }
            return .array(items)
        case 5:
            var pairs: [(CBOR, CBOR)] = []
            if let count = try argument(info) {
                guard count <= UInt64(bytes.count - offset) / 2 else { throw CBORError("CBOR map longer than input") }
                for _ in 0..<count { pairs.append((try item(depth: depth + 1), try item(depth: depth + 1))) }
            } else {
                while true {
                    if offset < bytes.count, bytes[offset] == 0xFF { offset += 1; break }
                    pairs.append((try item(depth: depth + 1), try item(depth: depth + 1)))
                }
            }
            return .map(pairs)
        case 6:
            guard let tag = try argument(info) else { throw CBORError("indefinite tag") }
            return .tagged(tag, try item(depth: depth + 1))
        default:
            switch info {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            case 23: return .undefined
            case 25:
                let half = UInt16(try take(2).reduce(0) { $0 << 8 | UInt64($1) })
                return .float(Self.halfToDouble(half))
            case 26:
                return .float(Double(Float(bitPattern: UInt32(try take(4).reduce(0) { $0 << 8 | UInt64($1) }))))
            case 27:
                return .float(Double(bitPattern: try take(8).reduce(0) { $0 << 8 | UInt64($1) }))
            default:
                if info < 24 { return .unsigned(UInt64(info)) }
                throw CBORError("unsupported CBOR simple value \(info)")
            }
        }
    }
}

import Foundation

extension CBOR {
    /// The item in CBOR's preferred serialisation (RFC 8949 §4.1): every length and integer in its
    /// shortest form, definite lengths only, map pairs in the order given (core deterministic
    /// encoding also sorts map keys; callers that need it give the pairs sorted), floats as
    /// 64-bit doubles.
    public var encoded: Data {
        var out = Data()
        write(into: &out)
        return out
    }

    private func write(into out: inout Data) {
        switch self {
        case .unsigned(let value):
            Self.head(0, value, into: &out)
        case .negative(let value):
            Self.head(1, UInt64(-1 - value), into: &out)
        case .bytes(let data):
            Self.head(2, UInt64(data.count), into: &out)
            out.append(data)
        case .text(let text):
            Self.head(3, UInt64(text.utf8.count), into: &out)
            out.append(contentsOf: text.utf8)
        case .array(let items):
            Self.head(4, UInt64(items.count), into: &out)
            for item in items { item.write(into: &out) }
        case .map(let pairs):
            Self.head(5, UInt64(pairs.count), into: &out)
            for (key, value) in pairs {
                key.write(into: &out)
                value.write(into: &out)
            }
        case .tagged(let tag, let item):
            Self.head(6, tag, into: &out)
            item.write(into: &out)
        case .bool(let value):
            out.append(value ? 0xF5 : 0xF4)
        case .null:
            out.append(0xF6)
        case .undefined:
            out.append(0xF7)
        case .float(let value):
            out.append(0xFB)
            Self.bigEndian(value.bitPattern, bytes: 8, into: &out)
        }
    }

    private static func head(_ major: UInt8, _ argument: UInt64, into out: inout Data) {
        let type = major << 5
        switch argument {
        case 0..<24: out.append(type | UInt8(argument))
        case 24...0xFF: out.append(contentsOf: [type | 24, UInt8(argument)])
        case 0x100...0xFFFF:
            out.append(type | 25)
            bigEndian(argument, bytes: 2, into: &out)
        case 0x10000...0xFFFF_FFFF:
            out.append(type | 26)
            bigEndian(argument, bytes: 4, into: &out)
        default:
            out.append(type | 27)
            bigEndian(argument, bytes: 8, into: &out)
        }
    }

    private static func bigEndian(_ value: UInt64, bytes: Int, into out: inout Data) {
        for shift in stride(from: (bytes - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }
}

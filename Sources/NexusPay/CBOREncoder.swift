import Foundation

/// The few CBOR items a client authenticator writes (RFC 8949, canonical: shortest lengths).
enum CBORValue {
    case int(Int64)
    case bytes(Data)
    case text(String)
    case map([(CBORValue, CBORValue)])

    var encoded: Data {
        var out = Data()
        write(into: &out)
        return out
    }

    private func write(into out: inout Data) {
        switch self {
        case .int(let value):
            if value >= 0 { Self.head(0, UInt64(value), into: &out) } else { Self.head(1, UInt64(-1 - value), into: &out) }
        case .bytes(let data):
            Self.head(2, UInt64(data.count), into: &out)
            out.append(data)
        case .text(let text):
            let utf8 = Data(text.utf8)
            Self.head(3, UInt64(utf8.count), into: &out)
            out.append(utf8)
        case .map(let pairs):
            Self.head(5, UInt64(pairs.count), into: &out)
            for (key, value) in pairs {
                key.write(into: &out)
                value.write(into: &out)
            }
        }
    }

    private static func head(_ major: UInt8, _ argument: UInt64, into out: inout Data) {
        let type = major << 5
        switch argument {
        case 0..<24: out.append(type | UInt8(argument))
        case 24...0xFF: out.append(contentsOf: [type | 24, UInt8(argument)])
        case 0x100...0xFFFF: out.append(contentsOf: [type | 25, UInt8(argument >> 8), UInt8(argument & 0xFF)])
        case 0x10000...0xFFFF_FFFF:
            out.append(type | 26)
            for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8((argument >> UInt64(shift)) & 0xFF)) }
        default:
            out.append(type | 27)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8((argument >> UInt64(shift)) & 0xFF)) }
        }
    }
}

/// base64url without padding: Foundation's base64 with the two URL-safe characters swapped in
/// byte by byte (no `String` searching on the signing path).
public enum Base64URL {
    public static func encode(_ data: some DataProtocol) -> String {
        let standard = Data(data).base64EncodedData()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(standard.count)
        for byte in standard {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: "-"))
            case UInt8(ascii: "/"): bytes.append(UInt8(ascii: "_"))
            case UInt8(ascii: "="): continue
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    public static func decode(_ text: String) -> Data? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "-"): bytes.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): bytes.append(UInt8(ascii: "/"))
            default: bytes.append(byte)
            }
        }
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        guard bytes.count % 4 != 1 else { return nil }
        while bytes.count % 4 != 0 { bytes.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(bytes))
    }
}

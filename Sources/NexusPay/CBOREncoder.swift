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

/// base64url without padding.
public enum Base64URL {
    public static func encode(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    public static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 = base64.trimmingCharacters(in: CharacterSet(charactersIn: "="))
        let remainder = base64.count % 4
        guard remainder != 1 else { return nil }
        if remainder > 0 { base64 += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: base64)
    }
}

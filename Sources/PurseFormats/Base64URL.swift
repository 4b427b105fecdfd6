import Foundation

/// base64url without padding (RFC 4648 §5), the encoding of every WebAuthn binary field.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's 6-bit value; 0xff for bytes outside both alphabets. `+` and `/` are accepted
    /// too (some clients send standard base64).
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xff, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    public static func encode(_ data: some DataProtocol) -> String {
        let bytes = Array(data)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
            out.append(alphabet[Int(chunk >> 6 & 63)])
            out.append(alphabet[Int(chunk & 63)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let chunk = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
        case 2:
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
            out.append(alphabet[Int(chunk >> 6 & 63)])
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url; tolerates trailing padding and the standard alphabet. Returns nil for
    /// any other character, a length no encoder produces, or more than 1 MiB of text.
    public static func decode(_ text: String) -> Data? {
        var utf8 = Array(text.utf8)
        guard utf8.count <= 1 << 20 else { return nil }
        while utf8.last == UInt8(ascii: "=") { utf8.removeLast() }
        guard utf8.count % 4 != 1 else { return nil }
        // Bytes gather in an array and become `Data` once: appending to `Data` byte by byte goes
        // through its generic `replaceSubrange` every time.
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in utf8 {
            let value = values[Int(byte)]
            guard value != 0xff else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        return Data(out)
    }
}

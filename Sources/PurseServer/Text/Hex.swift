/// Lowercase hexadecimal, without `String(format:)` (which goes through Foundation's format parser
/// for every byte and showed up in profiles of the hot paths that mint identifiers).
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var utf8: [UInt8] = []
        utf8.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            utf8.append(digit(byte >> 4))
            utf8.append(digit(byte & 0x0f))
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    /// The lowercase digit of `value` (0–15), as an ASCII byte.
    @inline(__always)
    public static func digit(_ value: UInt8) -> UInt8 { digits[Int(value)] }
}

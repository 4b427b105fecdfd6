/// Lowercase hexadecimal, without `String(format:)` (which goes through Foundation's format parser
/// for every byte and showed up in profiles of the hot paths that mint identifiers).
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        if let encoded = bytes.withContiguousStorageIfAvailable({ encode(UnsafeRawBufferPointer($0)) }) { return encoded }
        var utf8: [UInt8] = []
        utf8.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            utf8.append(digit(byte >> 4))
            utf8.append(digit(byte & 0x0f))
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    /// Bytes in memory (an array's, a digest's `withUnsafeBytes`), written straight into the
    /// string's storage.
    public static func encode(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { buffer in
            for (index, byte) in bytes.enumerated() {
                buffer[2 * index] = digit(byte >> 4)
                buffer[2 * index + 1] = digit(byte & 0x0f)
            }
            return bytes.count * 2
        }
    }

    /// The lowercase digit of `value` (0–15), as an ASCII byte.
    @inline(__always)
    public static func digit(_ value: UInt8) -> UInt8 { digits[Int(value)] }
}

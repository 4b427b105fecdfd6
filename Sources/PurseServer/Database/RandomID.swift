import PurseDatabase
import PurseFormats
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Random identifiers and tokens from the system's CSPRNG.
public enum RandomID {
    /// A record id: `prefix_`, 12 lowercase hex characters of the creation time (milliseconds
    /// since 1970), then 16 of randomness (64 bits), e.g. `ltx_019aa7c3b2e15f0c9d81e4a27b36`.
    ///
    /// Ids made later sort later, so a table's new rows land at the end of its primary-key index
    /// instead of on a random page: each commit writes a few pages rather than one per index per
    /// row (in SQLite's WAL, most of a write's cost). Not for secrets — they reveal when they were
    /// made; tokens use ``hex(bytes:)`` or ``bytes(_:)``.
    public static func make(_ prefix: String) -> String {
        let millis = UInt64(max(0, Date().timeIntervalSince1970 * 1000))
        let random = RandomWords.shared.next()
        // Written straight into the string's storage: a ledger posting makes one per entry, on
        // the database's one writer.
        return String(unsafeUninitializedCapacity: prefix.utf8.count + 29) { buffer in
            var end = buffer.initialize(fromContentsOf: prefix.utf8)
            buffer[end] = UInt8(ascii: "_")
            end += 1
            for index in 0..<12 { buffer[end + index] = Hex.digit(UInt8(truncatingIfNeeded: millis >> (44 - 4 * UInt64(index)) & 0xF)) }
            end += 12
            for index in 0..<16 { buffer[end + index] = Hex.digit(UInt8(truncatingIfNeeded: random >> (60 - 4 * UInt64(index)) & 0xF)) }
            return end + 16
        }
    }

    public static func hex(bytes count: Int) -> String {
        Hex.encode(bytes(count))
    }

    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 7)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return Array(bytes.prefix(count))
    }
}

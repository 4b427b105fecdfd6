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

/// Milliseconds since 1970, the one time format in storage.
public typealias EpochMillis = Int64

extension Date {
    public var epochMillis: EpochMillis { EpochMillis((timeIntervalSince1970 * 1000).rounded(.down)) }
    public init(epochMillis: EpochMillis) { self.init(timeIntervalSince1970: Double(epochMillis) / 1000) }
}

/// Random 64-bit words for ids, drawn from the system's generator 512 at a time: one read for 512
/// ids instead of a `getrandom` call each (several per top-up, on the database's one writer). Ids
/// only — secrets draw from `SystemRandomNumberGenerator` directly.
final class RandomWords: Sendable {
    static let shared = RandomWords()
    static let batch = 512

    private struct Pool {
        var words: [UInt64] = []
        var next = 0
    }

    private let pool = Mutex(Pool())

    func next() -> UInt64 {
        pool.withLock { pool in
            if pool.next == pool.words.count {
                pool.words = [UInt64](unsafeUninitializedCapacity: Self.batch) { buffer, count in
                    Self.fill(UnsafeMutableRawBufferPointer(buffer))
                    count = Self.batch
                }
                pool.next = 0
            }
            defer { pool.next += 1 }
            return pool.words[pool.next]
        }
    }

    /// Fills `buffer` from the operating system's CSPRNG: `/dev/urandom` (three system calls for
    /// the lot; Glibc's module does not export `getrandom`), else the standard library's
    /// generator a word at a time; `arc4random_buf` on Darwin.
    static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
        #if canImport(Glibc)
        var filled = 0
        let file = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
        if file >= 0 {
            while filled < buffer.count {
                let count = read(file, base + filled, buffer.count - filled)
                if count > 0 {
                    filled += count
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
            close(file)
        }
        var generator = SystemRandomNumberGenerator()
        while filled < buffer.count {
            var word = generator.next() as UInt64
            let count = min(8, buffer.count - filled)
            withUnsafeBytes(of: &word) { (base + filled).copyMemory(from: $0.baseAddress!, byteCount: count) }
            filled += count
        }
        #else
        arc4random_buf(base, buffer.count)
        #endif
    }
}

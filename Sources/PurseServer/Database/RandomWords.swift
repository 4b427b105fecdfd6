import Foundation
import PurseDatabase
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Random 64-bit words for ids, drawn from the system's generator 512 at a time: one read for 512
/// ids instead of a `getrandom` call each (several per write transaction, on the database's one writer). Ids
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

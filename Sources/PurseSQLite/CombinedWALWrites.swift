import Foundation
import VaporCSQLite

/// A SQLite VFS that writes each commit to the WAL in one system call.
///
/// SQLite writes a commit as one frame per page it touched, and each frame as two `pwrite`s — its
/// 24-byte header, then the page — so a group commit of ~45 pages cost ~90 system calls, each
/// dirtying parts of two kernel pages (frames are 4,120 bytes, not page-aligned). Measured on this
/// machine's ext4: 83–104 µs per such commit as separate writes, 21–23 µs as one (up to 124 KiB
/// a call: larger commits take a call per 124 KiB).
///
/// This VFS is the platform's default VFS (`unix`) with one change: a WAL file's writes are
/// gathered while they are contiguous and written as one when the commit's last frame is
/// complete. Every other file — the database, journals, temporary files — is opened by the
/// default VFS itself and untouched. The rules for a WAL file:
///
/// - A write that does not continue the gathered bytes writes them out first.
/// - The gathered bytes are written as soon as they end with a commit frame (a frame header whose
///   "database size after commit" field is non-zero, and then its page). SQLite publishes a commit
///   to readers (the wal-index header) only after `walFrames` has written its frames, and the
///   commit frame is always the last it writes, so readers — other connections in this process or
///   others — never see a commit whose frames are not in the file. A failed write is returned
///   from the call that wrote the commit frame's page: SQLite then fails the commit and rolls back,
///   as it would had its own `pwrite` failed.
/// - Every other operation on the file (read, sync, size, truncate, file control, close) writes
///   the gathered bytes first, so the file is always what SQLite believes it wrote.
///
/// Frames that are not part of a commit yet (a transaction spilling its cache) may wait in memory
/// until the next write, read or sync; nothing reads them before the commit publishes them.
enum CombinedWALWrites {
    /// The VFS's name, for `sqlite3_open_v2`. Registered on first use (never as the default).
    static var name: String { registration.name }

    nonisolated(unsafe) private static let registration: (name: String, vfs: UnsafeMutablePointer<sqlite3_vfs>?) = register()

    /// The default VFS this one wraps.
    nonisolated(unsafe) private static var base: UnsafeMutablePointer<sqlite3_vfs>!
    /// The I/O methods of a WAL file opened through this VFS.
    nonisolated(unsafe) private static var methods: UnsafeMutablePointer<sqlite3_io_methods>!

    /// How many writes SQLite asked for on a WAL file, and how many this VFS made.
    struct Counts: Sendable, Equatable {
        var requested = 0
        var made = 0
    }

    /// The counts of `file` (a connection's WAL, from `SQLITE_FCNTL_JOURNAL_POINTER`), or nil when
    /// it was not opened through this VFS. Read it where the connection is used.
    static func counts(of file: UnsafeMutablePointer<sqlite3_file>) -> Counts? {
        guard registration.vfs != nil, let opened = file.pointee.pMethods, opened == UnsafePointer(methods) else { return nil }
        let gathered = WALFile(file).gathered
        return Counts(requested: gathered.requested, made: gathered.made)
    }

    private static func register() -> (String, UnsafeMutablePointer<sqlite3_vfs>?) {
        let name = "purse-combined-wal"
        guard let base = sqlite_nio_sqlite3_vfs_find(nil) else { return ("", nil) }
        Self.base = base
        let methods = UnsafeMutablePointer<sqlite3_io_methods>.allocate(capacity: 1)
        methods.initialize(to: ioMethods)
        Self.methods = methods
        let vfs = UnsafeMutablePointer<sqlite3_vfs>.allocate(capacity: 1)
        vfs.initialize(to: base.pointee)
        vfs.pointee.pNext = nil
        vfs.pointee.zName = UnsafePointer(strdup(name))
        vfs.pointee.szOsFile = Int32(WALFile.realFileOffset) + base.pointee.szOsFile
        vfs.pointee.xOpen = { _, name, file, flags, outFlags in
            guard let file else { return SQLITE_MISUSE }
            guard flags & SQLITE_OPEN_WAL != 0 else {
                // Not a WAL: the default VFS opens it in place (the space is large enough).
                return CombinedWALWrites.base.pointee.xOpen(CombinedWALWrites.base, name, file, flags, outFlags)
            }
            return WALFile.open(file, name: name, flags: flags, outFlags: outFlags)
        }
        guard sqlite_nio_sqlite3_vfs_register(vfs, 0) == SQLITE_OK else { return ("", nil) }
        return (name, vfs)
    }

    /// Writes that change what is in the file, or read it, go after the gathered bytes
    /// (`flushingFirst`); the rest pass straight to the default VFS's file.
    private static let ioMethods = sqlite3_io_methods(
        iVersion: 3,
        xClose: { file in
            let wal = WALFile(file!)
            let flushed = wal.flush()
            let closed = wal.real.pointee.pMethods.pointee.xClose(wal.real)
            wal.release()
            return flushed != SQLITE_OK ? flushed : closed
        },
        xRead: { file, buffer, amount, offset in
            WALFile(file!).flushingFirst { real, methods in methods.xRead(real, buffer, amount, offset) }
        },
        xWrite: { file, buffer, amount, offset in
            WALFile(file!).write(buffer!, count: Int(amount), at: offset)
        },
        xTruncate: { file, size in
            WALFile(file!).flushingFirst { real, methods in methods.xTruncate(real, size) }
        },
        xSync: { file, flags in
            WALFile(file!).flushingFirst { real, methods in methods.xSync(real, flags) }
        },
        xFileSize: { file, size in
            WALFile(file!).flushingFirst { real, methods in methods.xFileSize(real, size) }
        },
        xLock: { file, lock in
            WALFile(file!).passing { real, methods in methods.xLock(real, lock) }
        },
        xUnlock: { file, lock in
            WALFile(file!).passing { real, methods in methods.xUnlock(real, lock) }
        },
        xCheckReservedLock: { file, result in
            WALFile(file!).passing { real, methods in methods.xCheckReservedLock(real, result) }
        },
        xFileControl: { file, operation, argument in
            WALFile(file!).flushingFirst { real, methods in methods.xFileControl(real, operation, argument) }
        },
        xSectorSize: { file in
            WALFile(file!).passing { real, methods in methods.xSectorSize(real) }
        },
        xDeviceCharacteristics: { file in
            WALFile(file!).passing { real, methods in methods.xDeviceCharacteristics(real) }
        },
        // A WAL file has no shared memory and is never memory-mapped: SQLite calls these on the
        // database file only. Passed through all the same.
        xShmMap: { file, page, size, extend, pointer in
            WALFile(file!).passing { real, methods in methods.xShmMap.map { $0(real, page, size, extend, pointer) } ?? SQLITE_IOERR }
        },
        xShmLock: { file, offset, count, flags in
            WALFile(file!).passing { real, methods in methods.xShmLock.map { $0(real, offset, count, flags) } ?? SQLITE_IOERR }
        },
        xShmBarrier: { file in
            _ = WALFile(file!).passing { real, methods in methods.xShmBarrier?(real); return SQLITE_OK }
        },
        xShmUnmap: { file, delete in
            WALFile(file!).passing { real, methods in methods.xShmUnmap.map { $0(real, delete) } ?? SQLITE_IOERR }
        },
        xFetch: { file, offset, amount, pointer in
            WALFile(file!).flushingFirst { real, methods in
                guard let fetch = methods.xFetch else { pointer?.pointee = nil; return SQLITE_OK }
                return fetch(real, offset, amount, pointer)
            }
        },
        xUnfetch: { file, offset, pointer in
            WALFile(file!).passing { real, methods in methods.xUnfetch.map { $0(real, offset, pointer) } ?? SQLITE_OK }
        }
    )

    /// A WAL file opened through this VFS: the `sqlite3_file` SQLite sees (its methods pointer),
    /// then the gathered bytes' state, then the default VFS's own file for the same path.
    ///
    /// A file is used by one connection at a time, and a connection by one thread at a time
    /// (``SQLiteDriver``), so the state needs no lock.
    fileprivate struct WALFile {
        static let stateOffset = MemoryLayout<sqlite3_file>.stride
        static let realFileOffset = (stateOffset + MemoryLayout<UnsafeMutableRawPointer>.stride + 15) & ~15

        let file: UnsafeMutablePointer<sqlite3_file>

        init(_ file: UnsafeMutablePointer<sqlite3_file>) { self.file = file }

        var real: UnsafeMutablePointer<sqlite3_file> {
            UnsafeMutableRawPointer(file).advanced(by: Self.realFileOffset).assumingMemoryBound(to: sqlite3_file.self)
        }

        private var statePointer: UnsafeMutablePointer<UnsafeMutableRawPointer?> {
            UnsafeMutableRawPointer(file).advanced(by: Self.stateOffset).assumingMemoryBound(to: UnsafeMutableRawPointer?.self)
        }

        var gathered: GatheredWrites { Unmanaged<GatheredWrites>.fromOpaque(statePointer.pointee!).takeUnretainedValue() }

        static func open(_ file: UnsafeMutablePointer<sqlite3_file>, name: sqlite3_filename?, flags: Int32, outFlags: UnsafeMutablePointer<Int32>?) -> Int32 {
            let wal = WALFile(file)
            file.pointee.pMethods = nil
            let opened = CombinedWALWrites.base.pointee.xOpen(CombinedWALWrites.base, name, wal.real, flags, outFlags)
            guard opened == SQLITE_OK else { return opened }
            guard wal.real.pointee.pMethods != nil else { return SQLITE_CANTOPEN }
            wal.statePointer.pointee = Unmanaged.passRetained(GatheredWrites()).toOpaque()
            file.pointee.pMethods = UnsafePointer(CombinedWALWrites.methods)
            return SQLITE_OK
        }

        /// `operation` on the default VFS's file.
        func passing(_ operation: (UnsafeMutablePointer<sqlite3_file>, sqlite3_io_methods) -> Int32) -> Int32 {
            operation(real, real.pointee.pMethods.pointee)
        }

        /// `operation` on the default VFS's file once the gathered bytes are written.
        func flushingFirst(_ operation: (UnsafeMutablePointer<sqlite3_file>, sqlite3_io_methods) -> Int32) -> Int32 {
            let flushed = flush()
            guard flushed == SQLITE_OK else { return flushed }
            return passing(operation)
        }

        func release() {
            guard let state = statePointer.pointee else { return }
            Unmanaged<GatheredWrites>.fromOpaque(state).release()
            statePointer.pointee = nil
        }

        func write(_ bytes: UnsafeRawPointer, count: Int, at offset: Int64) -> Int32 {
            let gathered = self.gathered
            gathered.requested += 1
            // What was gathered goes first when this write does not continue it, or would take
            // it past ``GatheredWrites/limit`` (a transaction of thousands of pages).
            if !gathered.isEmpty, offset != gathered.end || gathered.count + count > GatheredWrites.limit {
                let flushed = flush()
                guard flushed == SQLITE_OK else { return flushed }
            }
            gathered.append(bytes, count: count, at: offset)
            if gathered.commitPageFollows {
                // This was the commit frame's page: the commit is complete.
                gathered.commitPageFollows = false
                return flush()
            }
            gathered.commitPageFollows = Self.isCommitFrameHeader(bytes, count: count, at: offset)
            return SQLITE_OK
        }

        /// A frame header (24 bytes, after the 32-byte WAL header) whose bytes 4–7, the database
        /// size in pages after the commit, are non-zero: the last frame of a commit.
        static func isCommitFrameHeader(_ bytes: UnsafeRawPointer, count: Int, at offset: Int64) -> Bool {
            guard count == 24, offset >= 32 else { return false }
            return bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self) != 0
        }

        /// The most the default VFS writes in one call: `unixWrite` masks a length to 17 bits
        /// (it expects pages), so larger writes go in pieces of this size.
        static let largestWrite = 0x1F000

        /// Writes what was gathered, in as few calls as the default VFS takes.
        func flush() -> Int32 {
            let gathered = self.gathered
            guard !gathered.isEmpty else { return SQLITE_OK }
            let (start, count) = (gathered.start, gathered.count)
            gathered.clear()
            var written = 0
            while written < count {
                let piece = min(Self.largestWrite, count - written)
                gathered.made += 1
                let status = real.pointee.pMethods.pointee.xWrite(real, gathered.bytes + written, Int32(piece), start + Int64(written))
                guard status == SQLITE_OK else { return status }
                written += piece
            }
            return SQLITE_OK
        }
    }

    /// Contiguous bytes waiting to be written to one WAL file, from `start`.
    fileprivate final class GatheredWrites {
        /// At most this many bytes wait (unless one write alone is larger; SQLite's are a page).
        static let limit = 8 << 20
        private(set) var bytes: UnsafeMutableRawPointer
        private var capacity = 256 << 10
        private(set) var start: Int64 = 0
        private(set) var count = 0
        var commitPageFollows = false
        var requested = 0
        var made = 0

        init() { bytes = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16) }

        deinit { bytes.deallocate() }

        var isEmpty: Bool { count == 0 }
        var end: Int64 { start + Int64(count) }

        func append(_ source: UnsafeRawPointer, count extra: Int, at offset: Int64) {
            if count + extra > capacity {
                let grownCapacity = max(min(Self.limit, capacity * 2), count + extra)
                let grown = UnsafeMutableRawPointer.allocate(byteCount: grownCapacity, alignment: 16)
                grown.copyMemory(from: bytes, byteCount: count)
                bytes.deallocate()
                bytes = grown
                capacity = grownCapacity
            }
            if count == 0 { start = offset }
            (bytes + count).copyMemory(from: source, byteCount: extra)
            count += extra
        }

        func clear() { count = 0 }
    }
}

import CPurseSQLite
import Synchronization
import VaporCSQLite

/// Keeps the in-memory sub-journal's chunks for reuse instead of returning them to `malloc`.
///
/// Every transaction after the first in a writer group runs inside a savepoint, and SQLite copies
/// each page such a transaction first changes into the savepoint's sub-journal — in memory here
/// (`temp_store = MEMORY`), in chunks of 1 KiB, all freed at `RELEASE`. A typical transaction's ~10 pages
/// are ~40 chunks allocated and freed per savepoint: more than the C allocator's per-thread cache
/// holds (7 blocks of a size), so most went through its arena — splitting and merging free
/// blocks — and in a malloc trace of the writer they were a quarter of its allocations. The pool
/// (C, `purse_sqlite3_install_chunk_pool`) keeps up to 256 freed 1 KiB blocks per thread and hands
/// them out first; every other allocation passes through to SQLite's default allocator unchanged.
///
/// Like the page cache (``PageCacheParking``), SQLite takes an allocator only before it
/// initialises, for the whole process: the server installs the pool at start-up
/// (``SQLiteTuning/installProcessHooks()``). If SQLite was initialised first, ``install()``
/// returns false and nothing changes.
enum SubJournalChunkPool {
    /// SQLite's in-memory journal chunk (`MEMJOURNAL_DFLT_FILECHUNKSIZE`).
    static let chunkBytes: Int32 = 1024
    /// Blocks kept per thread: a savepoint of 64 pages' worth.
    static let perThread: Int32 = 256

    /// Makes SQLite allocate through the pool from now on; true when it does. Only the first
    /// call installs; later calls return its answer.
    static func install() -> Bool {
        installation
    }

    /// Whether an earlier ``install()`` put the pool in force.
    static var isInstalled: Bool { installed.load(ordering: .relaxed) }

    private static let installed = Atomic<Bool>(false)
    private static let installation: Bool = {
        let done = purse_sqlite3_install_chunk_pool(chunkBytes, perThread) == SQLITE_OK
        installed.store(done, ordering: .relaxed)
        return done
    }()

    /// Allocations the pool served from its free lists since the process started.
    static var reused: Int { purse_sqlite3_chunk_pool_reused() }
}

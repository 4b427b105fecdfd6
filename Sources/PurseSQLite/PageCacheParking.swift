import CPurseSQLite
import Synchronization
import VaporCSQLite

/// SQLite's own page cache with one page number kept out of it: the one under which the b-tree
/// parks a page for a moment while it renumbers the pages of a split.
///
/// After a split, `balance_nonroot` puts the new sibling pages in ascending page order by
/// swapping numbers through a temporary one, the lock-byte page's (`PENDING_BYTE / pageSize + 1`:
/// 262,145 for 4 KiB pages), which no page ever has. The default cache (`pcache1`) remembers the
/// largest number it has held, and at the end of every write transaction SQLite truncates the
/// cache to the database's size: when that largest number lies more than the hash table's size
/// past the end, the truncate walks the whole hash table — every bucket and every cached page —
/// instead of the few buckets past the end. So each transaction that split a page with a
/// reordering left a walk of the writer's whole cache (8,192 pages here) for its commit: in the
/// write benchmark (Nexus top-ups) 9.6 % of the writer's time, 3.4 % of the server's.
///
/// This cache is the default one, called through, with that temporary number renamed 0: no page
/// has number 0 (they count from 1), so the renaming is one-to-one, the parked page is found under
/// it as before, and the default cache's largest number stays the database's. Every other number
/// and call passes through unchanged.
///
/// SQLite takes a page cache only before it initialises, for the whole process, so the server
/// installs this one at start-up (``SQLiteTuning/installProcessHooks()``), before it opens a
/// connection. If SQLite was initialised first (by other code in the process), ``install()``
/// returns false and connections use the default cache as it is.
enum PageCacheParking {
    /// Makes every connection the process opens from now on use this cache; true when it is in
    /// force. Only the first call installs; later calls return its answer.
    static func install() -> Bool {
        installation
    }

    /// Whether an earlier ``install()`` put this cache in force.
    static var isInstalled: Bool { installed.load(ordering: .relaxed) }

    private static let installed = Atomic<Bool>(false)
    private static let installation: Bool = {
        let done = replaceDefaultCache()
        installed.store(done, ordering: .relaxed)
        return done
    }()

    /// How many times a page was parked (a split reordered its pages) since the process started.
    static var parkings: Int { parked.load(ordering: .relaxed) }

    private static let parked = Atomic<Int>(0)
    /// SQLite's default page cache, as it was before this one replaced it.
    nonisolated(unsafe) private static var base = sqlite3_pcache_methods2()
    /// `PENDING_BYTE`: the first byte of SQLite's lock range, 1 GiB into the file.
    private static let pendingByte = 0x4000_0000

    /// One cache: the default cache's, and the number to rename for its page size.
    private struct Cache {
        var inner: OpaquePointer
        var parkingNumber: UInt32
        var methods: sqlite3_pcache_methods2

        func key(_ number: UInt32) -> UInt32 { number == parkingNumber ? 0 : number }
    }

    private static func replaceDefaultCache() -> Bool {
        var base = sqlite3_pcache_methods2()
        guard purse_sqlite3_config_getpcache2(&base) == SQLITE_OK, base.xCreate != nil, base.xCachesize != nil,
              base.xPagecount != nil, base.xFetch != nil, base.xUnpin != nil, base.xRekey != nil, base.xTruncate != nil,
              base.xDestroy != nil
        else { return false }
        Self.base = base
        var methods = sqlite3_pcache_methods2(
            iVersion: base.iVersion, pArg: base.pArg, xInit: base.xInit, xShutdown: base.xShutdown,
            xCreate: { pageSize, extra, purgeable in PageCacheParking.create(pageSize: pageSize, extra: extra, purgeable: purgeable) },
            xCachesize: { cache, size in PageCacheParking.unwrap(cache) { $0.methods.xCachesize($0.inner, size) } },
            xPagecount: { cache in PageCacheParking.unwrap(cache) { $0.methods.xPagecount($0.inner) } },
            xFetch: { cache, number, create in PageCacheParking.unwrap(cache) { $0.methods.xFetch($0.inner, $0.key(number), create) } },
            xUnpin: { cache, page, discard in PageCacheParking.unwrap(cache) { $0.methods.xUnpin($0.inner, page, discard) } },
            xRekey: { cache, page, old, new in
                PageCacheParking.unwrap(cache) { cache in
                    if new == cache.parkingNumber { PageCacheParking.parked.add(1, ordering: .relaxed) }
                    cache.methods.xRekey(cache.inner, page, cache.key(old), cache.key(new))
                }
            },
            xTruncate: { cache, limit in PageCacheParking.unwrap(cache) { $0.methods.xTruncate($0.inner, limit) } },
            xDestroy: { cache in PageCacheParking.destroy(cache) },
            xShrink: { cache in PageCacheParking.unwrap(cache) { $0.methods.xShrink?($0.inner) } }
        )
        return purse_sqlite3_config_pcache2(&methods) == SQLITE_OK
    }

    private static func create(pageSize: Int32, extra: Int32, purgeable: Int32) -> OpaquePointer? {
        guard pageSize > 0, let inner = base.xCreate(pageSize, extra, purgeable) else { return nil }
        let cache = UnsafeMutablePointer<Cache>.allocate(capacity: 1)
        cache.initialize(to: Cache(inner: inner, parkingNumber: UInt32(pendingByte / Int(pageSize) + 1), methods: base))
        return OpaquePointer(cache)
    }

    private static func destroy(_ cache: OpaquePointer?) {
        guard let cache else { return }
        let wrapper = UnsafeMutablePointer<Cache>(cache)
        wrapper.pointee.methods.xDestroy(wrapper.pointee.inner)
        wrapper.deinitialize(count: 1)
        wrapper.deallocate()
    }

    private static func unwrap<Result>(_ cache: OpaquePointer?, _ body: (Cache) -> Result) -> Result {
        body(UnsafeMutablePointer<Cache>(cache!).pointee)
    }
}

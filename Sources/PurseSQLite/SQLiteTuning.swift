import Foundation
import VaporCSQLite

/// The engine's changes to how SQLite itself works, each of which can be switched off.
///
/// Two are process-wide and must be in place before SQLite initialises — the page cache
/// (``PageCacheParking``) and the allocator (``SubJournalChunkPool``) — so the server installs
/// them explicitly at start-up (``installProcessHooks()``), before it opens its database; opening
/// a connection never installs anything. The other two are chosen per database when it opens:
/// the VFS its files are opened through (``CombinedWALWrites``) and the writer thread's priority
/// (``WriterThread``). With everything off, the engine runs on SQLite exactly as sqlite-nio
/// bundles it.
///
/// `PURSE_SQLITE_TUNING` configures it: `all` (the default), `none`, or a comma-separated list of
/// ``Hook`` names.
public struct SQLiteTuning: Sendable, Equatable, CustomStringConvertible {
    /// One change to SQLite, by its configuration name.
    public enum Hook: String, Sendable, CaseIterable {
        case pageCacheParking = "page-cache-parking"
        case subJournalChunkPool = "sub-journal-chunk-pool"
        case combinedWALWrites = "combined-wal-writes"
        case writerPriority = "writer-priority"
    }

    public var hooks: Set<Hook>

    public init(_ hooks: Set<Hook>) { self.hooks = hooks }

    /// Every hook: what the benchmarks measure and `purse serve` runs by default.
    public static let all = SQLiteTuning(Set(Hook.allCases))
    /// SQLite as bundled.
    public static let none = SQLiteTuning([])

    /// Reads `all`, `none` or a comma-separated list of hook names.
    /// - Throws: ``SQLiteTuningError`` naming an unknown hook.
    public init(parsing text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        switch trimmed {
        case "", "all": self = .all
        case "none": self = .none
        default:
            var hooks = Set<Hook>()
            for name in trimmed.split(separator: ",") {
                let name = name.trimmingCharacters(in: .whitespaces)
                guard let hook = Hook(rawValue: name) else {
                    throw SQLiteTuningError(description: "unknown SQLite hook '\(name)'; known: all, none, \(Hook.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                hooks.insert(hook)
            }
            self.hooks = hooks
        }
    }

    public func contains(_ hook: Hook) -> Bool { hooks.contains(hook) }

    public var description: String {
        hooks.isEmpty ? "none" : Hook.allCases.filter(hooks.contains).map(\.rawValue).joined(separator: ",")
    }

    /// Installs the process-wide hooks this tuning asks for, before SQLite initialises in the
    /// process. A hook that was asked for but could not be installed (SQLite was already
    /// initialised by other code) is missing from the result; a hook that an earlier call
    /// installed stays in force whatever later calls ask.
    /// - Returns: This tuning as it is in force: the per-database hooks as asked, the
    ///   process-wide ones as installed.
    @discardableResult
    public func installProcessHooks() -> SQLiteTuning {
        var inForce = self
        if contains(.pageCacheParking), !PageCacheParking.install() { inForce.hooks.remove(.pageCacheParking) }
        if contains(.subJournalChunkPool), !SubJournalChunkPool.install() { inForce.hooks.remove(.subJournalChunkPool) }
        return inForce
    }

    /// The version of the SQLite sqlite-nio bundles, which the hooks were validated against.
    public static var sqliteVersion: String { String(cString: sqlite_nio_sqlite3_libversion()) }
}

/// `PURSE_SQLITE_TUNING` named something that is not a hook.
public struct SQLiteTuningError: Error, CustomStringConvertible {
    public var description: String
}

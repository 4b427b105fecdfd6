import Foundation
import Logging
import NIOCore
import NIOPosix
import PurseDatabase
import SQLKit
import SQLiteKit
import SQLiteNIO
import VaporCSQLite

/// One libsqlite3 connection whose statements run on the calling thread.
///
/// SQLiteNIO hands every statement to a thread pool and back (three thread switches each); a
/// payment runs about twenty statements inside one write transaction, so those switches — not
/// SQLite — were the cost of a request, and the write lock was held across all of them. Here a
/// statement is a few microseconds of C on the task's own thread, prepared once and then reused
/// from a cache keyed by its SQL text (or its ``DatabaseStatement/cacheKey``).
///
/// Not thread-safe on its own (opened without SQLite's per-connection mutex): ``SQLiteDriver``
/// lets one task at a time use it — the writer's queue or a reader lease gives the
/// happens-before edges between tasks that run on different threads.
final class SQLiteConnectionHandle: @unchecked Sendable {
    private var handle: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]
    /// The same statements, by ``DatabaseStatement/cacheKey``, for those run as a `DatabaseStatement`.
    private var statementsByKey: [Int: OpaquePointer] = [:]
    private let statementCacheLimit = 256

    /// - Parameters:
    ///   - path: The database file, or nil for a private in-memory database.
    ///   - combiningWALWrites: Open the file through ``CombinedWALWrites`` (one write per commit)
    ///     rather than the default VFS.
    init(path: String?, combiningWALWrites: Bool = false) throws {
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
        var handle: OpaquePointer?
        let vfs = path == nil || !combiningWALWrites || CombinedWALWrites.name.isEmpty ? nil : CombinedWALWrites.name
        let status = sqlite_nio_sqlite3_open_v2(path ?? ":memory:", &handle, flags, vfs)
        guard status == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite_nio_sqlite3_errmsg($0)) } ?? "out of memory"
            sqlite_nio_sqlite3_close_v2(handle)
            throw SQLiteStatementError(code: status, message: message, sql: nil)
        }
        self.handle = handle
        sqlite_nio_sqlite3_extended_result_codes(handle, 1)
    }

    deinit { close() }

    func close() {
        for statement in statements.values { sqlite_nio_sqlite3_finalize(statement) }
        statements.removeAll()
        statementsByKey.removeAll()
        if let handle { sqlite_nio_sqlite3_close_v2(handle) }
        handle = nil
    }

    /// True between `BEGIN` and the end of the transaction — false also after SQLite rolled a
    /// transaction back on its own (an I/O error, a full disk).
    var inTransaction: Bool {
        guard let handle else { return false }
        return sqlite_nio_sqlite3_get_autocommit(handle) == 0
    }

    /// Rows the last finished `INSERT`, `UPDATE` or `DELETE` changed.
    var changes: Int {
        guard let handle else { return 0 }
        return Int(sqlite_nio_sqlite3_changes64(handle))
    }

    /// True when the open transaction holds foreign-key violations that a deferred constraint
    /// will only report at `COMMIT`.
    var hasDeferredForeignKeyViolations: Bool {
        guard let handle else { return false }
        var current: Int32 = 0, highwater: Int32 = 0
        sqlite_nio_sqlite3_db_status(handle, SQLITE_DBSTATUS_DEFERRED_FKS, &current, &highwater, 0)
        return current > 0
    }

    /// Copies committed WAL frames into the database file without holding writers or readers
    /// back (`SQLITE_CHECKPOINT_PASSIVE`, unless `mode` says otherwise): frames a running reader
    /// may still need stay in the WAL. Returns the WAL's size and how much of it is now in the database, in frames (pages),
    /// or nil when another checkpoint was running. Blocks on file I/O (two fsyncs): call it off the
    /// cooperative pool.
    ///
    /// Fails when the connection is not in WAL mode — a connection only learns that the file is
    /// in WAL mode when it first reads it, and until then SQLite answers a checkpoint with
    /// success and does nothing.
    func checkpoint(_ mode: Int32 = SQLITE_CHECKPOINT_PASSIVE) throws -> (walPages: Int, checkpointedPages: Int)? {
        guard let handle else { throw SQLiteStatementError(code: SQLITE_MISUSE, message: "connection closed", sql: nil) }
        var walPages: Int32 = 0, checkpointed: Int32 = 0
        let status = sqlite_nio_sqlite3_wal_checkpoint_v2(handle, nil, mode, &walPages, &checkpointed)
        if status == SQLITE_BUSY { return nil }
        guard status == SQLITE_OK else {
            throw SQLiteStatementError(code: status, message: String(cString: sqlite_nio_sqlite3_errmsg(handle)), sql: "checkpoint")
        }
        guard walPages >= 0 else {
            throw SQLiteStatementError(code: SQLITE_MISUSE, message: "checkpoint on a connection that is not in WAL mode", sql: "checkpoint")
        }
        return (Int(walPages), Int(checkpointed))
    }

    /// Empties the WAL file (`SQLITE_CHECKPOINT_TRUNCATE`) without waiting on any lock: it copies
    /// what is left, then cuts the file to zero bytes — unless a reader still reads from the WAL,
    /// or another connection holds the write lock, and then it does nothing more. Returns true
    /// when the file was emptied. Blocks on file I/O: call it where nothing waits on it.
    func truncateWAL() throws -> Bool {
        var timeout = 0
        try execute("PRAGMA busy_timeout", []) { row in timeout = (try? row.decode(column: "timeout", as: Int.self)) ?? 0 }
        try execute("PRAGMA busy_timeout = 0", []) { _ in }
        defer { try? execute("PRAGMA busy_timeout = \(timeout)", []) { _ in } }
        return try checkpoint(SQLITE_CHECKPOINT_TRUNCATE)?.walPages == 0
    }

    /// Syncs the main database file to disk through SQLite's own file (its VFS's `xSync`, as a
    /// checkpoint would): pages an earlier passive checkpoint copied into the file are durable
    /// afterwards, so the checkpoint that finally reaches the end of the WAL has only its own pages
    /// left to sync. Blocks on file I/O: call it off the cooperative pool.
    func syncDatabaseFile() throws {
        guard let handle else { throw SQLiteStatementError(code: SQLITE_MISUSE, message: "connection closed", sql: nil) }
        var file: UnsafeMutablePointer<sqlite3_file>?
        let status = sqlite_nio_sqlite3_file_control(handle, "main", SQLITE_FCNTL_FILE_POINTER, &file)
        guard status == SQLITE_OK, let file, let methods = file.pointee.pMethods, let sync = methods.pointee.xSync else {
            throw SQLiteStatementError(code: status == SQLITE_OK ? SQLITE_MISUSE : status, message: "no database file to sync", sql: "sync")
        }
        let synced = sync(file, SQLITE_SYNC_NORMAL)
        guard synced == SQLITE_OK else { throw SQLiteStatementError(code: synced, message: "sync of the database file failed", sql: "sync") }
    }

    /// The writes SQLite asked for on this connection's WAL and those made (``CombinedWALWrites``),
    /// or nil when it has no WAL open through that VFS.
    var walWriteCounts: CombinedWALWrites.Counts? {
        guard let handle else { return nil }
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite_nio_sqlite3_file_control(handle, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file) == SQLITE_OK, let file else { return nil }
        return CombinedWALWrites.counts(of: file)
    }

    /// Runs one statement with its parameters, calling `onRow` for every result row.
    func execute(_ sql: String, _ binds: [SQLiteData], onRow: (SQLiteResultRow) throws -> Void) throws {
        guard let handle else { throw SQLiteStatementError(code: SQLITE_MISUSE, message: "connection closed", sql: sql) }
        let statement = try prepared(sql, on: handle)
        // Every parameter is bound afresh below, so the old values need no clearing — and
        // `sqlite3_clear_bindings` expires any statement whose plan looked at a bound value,
        // making the next run prepare it again (the credentials query did, every time).
        defer { sqlite_nio_sqlite3_reset(statement) }
        for (offset, value) in binds.enumerated() {
            try check(bind(value, at: Int32(offset + 1), to: statement), sql: sql, on: handle)
        }
        try step(statement, sql: sql, on: handle, onRow: onRow)
    }

    /// Runs a ``DatabaseStatement`` with its values (value *n* for parameter *n*), calling `onRow` for
    /// every result row. The statement is found in the cache by its ``DatabaseStatement/cacheKey``.
    func execute(_ sql: DatabaseStatement, _ values: [SQLValue], onRow: (SQLiteResultRow) throws -> Void) throws {
        guard let handle else { throw SQLiteStatementError(code: SQLITE_MISUSE, message: "connection closed", sql: sql.sqliteText) }
        let statement: OpaquePointer
        if let known = statementsByKey[sql.cacheKey] {
            statement = known
        } else {
            statement = try prepared(sql.sqliteText, on: handle)
            // Statements made per run (postings of more than `LedgerStatements.cached` entries)
            // bring new keys for cached text: start the map again rather than let it grow.
            if statementsByKey.count >= statementCacheLimit { statementsByKey.removeAll(keepingCapacity: true) }
            statementsByKey[sql.cacheKey] = statement
        }
        defer { sqlite_nio_sqlite3_reset(statement) }
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status = switch value {
            case .integer(let integer): sqlite_nio_sqlite3_bind_int64(statement, index, integer)
            case .text(let text): bind(text, at: index, to: statement)
            case .null: sqlite_nio_sqlite3_bind_null(statement, index)
            }
            try check(status, sql: sql.sqliteText, on: handle)
        }
        try step(statement, sql: sql.sqliteText, on: handle, onRow: onRow)
    }

    private func step(_ statement: OpaquePointer, sql: String, on handle: OpaquePointer, onRow: (SQLiteResultRow) throws -> Void) throws {
        var columns: SQLiteResultColumns?
        while true {
            let status = sqlite_nio_sqlite3_step(statement)
            if status == SQLITE_DONE { return }
            guard status == SQLITE_ROW else { try check(status, sql: sql, on: handle); return }
            let names = columns ?? SQLiteResultColumns(statement)
            columns = names
            var values: [SQLiteData] = []
            values.reserveCapacity(names.names.count)
            for column in 0..<Int32(names.names.count) {
                values.append(try value(of: statement, at: column))
            }
            try onRow(SQLiteResultRow(columns: names, values: values))
        }
    }

    private func prepared(_ sql: String, on handle: OpaquePointer) throws -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let status = sqlite_nio_sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else {
            throw SQLiteStatementError(code: status, message: String(cString: sqlite_nio_sqlite3_errmsg(handle)), sql: sql)
        }
        if statements.count >= statementCacheLimit {
            for cached in statements.values { sqlite_nio_sqlite3_finalize(cached) }
            statements.removeAll(keepingCapacity: true)
            statementsByKey.removeAll(keepingCapacity: true)
        }
        statements[sql] = statement
        return statement
    }

    private func bind(_ value: SQLiteData, at index: Int32, to statement: OpaquePointer) -> Int32 {
        switch value {
        case .integer(let integer):
            return sqlite_nio_sqlite3_bind_int64(statement, index, Int64(integer))
        case .float(let double):
            return sqlite_nio_sqlite3_bind_double(statement, index, double)
        case .text(let text):
            return bind(text, at: index, to: statement)
        case .blob(let buffer):
            return buffer.withUnsafeReadableBytes {
                sqlite_nio_sqlite3_bind_blob64(statement, index, $0.baseAddress, UInt64($0.count), transientDestructor)
            }
        case .null:
            return sqlite_nio_sqlite3_bind_null(statement, index)
        }
    }

    /// Text by its UTF-8 bytes and length (SQLite copies them): no C string is made, which for
    /// short strings — stored inline, without a terminator — meant a copy on the heap.
    private func bind(_ text: String, at index: Int32, to statement: OpaquePointer) -> Int32 {
        var text = text
        return text.withUTF8 { bytes in
            // A non-null pointer even for empty text, which SQLite would otherwise bind as NULL.
            bytes.withMemoryRebound(to: CChar.self) { characters in
                sqlite_nio_sqlite3_bind_text64(statement, index, characters.baseAddress ?? emptyText, UInt64(characters.count), transientDestructor, UInt8(SQLITE_UTF8))
            }
        }
    }

    private func value(of statement: OpaquePointer, at column: Int32) throws -> SQLiteData {
        switch sqlite_nio_sqlite3_column_type(statement, column) {
        case SQLITE_INTEGER:
            return .integer(Int(sqlite_nio_sqlite3_column_int64(statement, column)))
        case SQLITE_FLOAT:
            return .float(sqlite_nio_sqlite3_column_double(statement, column))
        case SQLITE_TEXT:
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
            guard let text = sqlite_nio_sqlite3_column_text(statement, column) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            if let bytes = sqlite_nio_sqlite3_column_blob(statement, column) {
                buffer.writeBytes(UnsafeRawBufferPointer(start: bytes, count: count))
            }
            return .blob(buffer)
        default:
            return .null
        }
    }

    private func check(_ status: Int32, sql: String, on handle: OpaquePointer) throws {
        guard status != SQLITE_OK else { return }
        throw SQLiteStatementError(code: status, message: String(cString: sqlite_nio_sqlite3_errmsg(handle)), sql: sql)
    }
}

/// `SQLITE_TRANSIENT`: SQLite copies a bound value before the call returns.
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
/// A C string of length 0, for binding empty text (a null pointer would bind NULL).
nonisolated(unsafe) private let emptyText: UnsafePointer<CChar> = {
    let text = UnsafeMutablePointer<CChar>.allocate(capacity: 1)
    text.initialize(to: 0)
    return UnsafePointer(text)
}()

/// A statement failed; `code` is SQLite's extended result code.
struct SQLiteStatementError: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    let sql: String?

    var description: String { "SQLite error \(code): \(message)" }
}

/// Column names of a result, shared by all its rows.
final class SQLiteResultColumns: Sendable {
    let names: [String]
    let offsets: [String: Int]

    init(_ statement: OpaquePointer) {
        let count = Int(sqlite_nio_sqlite3_column_count(statement))
        let names = (0..<count).map { String(cString: sqlite_nio_sqlite3_column_name(statement, Int32($0))) }
        self.names = names
        self.offsets = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
    }
}

/// One result row, decoded with SQLiteKit's decoder so values read exactly as they did through
/// SQLiteNIO.
struct SQLiteResultRow: SQLRow {
    let columns: SQLiteResultColumns
    let values: [SQLiteData]

    var allColumns: [String] { columns.names }

    func contains(column: String) -> Bool { columns.offsets[column] != nil }

    func decodeNil(column: String) throws -> Bool {
        guard let offset = columns.offsets[column] else { return true }
        return values[offset] == .null
    }

    func decode<D: Decodable>(column: String, as type: D.Type) throws -> D {
        guard let offset = columns.offsets[column] else {
            throw DecodingError.keyNotFound(
                SQLiteColumnKey(stringValue: column),
                .init(codingPath: [], debugDescription: "No column named \(column)"))
        }
        let value = values[offset]
        // The common column types directly; anything else (and any mismatch, for its error)
        // through SQLiteKit's decoder, which gives the same results for these.
        switch value {
        case .text(let text):
            if D.self == String.self || D.self == String?.self { return text as! D }
        case .integer(let integer):
            if D.self == Int.self || D.self == Int?.self { return integer as! D }
            if D.self == Int64.self || D.self == Int64?.self { return Int64(integer) as! D }
        case .null:
            if D.self == String?.self { return String?.none as! D }
            if D.self == Int?.self { return Int?.none as! D }
            if D.self == Int64?.self { return Int64?.none as! D }
        default:
            break
        }
        return try SQLiteDataDecoder().decode(D.self, from: value)
    }
}

private struct SQLiteColumnKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

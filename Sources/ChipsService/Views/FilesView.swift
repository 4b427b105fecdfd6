import ChipsProtocol
import Crypto
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// `mychips.file_v_me`: the signed-in user's files — the profile photo the app shows as their
/// avatar, and documents (bio, id, cert, other) — with the columns of MyCHIPs' `base.file_v`:
/// the bytes as a Buffer (`file_data`) and as base64 (`file_data64`), the SHA-256 (`file_hash`,
/// and `digest` in base64url), and `file_prim`, the main file of its type. The first file of a
/// type is its main one; a file marked main takes over from the one before. The main public
/// files are the certificate's `file` list (`{media, format, digest, comment}`), which partners
/// find in the tally and fetch by digest (the `file` action of `tallies_v_me`).
///
/// Writes lock the user's record, as every profile edit does, so the main file and the
/// certificate change together. The `photo` action stores a profile picture: a JPEG, PNG or
/// GIF whose header matches the format it is sent as, within ``maxBytes`` and ``maxPixels`` a
/// side. It is stored as sent (the app crops its pictures to a square before sending); MyCHIPs
/// rescales to 512 pixels, which this provider does not.
struct FilesView: ChipsView {
    let name = "mychips.file_v_me"
    let primaryKey = ["file_ent", "file_seq"]
    let columns: [ViewColumn] = [
        ViewColumn(name: "file_ent", type: .text, nonull: true, writable: true, listed: false),
        ViewColumn(name: "file_seq", type: .int, nonull: true, size: 4),
        ViewColumn(name: "file_type", type: .text, nonull: true, writable: true, size: 6, values: FilesView.types),
        ViewColumn(name: "file_data", type: .bytea, nonull: true, writable: true, listed: false),
        ViewColumn(name: "file_fmt", type: .text, nonull: true, writable: true, size: 12),
        ViewColumn(name: "file_cmt", type: .text, writable: true, size: 20),
        ViewColumn(name: "file_priv", type: .bool, nonull: true, writable: true, listed: false),
        ViewColumn(name: "file_hash", type: .bytea, nonull: true, listed: false),
        ViewColumn(name: "crt_by", type: .text, listed: false),
        ViewColumn(name: "mod_by", type: .text, listed: false),
        ViewColumn(name: "crt_date", type: .timestamp, listed: false),
        ViewColumn(name: "mod_date", type: .timestamp, listed: false),
        ViewColumn(name: "std_name", type: .text, listed: false),
        ViewColumn(name: "file_prim", type: .bool, nonull: true, writable: true, size: 4),
        ViewColumn(name: "file_size", type: .int, size: 8),
        ViewColumn(name: "file_data64", type: .text, listed: false),
        ViewColumn(name: "file_ext", type: .text, listed: false),
        ViewColumn(name: "file_name", type: .text, listed: false),
        ViewColumn(name: "digest", type: .text, listed: false),
    ]

    static let types = ["bio", "cert", "id", "other", "photo"]
    /// The largest file stored: a request carries its bytes as a JSON Buffer (up to four
    /// characters a byte), within ``ChipsConfiguration/maxMessageBytes``.
    static let maxBytes = 160 << 10
    /// The longest side of a stored picture.
    static let maxPixels = 4096
    static let maxFilesPerUser = 50

    /// A stored file.
    struct File: Sendable {
        var ent: String
        var seq: Int64
        var type: String
        var format: String
        var comment: String?
        var isPrivate: Bool
        var isMain: Bool
        var hash: String
        var data: Data
        var created: EpochMillis
        var modified: EpochMillis

        static let columns = "file_ent, file_seq, file_type, file_fmt, file_cmt, file_hash, file_data, crt_date, mod_date, "
            + "CASE WHEN file_priv THEN 1 ELSE 0 END AS priv, CASE WHEN file_prim THEN 1 ELSE 0 END AS prim"

        init(row: any SQLRow) throws {
            ent = try row.decode(column: "file_ent", as: String.self)
            seq = try row.decode(column: "file_seq", as: Int64.self)
            type = try row.decode(column: "file_type", as: String.self)
            format = try row.decode(column: "file_fmt", as: String.self)
            comment = try row.decode(column: "file_cmt", as: String?.self)
            hash = try row.decode(column: "file_hash", as: String.self)
            data = Data(base64Encoded: try row.decode(column: "file_data", as: String.self)) ?? Data()
            created = try row.decode(column: "crt_date", as: Int64.self)
            modified = try row.decode(column: "mod_date", as: Int64.self)
            isPrivate = try row.decode(column: "priv", as: Int.self) != 0
            isMain = try row.decode(column: "prim", as: Int.self) != 0
        }

        /// The row as `base.file_v` shows it (with `file_v_me`'s `digest`).
        func row(of user: ChipsUserRecord) -> [String: JSONValue] {
            let stdName = [user.entName, user.firName].compactMap { $0 }.joined(separator: ", ")
            return [
                "file_ent": .string(ent), "file_seq": .int(seq), "file_type": .string(type), "file_data": FilesView.buffer(data),
                "file_fmt": .string(format), "file_cmt": comment.map(JSONValue.string) ?? .null, "file_priv": .bool(isPrivate),
                "file_hash": ChipsDigest.buffer(hash), "crt_by": .string(user.username), "mod_by": .string(user.username),
                "crt_date": .string(JavaScriptDate.string(epochMillis: created)), "mod_date": .string(JavaScriptDate.string(epochMillis: modified)),
                "std_name": .string(stdName), "file_prim": .bool(isMain), "file_size": .int(Int64(data.count)),
                "file_data64": .string(FilesView.postgresBase64(data)), "file_ext": .string(extensionName), "file_name": .string(fileName),
                "digest": .string(hash),
            ]
        }

        /// The last part of the MIME type (`jpeg` of `image/jpeg`), as the real view's `file_ext`.
        var extensionName: String { String(format.split(separator: "/", omittingEmptySubsequences: false).last ?? "") }

        /// The comment (or type) with `/`, `:` and spaces made `_` and trailing dots dropped:
        /// the real view's `file_name`.
        var fileName: String {
            var name = String((comment ?? type).map { $0 == "/" || $0 == ":" || $0.isWhitespace ? "_" : $0 })
            while let last = name.last, last == "." || last.isWhitespace { name.removeLast() }
            return name
        }

        /// The file's entry in its owner's certificate.
        var certificateEntry: JSONValue {
            var entry: [String: JSONValue] = ["media": .string(type), "format": .string(format), "digest": .string(hash)]
            if let comment { entry["comment"] = .string(comment) }
            return .object(entry)
        }
    }

    /// Bytes as node-postgres hands a `bytea` to a Wyseman client: `{type: "Buffer", data: […]}`.
    static func buffer(_ data: Data) -> JSONValue {
        .object(["type": "Buffer", "data": .array(data.map { .int(Int64($0)) })])
    }

    /// Base64 as PostgreSQL's `encode(…, 'base64')` writes it, in lines of 76 characters.
    static func postgresBase64(_ data: Data) -> String {
        data.base64EncodedString(options: [.lineLength76Characters, .endLineWithLineFeed])
    }

    /// The bytes of a `file_data` value: a Buffer object, or PostgreSQL's `\x` hex text.
    static func bytes(of value: JSONValue) throws(WysemanError) -> Data {
        let invalid = WysemanError.database("invalid input syntax for type bytea", sqlState: "22P02")
        switch value {
        case .object(let members) where members["type"] == .string("Buffer"):
            guard case .array(let items)? = members["data"], items.count <= maxBytes else {
                throw .constraint("a file is at most \(maxBytes) bytes", code: "!base.file:SIZ")
            }
            var bytes = Data(capacity: items.count)
            for item in items {
                guard let number = item.int64Value, let byte = UInt8(exactly: number) else { throw invalid }
                bytes.append(byte)
            }
            return bytes
        case .string(let text) where text.hasPrefix("\\x"):
            let hex = text.dropFirst(2)
            guard hex.utf8.count / 2 <= maxBytes else { throw .constraint("a file is at most \(maxBytes) bytes", code: "!base.file:SIZ") }
            guard let bytes = Hex.decode(String(hex)) else { throw invalid }
            return Data(bytes)
        default:
            throw invalid
        }
    }

    static func all(of ent: String, in db: any DatabaseSession) async throws -> [File] {
        try await db.raw("SELECT \(unsafeRaw: File.columns) FROM chips_files WHERE file_ent = \(bind: ent) ORDER BY file_seq").all().map(File.init(row:))
    }

    func rows(parameters: [JSONValue], context: ViewContext) async throws -> [[String: JSONValue]] {
        let username = context.user.username
        let (user, files) = try await context.database.read { db -> (ChipsUserRecord?, [File]) in
            guard let user = try await ChipsUserRecord.load(username, in: db) else { return (nil, []) }
            return (user, try await Self.all(of: user.userEnt, in: db))
        }
        guard let user else { return [] }
        return files.map { $0.row(of: user) }
    }

    // MARK: - Writes

    /// The columns of a new file or an edit, checked as `base.file`'s columns and triggers
    /// check them.
    struct Change: Sendable {
        var type: String?
        var format: String?
        var comment: String??
        var isPrivate: Bool?
        var isMain: Bool?
        var data: Data?
    }

    func change(from fields: [String: JSONValue], user: ChipsUserRecord) throws -> Change {
        var change = Change()
        let types = columnTypes
        for (column, raw) in fields {
            guard let type = types[column] else { throw WysemanError.undefinedColumn(column) }
            guard columns.first(where: { $0.name == column })?.writable == true else {
                throw WysemanError.database("column \"\(column)\" of view \(name) can only be changed by the provider", sqlState: "42501")
            }
            let value = column == "file_data" ? raw : try type.coerce(raw, column: column)
            switch column {
            case "file_ent":
                guard value == .string(user.userEnt) else { throw WysemanError.database("new row violates row-level security policy", sqlState: "42501") }
            case "file_type":
                guard case .string(let text) = value, Self.types.contains(text) else {
                    throw WysemanError.database("new row for relation \"file\" violates check constraint \"file_file_type_check\"", sqlState: "23514")
                }
                change.type = text
            case "file_fmt":
                guard case .string(let text) = value, (3...100).contains(text.count), text.contains("/"), !text.contains(where: \.isNewline) else {
                    throw WysemanError.database("null value in column \"file_fmt\" of relation \"file\" violates not-null constraint", sqlState: "23502")
                }
                change.format = text.lowercased()
            case "file_cmt":
                switch value {
                case .null: change.comment = .some(nil)
                case .string(let text):
                    guard text.count <= 200 else { throw WysemanError.database("value too long for type character varying(200)", sqlState: "22001") }
                    change.comment = .some(text.isEmpty ? nil : text)
                default: throw WysemanError.database("invalid input for column \"file_cmt\"", sqlState: "22P02")
                }
            case "file_priv": change.isPrivate = value == .bool(true)
            case "file_prim": change.isMain = value == .bool(true)
            case "file_data":
                let data = try Self.bytes(of: value)
                guard !data.isEmpty else {
                    throw WysemanError.database("null value in column \"file_data\" of relation \"file\" violates not-null constraint", sqlState: "23502")
                }
                change.data = data
            default: break
            }
        }
        return change
    }

    /// The certificate's `file` list after a change: the main public files, by `seq`.
    static func certificateFiles(of ent: String, in db: any DatabaseSession) async throws -> JSONValue {
        let entries = try await all(of: ent, in: db).filter { $0.isMain && !$0.isPrivate }.map(\.certificateEntry)
        return entries.isEmpty ? .null : .string(JavaScriptJSON.stringify(.array(entries)))
    }

    /// Stores a new file for the user, in the user's locked write; answers its row.
    func store(_ change: Change, context: ViewContext) async throws -> [String: JSONValue] {
        guard let type = change.type else {
            throw WysemanError.database("null value in column \"file_type\" of relation \"file\" violates not-null constraint", sqlState: "23502")
        }
        guard let format = change.format else {
            throw WysemanError.database("null value in column \"file_fmt\" of relation \"file\" violates not-null constraint", sqlState: "23502")
        }
        guard let data = change.data else {
            throw WysemanError.database("null value in column \"file_data\" of relation \"file\" violates not-null constraint", sqlState: "23502")
        }
        try checkImage(data, format: format, type: type)
        let now = context.now().epochMillis
        let hash = Base64URL.encode(Data(SHA256.hash(data: data)))
        let (user, file) = try await UsersView.write(context: context) { current, db in
            let files = try await Self.all(of: current.userEnt, in: db)
            guard files.count < Self.maxFilesPerUser else {
                throw WysemanError.constraint("a user keeps at most \(Self.maxFilesPerUser) files", code: "!base.file:MAX")
            }
            guard !files.contains(where: { $0.type == type && $0.hash == hash }) else {
                throw WysemanError.database("duplicate key value violates unique constraint \"!base.file:USP\"", sqlState: "23505",
                                            detail: "Key (file_ent, file_type, file_hash) already exists.")
            }
            let seq = (files.map(\.seq).max() ?? 0) + 1
            // The first file of a type is its main one; a new main file takes over.
            let isMain = change.isMain == true || !files.contains { $0.type == type }
            if isMain {
                try await db.raw("UPDATE chips_files SET file_prim = \(bind: false) WHERE file_ent = \(bind: current.userEnt) AND file_type = \(bind: type)").run()
            }
            try await db.raw("""
                INSERT INTO chips_files (file_ent, file_seq, file_type, file_fmt, file_cmt, file_priv, file_prim, file_size, file_hash, file_data, crt_date, mod_date)
                VALUES (\(bind: current.userEnt), \(bind: seq), \(bind: type), \(bind: format), \(bind: change.comment ?? nil), \(bind: change.isPrivate ?? false),
                        \(bind: isMain), \(bind: data.count), \(bind: hash), \(bind: data.base64EncodedString()), \(bind: now), \(bind: now))
                """).run()
            guard let file = try await Self.all(of: current.userEnt, in: db).first(where: { $0.seq == seq }) else { throw WysemanError.unexpectedRows(0, expected: 1) }
            return (["cert_file": try await Self.certificateFiles(of: current.userEnt, in: db)], file)
        }
        return file.row(of: user)
    }

    /// Every image a user stores, by any path (the `photo` action or a plain insert): a file
    /// of type `photo`, or of any `image/…` format, must be a JPEG, PNG or GIF by its bytes,
    /// of the format it is stored as, at most ``maxPixels`` a side. So no script (HTML, SVG)
    /// is ever kept as a picture, whatever a client calls it.
    func checkImage(_ data: Data, format: String, type: String) throws {
        guard type == "photo" || format.hasPrefix("image/") else { return }
        guard let header = ImageHeader.read([UInt8](data)) else {
            throw WysemanError.constraint("the picture is not a JPEG, PNG or GIF image", code: "!\(name):IMG")
        }
        guard header.format.rawValue == format else {
            throw WysemanError.constraint("the picture is \(header.format.rawValue), sent as \(format)", code: "!\(name):IMG")
        }
        guard header.width <= Self.maxPixels, header.height <= Self.maxPixels else {
            throw WysemanError.constraint("the picture is at most \(Self.maxPixels) pixels a side", code: "!\(name):IMG")
        }
    }

    func insert(fields: [String: JSONValue], context: ViewContext) async throws -> JSONValue {
        let user = context.user
        return .object(try await store(try change(from: fields, user: user), context: context))
    }

    func update(fields: [String: JSONValue], filter: WhereClause, context: ViewContext) async throws -> JSONValue {
        guard !fields.isEmpty else { throw WysemanError.request("empty update", "badUpdate") }
        let change = try change(from: fields, user: context.user)
        guard change.data == nil, change.type == nil else {
            throw WysemanError.database("a file's type and bytes are written once: store a new file", sqlState: "42501")
        }
        let now = context.now().epochMillis
        let (user, file) = try await UsersView.write(context: context) { current, db in
            let files = try await Self.all(of: current.userEnt, in: db)
            let matched = files.filter { filter.matches($0.row(of: current)) }
            guard matched.count == 1, let file = matched.first else { throw WysemanError.unexpectedRows(matched.count, expected: 1) }
            if let format = change.format { try checkImage(file.data, format: format, type: file.type) }
            if change.isMain == true, !file.isMain {
                try await db.raw("UPDATE chips_files SET file_prim = \(bind: false) WHERE file_ent = \(bind: current.userEnt) AND file_type = \(bind: file.type)").run()
            }
            // A type keeps a main file while it has files: the main one cannot be unmarked.
            let isMain = file.isMain || change.isMain == true
            try await db.raw("""
                UPDATE chips_files SET file_fmt = \(bind: change.format ?? file.format), file_cmt = \(bind: change.comment ?? file.comment),
                    file_priv = \(bind: change.isPrivate ?? file.isPrivate), file_prim = \(bind: isMain), mod_date = \(bind: now)
                WHERE file_ent = \(bind: current.userEnt) AND file_seq = \(bind: file.seq)
                """).run()
            guard let stored = try await Self.all(of: current.userEnt, in: db).first(where: { $0.seq == file.seq }) else { throw WysemanError.unexpectedRows(0, expected: 1) }
            return (["cert_file": try await Self.certificateFiles(of: current.userEnt, in: db)], stored)
        }
        return .object(file.row(of: user))
    }

    func delete(filter: WhereClause, context: ViewContext) async throws {
        _ = try await UsersView.write(context: context) { current, db in
            let files = try await Self.all(of: current.userEnt, in: db)
            let doomed = files.filter { filter.matches($0.row(of: current)) }
            for file in doomed {
                try await db.raw("DELETE FROM chips_files WHERE file_ent = \(bind: current.userEnt) AND file_seq = \(bind: file.seq)").run()
            }
            // A type whose main file went keeps its newest file as main.
            for type in Set(doomed.filter(\.isMain).map(\.type)) {
                if let next = files.filter({ $0.type == type && !doomed.map(\.seq).contains($0.seq) }).max(by: { $0.seq < $1.seq }) {
                    try await db.raw("UPDATE chips_files SET file_prim = \(bind: true) WHERE file_ent = \(bind: current.userEnt) AND file_seq = \(bind: next.seq)").run()
                }
            }
            return (["cert_file": try await Self.certificateFiles(of: current.userEnt, in: db)], ())
        }
    }

    /// `photo`: stores a profile picture, `data: {fields: {file_data, file_fmt, file_cmt,
    /// file_type}}`, as the user's main photo; answers `{file_ent, file_seq, file_type,
    /// file_fmt, file_cmt, file_data64}` as MyCHIPs' `photo` control function does.
    func perform(_ action: NamedAction, context: ViewContext) async throws -> JSONValue? {
        guard action.name == "photo" else { return nil }
        guard case .object(var fields)? = action.fields else {
            throw WysemanError.constraint("the picture comes as data.fields.file_data", code: "!\(name):NPH")
        }
        fields["file_type"] = fields["file_type"] ?? "photo"
        fields["file_fmt"] = fields["file_fmt"] ?? "image/jpeg"
        fields["file_cmt"] = fields["file_cmt"] ?? "Profile"
        fields["file_prim"] = true
        let change = try change(from: fields, user: context.user)
        let row = try await store(change, context: context)
        return .object(row.filter { ["file_ent", "file_seq", "file_type", "file_fmt", "file_cmt", "file_data64"].contains($0.key) })
    }
}

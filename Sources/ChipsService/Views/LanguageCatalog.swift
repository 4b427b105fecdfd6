import Foundation
import PurseDatabase
import PurseFormats
import SQLKit

/// The language data behind `lang`: `wm.table_lang` of the real backend.
enum LanguageCatalog {
    /// Loads the shipped pack; rows an operator added for other languages stay as they are.
    static func install(into database: Database) async throws {
        try await database.transaction { db in
            for (code, iso2, english, native) in LanguagePack.languages {
                try await db.raw("""
                    INSERT INTO chips_languages (code, iso_2, eng_name, name) VALUES (\(bind: code), \(bind: iso2), \(bind: english), \(bind: native))
                    ON CONFLICT (code) DO UPDATE SET iso_2 = excluded.iso_2, eng_name = excluded.eng_name, name = excluded.name
                    """).run()
            }
            for entry in LanguagePack.entries {
                try await db.raw("""
                    INSERT INTO chips_lang (obj, language, title, help, columns, messages)
                    VALUES (\(bind: entry.obj), \(bind: entry.language), \(bind: entry.title), \(bind: entry.help),
                            \(bind: JavaScriptJSON.stringify(entry.columnsJSON)), \(bind: JavaScriptJSON.stringify(entry.messagesJSON)))
                    ON CONFLICT (obj, language) DO UPDATE SET title = excluded.title, help = excluded.help, columns = excluded.columns, messages = excluded.messages
                    """).run()
            }
        }
    }

    /// Accepts ISO 639-2 (`eng`) and ISO 639-1 (`en`) codes; the pack is keyed by the former.
    static func code(_ language: String) -> String {
        let lowered = language.lowercased()
        if lowered.utf8.count == 2, let match = LanguagePack.languages.first(where: { $0.1 == lowered }) { return match.0 }
        return lowered
    }

    /// `{title, help, columns, messages, language}` for `obj` in `language`: each text in that
    /// language where it has one, else in English (`language` then says which was found). Nil
    /// when not even English has the object, or when the provider does not have the language at
    /// all (the real provider's `lang` then finds no row either).
    static func lang(of obj: String, language: String, database: Database) async throws -> JSONValue? {
        let code = code(language)
        let rows = try await database.read { db -> [any SQLRow]? in
            guard try await db.raw("SELECT code FROM chips_languages WHERE code = \(bind: code)").first() != nil else { return nil }
            return try await db.raw("SELECT language, title, help, columns, messages FROM chips_lang WHERE obj = \(bind: obj) AND language IN (\(bind: code), 'eng')").all()
        }
        guard let rows else { return nil }
        func decode(_ row: any SQLRow) throws -> (language: String, title: String, help: String, columns: [JSONValue], messages: [JSONValue]) {
            func list(_ column: String) throws -> [JSONValue] {
                let text = try row.decode(column: column, as: String.self)
                return (try? StrictJSON.parse(text.utf8))?.arrayValue ?? []
            }
            return (try row.decode(column: "language", as: String.self), try row.decode(column: "title", as: String.self),
                    try row.decode(column: "help", as: String.self), try list("columns"), try list("messages"))
        }
        let decoded = try rows.map(decode)
        guard let chosen = decoded.first(where: { $0.language == code }) ?? decoded.first(where: { $0.language == "eng" }) else { return nil }
        let english = decoded.first(where: { $0.language == "eng" })
        /// Entries of the chosen language, then English ones it lacks, keyed by `key`.
        func merged(_ own: [JSONValue], _ fallback: [JSONValue]?, key: String) -> [JSONValue] {
            let present = Set(own.compactMap { $0[key]?.stringValue })
            return own + (fallback ?? []).filter { !present.contains($0[key]?.stringValue ?? "") }
        }
        return .object([
            "title": .string(chosen.title), "help": .string(chosen.help),
            "columns": .array(merged(chosen.columns, english?.columns, key: "col")),
            "messages": .array(merged(chosen.messages, english?.messages, key: "code")),
            "language": .string(chosen.language),
        ])
    }
}

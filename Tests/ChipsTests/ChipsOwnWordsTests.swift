@testable import ChipsService
import Crypto
import Foundation
import PurseFormats
import Testing

/// The language data answers every code MyCHIPs' app asks for, in words of our own: codes are
/// interface, sentences are not ours to copy. `Fixtures/mychips-text-hashes.json` holds only a
/// hash of each text of MyCHIPs' own language data (every language), never the texts.
@Suite("MyCHIPs words: the app's texts are our own")
struct ChipsOwnWordsTests {
    /// Every code of the real `mychips.chark` (MyCHIPs 70bf87e5).
    static let realCodes = """
        mychips working settings profile activity newtally filter search selall more less language next cancel none custom warn fail save sure \
        proceed edit success updated deleted import export link share qr add enter confirm certopts certshare certtpts keys keygen nokey diffkey \
        keywarn private public keypass keybio biofail entercid
        """.split(separator: " ").map(String.init)

    /// The columns and messages of the real `mychips.tallies` (beyond JSON members and values).
    static let realTallyColumns = """
        tally_ent tally_seq tally_uuid tally_type tally_date version revision comment contract hold_cert part_cert hold_sig part_sig \
        hold_terms part_terms hold_sets part_sets digest target reward clutch bound request status part_ent net_c net_pc hold_cuid \
        part_cuid hold_agent part_agent chain_conf chain_stat
        """.split(separator: " ").map(String.init)
    static let realTallyMessages = "BND CLT ISR IST IVR IVS NSP PAI PCI PCM PSM RCV RWD TCM TGT TNU UAI UCI UCM USM VER".split(separator: " ").map(String.init)

    /// English has every one; Spanish has the messages a tally's refusals show and falls back to
    /// English for a text it lacks, as `lang` does.
    @Test("mychips.tallies has every column and message code of the real one")
    func talliesLanguageData() throws {
        let english = try #require(LanguagePack.entries.first { $0.obj == "mychips.tallies" && $0.language == "eng" })
        let columns = Set(english.columns.map(\.0)), messages = Set(english.messages.map(\.0))
        #expect(Self.realTallyColumns.filter { !columns.contains($0) }.isEmpty, "columns")
        #expect(Self.realTallyMessages.filter { !messages.contains($0) }.isEmpty, "messages")
        let spanish = try #require(LanguagePack.entries.first { $0.obj == "mychips.tallies" && $0.language == "spa" })
        let spanishMessages = Set(spanish.messages.map(\.0))
        #expect(["ISR", "IVS", "PAI", "PCI", "PCM", "PSM", "RCV", "TNU", "UAI", "UCI", "USM", "VER"].allSatisfy(spanishMessages.contains))
        // The labels of the values and members the real columns list.
        let labelled = Set(LanguagePack.valueLabels["mychips.tallies"]?.keys.map { $0 } ?? [])
        #expect(["request", "contract", "hold_cert", "hold_terms", "part_terms", "chain_stat", "status", "tally_type"].allSatisfy(labelled.contains))
        #expect(LanguagePack.valueLabels["mychips.tallies"]?["chain_stat"]?.map(\.0) == ["non", "aff", "pen", "con", "err"])
    }

    @Test("users_v_me has every message code of the real one, in both languages")
    func usersMessages() {
        let real = """
            GCH INV graph graph.format graph.format.html graph.format.url chip chip.format chip.format.html chip.format.json chip.curr \
            invoice invoice.units invoice.memo invoice.ref invoice.format invoice.format.qr invoice.format.link invoice.format.json \
            launch.title launch.instruct
            """.split(separator: " ").map(String.init)
        for language in ["eng", "spa"] {
            let codes = Set(LanguagePack.entries.first { $0.obj == "mychips.users_v_me" && $0.language == language }?.messages.map(\.0) ?? [])
            #expect(real.filter { !codes.contains($0) }.isEmpty, "\(language)")
        }
    }

    struct Hashes: Decodable { var sha256_16: [String] }

    static func normalized(_ text: String) -> String {
        text.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// Every title and help text of three words or more: one- and two-word labels ("Save",
    /// "Postal Code", a help that repeats its title) are any app's ordinary words.
    static func checked(help: [String], titles: [String]) -> [String] {
        (help + titles).filter { $0.split(separator: " ").count >= 3 }
    }

    @Test("every code of the real app's texts is answered, and no sentence is MyCHIPs' own")
    func ourOwnWords() throws {
        let url = try #require(Bundle.module.url(forResource: "mychips-text-hashes", withExtension: "json", subdirectory: "Fixtures"))
        let real = Set(try JSONDecoder().decode(Hashes.self, from: Data(contentsOf: url)).sha256_16)
        #expect(real.count > 5000)
        let codes = Set(LanguagePack.appMessages.map(\.code))
        #expect(Self.realCodes.filter { !codes.contains($0) }.isEmpty, "codes the real app asks for and we lack")
        var texts: [(String, String)] = []
        for message in LanguagePack.appMessages {
            texts += Self.checked(help: [message.eng.1, message.spa.1], titles: [message.eng.0, message.spa.0]).map { ("mychips.chark " + message.code, $0) }
        }
        for entry in LanguagePack.entries {
            let place = entry.obj + " (" + entry.language + ")"
            texts += Self.checked(help: [entry.help], titles: [entry.title]).map { (place, $0) }
            texts += entry.columns.flatMap { Self.checked(help: [$0.2], titles: [$0.1]).map { (place, $0) } }
            texts += entry.messages.flatMap { Self.checked(help: [$0.2], titles: [$0.1]).map { (place, $0) } }
        }
        for (view, columns) in LanguagePack.valueLabels {
            for (_, values) in columns {
                texts += values.flatMap { Self.checked(help: [], titles: [$0.1, $0.2]).map { (view, $0) } }
            }
        }
        #expect(texts.count > 500)
        for (place, text) in texts {
            let hash = String(Hex.encode(SHA256.hash(data: Data(Self.normalized(text).utf8))).prefix(16))
            let copied = real.contains(hash)
            #expect(!copied, "\(place): \"\(text)\" is MyCHIPs' own text")
        }
    }
}

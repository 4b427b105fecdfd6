import ChipsProtocol
import MyCHIPs
import Foundation
import PurseFormats
import Testing

/// Tallies and chits as the real MyCHIPs signs and hashes them, checked against records Python
/// made (`scripts/oracles/chips_records.py make`), and records made here written for Python to
/// check in CI.
@Suite("MyCHIPs records: digests, signatures and the chain")
struct ChipsRecordsTests {
    static func tallyCore(_ json: JSONValue) throws -> TallyCore {
        try #require(TallyCore(json: json), "a tally core as MyCHIPs writes it")
    }

    static func chitCore(_ json: JSONValue) throws -> ChitCore {
        try #require(ChitCore(json: json), "a chit core as MyCHIPs writes it")
    }

    @Test("a chit core reads back from its JSON, and nothing else does")
    func chitCoreJSON() {
        let core = ChitCore(tally: "a0b1", by: .foil, type: .tran, uuid: "c2d3", date: 1_764_000_000_123, units: 12_500,
                            reference: ["invoice": "A-7"], memo: "Hedges")
        #expect(ChitCore(json: core.json) == core)
        var members = core.json.objectValue!
        members["extra"] = "not signed"
        #expect(ChitCore(json: .object(members)) == nil, "a member the signature would not cover")
        members = core.json.objectValue!
        members["units"] = .int(-1)
        #expect(ChitCore(json: .object(members)) == nil, "units are never negative")
        members = core.json.objectValue!
        members["by"] = "both"
        #expect(ChitCore(json: .object(members)) == nil)
    }

    @Test("records Python made: the same digests, signing texts and chain; its signatures verify here")
    func pythonRecords() throws {
        let url = try #require(Bundle.module.url(forResource: "records_python", withExtension: "json", subdirectory: "Fixtures"))
        let cases = try #require(try StrictJSON.parse(Array(Data(contentsOf: url))).arrayValue)
        for item in cases {
            let tally = try #require(item["tally"])
            let core = try Self.tallyCore(try #require(tally["core"]))
            #expect(core.json == tally["core"])
            #expect(core.digest == tally["digest"]?.stringValue)
            #expect(core.signingText == tally["signing_text"]?.stringValue)
            #expect(core.isSigned(by: .stock, signature: tally["signatures"]?["stock"]?.stringValue))
            #expect(core.isSigned(by: .foil, signature: tally["signatures"]?["foil"]?.stringValue))
            #expect(!core.isSigned(by: .foil, signature: tally["signatures"]?["stock"]?.stringValue), "a signature is its signer's only")
            var links: [ChainLink] = []
            for link in try #require(item["chits"]?.arrayValue) {
                let chit = try Self.chitCore(try #require(link["core"]))
                #expect(chit.signingText == link["signing_text"]?.stringValue)
                #expect(chit.digest == link["digest"]?.stringValue)
                #expect(chit.isSigned(by: core.half(chit.by).cert["public"], signature: link["signed"]?.stringValue))
                links.append(ChainLink(core: chit, signature: link["signed"]?.stringValue, index: try #require(link["index"]?.int64Value),
                                       prior: try #require(link["prior"]?.stringValue), hash: try #require(link["hash"]?.stringValue)))
            }
            #expect(try ChipsChain.verify(links, tallyDigest: core.digest) == links.last?.hash)
            // One changed memo breaks the chain at that link; a dropped link breaks it at the next.
            var altered = links
            altered[1].core.memo = "changed"
            #expect(throws: ChainBreak.altered(index: 2)) { try ChipsChain.verify(altered, tallyDigest: core.digest) }
            #expect(throws: ChainBreak.misplaced(index: 3)) { try ChipsChain.verify([links[0], links[2]], tallyDigest: core.digest) }
        }
    }

    /// A real provider's tally and chain (recorded from gotchoices/MyCHIPs, `Fixtures/real_chain.json`):
    /// its digests, its chain hashes and its partners' chit signatures, reproduced and checked here.
    @Test("a real MyCHIPs provider's chain: the same tally digest, chit digests and chain hashes; its signatures verify")
    func realChain() throws {
        let url = try #require(Bundle.module.url(forResource: "real_chain", withExtension: "json", subdirectory: "Fixtures"))
        let recorded = try StrictJSON.parse(Array(Data(contentsOf: url)))
        let tally = try #require(recorded["tally"])
        let tallyCore = try #require(tally["json_core"])
        let tallyDigest = try #require(tally["digest"]?.stringValue)
        #expect(ChipsDigest.of(tallyCore) == tallyDigest)
        var links: [ChainLink] = []
        for chit in try #require(recorded["chits"]?.arrayValue) {
            let core = try Self.chitCore(try #require(chit["json_core"]))
            #expect(core.json == chit["json_core"], "the core as MyCHIPs writes it")
            #expect(core.digest == chit["digest"]?.stringValue)
            let signature = chit["signature"]?.stringValue
            #expect(core.isSigned(by: tallyCore[core.by.rawValue]?["cert"]?["public"], signature: signature), "signed by its issuer's key on the tally")
            links.append(ChainLink(core: core, signature: signature, index: try #require(chit["chain_idx"]?.int64Value),
                                   prior: try #require(chit["chain_prev"]?.stringValue), hash: try #require(chit["chain_dgst"]?.stringValue)))
        }
        #expect(links.count == 2)
        #expect(try ChipsChain.verify(links, tallyDigest: tallyDigest) == links.last?.hash)
    }

    @Test("Python's json.dumps, byte for byte: sorted keys, no spaces, non-ASCII escaped")
    func pythonJSON() {
        let value: JSONValue = ["b": 1, "a": ["é", "\u{1F600}", "\n\t\u{7f}", .null, true, .double(1.5), .double(1e-5), .double(1e16)], "A": "x/y"]
        #expect(PythonJSON.dumps(value) == #"{"A":"x/y","a":["\u00e9","\ud83d\ude00","\n\t\u007f",null,true,1.5,1e-05,1e+16],"b":1}"#)
    }

    @Test("dates are exact to the millisecond both ways")
    func millisecondDates() {
        for millis: Int64 in [0, 1, 999, 1_764_000_000_123, 951_782_400_000, 4_102_444_799_999, -1] {
            let text = JavaScriptDate.string(epochMillis: millis)
            #expect(JavaScriptDate.epochMillis(text) == millis, "\(text)")
        }
        #expect(JavaScriptDate.string(epochMillis: 1_764_000_000_123) == "2025-11-24T16:00:00.123Z")
        #expect(JavaScriptDate.epochMillis("2025-11-24T16:00:00Z") == 1_764_000_000_000)
        #expect(JavaScriptDate.epochMillis("2025-11-24 16:00:00Z") == nil)
    }

    @Test("records made here, written for the Python oracle (CHIPS_RECORDS_OUT)")
    func writesRecordVectors() throws {
        let stockKey = SigningKey(), foilKey = SigningKey()
        func cert(_ name: String, _ key: SigningKey) throws -> JSONValue {
            ["chad": ["cuid": .string(name.lowercased()), "agent": "purse-agent"], "type": "p", "name": ["surname": .string(name), "first": .null],
             "public": try StrictJSON.parse(Array(key.publicJWK.utf8)), "date": "2026-11-25T00:00:00.000Z"]
        }
        let core = TallyCore(uuid: TallyID(UUID().uuidString.lowercased()), date: 1_764_000_000_123, memo: "Jardín",
                             agree: ["source": "byZENT6Lqdub9ew8tQnvyTGgVduELz-j6zfjHM-tgs8"],
                             stock: .init(cert: try cert("Núñez", stockKey), terms: ["limit": 100, "call": 30]),
                             foil: .init(cert: try cert("Lee", foilKey), terms: ["limit": 20]))
        let tally: JSONValue = ["core": core.json, "digest": .string(core.digest), "signing_text": .string(core.signingText),
                                "signatures": ["stock": .string(try stockKey.sign(core.signingText)), "foil": .string(try foilKey.sign(core.signingText))]]
        var chits: [JSONValue] = []
        var prior = core.digest
        for (index, (by, units, memo, reference)) in [(TallySide.foil, Int64(12_500), "Hedges ✂" as String?, nil as JSONValue?),
                                                      (.stock, 3_000, nil, ["invoice": "A-7"]), (.foil, 1, "a \"quoted\"\nmemo", nil)].enumerated() {
            let chit = ChitCore(tally: core.uuid, by: by, type: .tran, uuid: ChitID(UUID().uuidString.lowercased()), date: 1_764_000_100_000 + Int64(index),
                                units: units, reference: reference, memo: memo)
            let signed = try (by == .stock ? stockKey : foilKey).sign(chit.signingText)
            let hash = chit.chainHash(index: Int64(index + 1), prior: prior, signature: signed)
            chits.append(["core": chit.json, "signing_text": .string(chit.signingText), "digest": .string(chit.digest), "signed": .string(signed),
                          "index": .int(Int64(index + 1)), "prior": .string(prior), "hash": .string(hash)])
            prior = hash
        }
        if let path = ProcessInfo.processInfo.environment["CHIPS_RECORDS_OUT"] {
            try Data(JavaScriptJSON.stringify(.array([["tally": tally, "chits": .array(chits)]])).utf8).write(to: URL(fileURLWithPath: path))
        }
        #expect(chits.count == 3)
    }
}

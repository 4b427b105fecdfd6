import ChipsProtocol
import MyCHIPs
import PurseFormats
import Testing

/// Which tallies a typed name means, as partners are named by a real provider ("Smith, Adam").
@Suite("MyCHIPs: naming a partner")
struct ChipsPartnerMatchTests {
    func tally(_ seq: Int64, _ name: String, cuid: String) throws -> ChipsTally {
        let core = TallyCore(uuid: TallyID("u-\(seq)"), date: 1_700_000_000_000, memo: nil, agree: .null,
                             stock: .init(cert: .null, terms: .null), foil: .init(cert: .null, terms: .null))
        return try ChipsTally(row: .object([
            "tally_seq": .int(seq), "tally_uuid": .string("u-\(seq)"), "tally_type": "stock", "json_core": core.json,
            "status": "open", "state": "open", "part_name": .string(name), "part_cuid": .string(cuid), "part_agent": "P000",
        ]))
    }

    @Test func aPartOfTheNameFindsThePartnerAndSeveralAreAChoice() throws {
        let tallies = [try tally(1, "Smith, Adam", cuid: "p1000"), try tally(2, "Smith, Eve", cuid: "p1001"), try tally(3, "Núñez, José", cuid: "p1002")]
        func seqs(_ query: String) -> [Int64] { ChipsPartnerMatch.tallies(query, in: tallies).map(\.seq) }
        #expect(seqs("Adam") == [1] && seqs("adam smith") == [1] && seqs("Smith Adam") == [1])
        #expect(seqs("Smith") == [1, 2], "two partners named Smith: the user chooses")
        #expect(seqs("Smith, Eve") == [2] && seqs("smith, eve") == [2])
        #expect(seqs("jose") == [3] && seqs("NUNEZ") == [3], "accents and case do not matter")
        #expect(seqs("p1001") == [2] && seqs("p1001:P000") == [2] && seqs("3") == [3])
        #expect(seqs("Smi").isEmpty && seqs("").isEmpty && seqs("Jones").isEmpty, "a part is a whole word of the name")
    }
}

import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import ChipsProtocol
import Testing

@Suite("MyCHIPs balance sheet: totals and the bubble chart")
struct BalanceSheetTests {
    static let sheet = BalanceSheet(entries: [
        .init(id: "t1", partner: "Ada <& Co>", net: 125_000),
        .init(id: "t2", partner: "Bob", net: -40_500),
        .init(id: "t3", partner: "Cy", net: 3_000),
        .init(id: "t4", partner: "Di", net: 0),
    ])

    @Test func totals() {
        #expect(Self.sheet.totalAssets == 128_000 && Self.sheet.totalLiabilities == -40_500 && Self.sheet.net == 87_500)
        #expect(Self.sheet.assets.map(\.id) == ["t1", "t3"] && Self.sheet.liabilities.map(\.id) == ["t2"])
    }

    @Test("the SVG is well-formed, names every partner, shows the net in CHIPs and the local currency")
    func svg() throws {
        let chart = BalanceSheetChart(Self.sheet)
        let svg = chart.svg(rate: ChipsExchangeRate(currency: "USD", minorUnitsPerCHIP: 235))
        final class Collector: NSObject, XMLParserDelegate, @unchecked Sendable {
            var tallies: [String] = []
            func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
                if let tally = attributes["data-tally"] { tallies.append(tally) }
            }
        }
        let parser = XMLParser(data: Data(svg.utf8))
        let collector = Collector()
        parser.delegate = collector
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        #expect(collector.tallies.sorted() == ["t1", "t2", "t3"])
        #expect(svg.contains("87.5 CHIP") && svg.contains("≈ 205.62 USD") && svg.contains("Ada &lt;&amp; Co&gt;"))
    }

    @Test("selecting a bubble opens its tally; empty space and the centre select nothing")
    func selection() throws {
        let chart = BalanceSheetChart(Self.sheet)
        for bubble in chart.bubbles {
            #expect(chart.bubble(atX: bubble.x, y: bubble.y)?.entry.id == bubble.entry.id)
        }
        #expect(chart.bubble(atX: 300, y: 200) == nil)
        #expect(chart.bubble(atX: 1, y: 1) == nil)
        let assets = chart.bubbles.filter { $0.entry.net > 0 }, liabilities = chart.bubbles.filter { $0.entry.net < 0 }
        #expect(assets.allSatisfy { $0.x >= 300 } && liabilities.allSatisfy { $0.x <= 300 })
        let big = try #require(assets.first { $0.entry.id == "t1" }), small = try #require(assets.first { $0.entry.id == "t3" })
        #expect(big.radius > small.radius)
    }
}

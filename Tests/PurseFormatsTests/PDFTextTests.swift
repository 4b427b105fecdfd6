import Foundation
@testable import PurseFormats
import Testing

@Suite("PDF text")
struct PDFTextTests {
    @Test("PDF text: a cross-reference table that points at its objects, pages that break, text escaped and encoded")
    func pdfText() throws {
        #expect(PDFText.regularWidths.count == 95 && PDFText.boldWidths.count == 95)
        var document = PDFText(title: "Acuerdo (borrador)")
        document.add("Acuerdo de tally", style: .title)
        for index in 1...120 { document.add("Párrafo \(index): un texto (con paréntesis) y \\ barras que se ajusta a la página — €5, 中文.") }
        let bytes = [UInt8](document.data())
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix("%PDF-1.4") && text.hasSuffix("%%EOF\n"))
        // startxref names the table; each entry's offset starts its object.
        let startxref = try #require(text.range(of: "startxref\n", options: .backwards))
        let xref = try #require(Int(text[startxref.upperBound...].prefix { $0.isNumber }))
        #expect(Array(bytes[xref..<(xref + 4)]) == Array("xref".utf8))
        let table = String(decoding: bytes[xref...], as: UTF8.self).split(separator: "\n")
        let count = try #require(Int(table[1].split(separator: " ")[1]))
        for object in 1..<count {
            let offset = try #require(Int(table[2 + object].prefix(10)))
            #expect(Array(bytes[offset...].prefix("\(object) 0 obj".utf8.count)) == Array("\(object) 0 obj".utf8), "object \(object)")
        }
        #expect(text.contains("/Count 3") || text.contains("/Count 4"), "120 paragraphs take several pages")
        // Parentheses and backslashes escaped; á as its Windows-1252 byte in octal; what the
        // standard fonts cannot show, as ?.
        #expect(text.contains("\\(con par\\351ntesis\\)") && text.contains("\\\\ barras") && text.contains("\\200") && text.contains("??."))
    }
}

import Foundation

/// A printable document of text: headings and paragraphs, set in the PDF standard fonts
/// Helvetica and Helvetica-Bold on A4 pages, wrapped to the page by the fonts' own widths, with
/// page numbers. The output is PDF 1.4 with a cross-reference table, which every reader opens;
/// text outside Windows-1252 (the standard fonts' encoding) prints as `?`.
public struct PDFText: Sendable {
    public enum Style: Sendable {
        case title, heading, body, small, monospace
    }

    struct Block: Sendable {
        var style: Style
        var text: String
    }

    public var title: String
    private var blocks: [Block] = []

    public init(title: String) {
        self.title = title
    }

    /// Adds a paragraph (blank lines between paragraphs are the writer's; `\n` breaks a line).
    public mutating func add(_ text: String, style: Style = .body) {
        blocks.append(Block(style: style, text: text))
    }

    // MARK: - Layout

    static let pageWidth = 595.0, pageHeight = 842.0, margin = 56.0

    struct PlacedLine {
        var style: Style
        var text: [UInt8]
        var y: Double
    }

    static func font(_ style: Style) -> (name: String, size: Double, leading: Double) {
        switch style {
        case .title: ("F2", 18, 24)
        case .heading: ("F2", 12.5, 18)
        case .body: ("F1", 10.5, 14)
        case .small: ("F1", 8.5, 11)
        case .monospace: ("F3", 8.5, 11)
        }
    }

    /// Width of Windows-1252 bytes in a font, in points.
    static func width(_ bytes: [UInt8], style: Style) -> Double {
        let (name, size, _) = font(style)
        let units = bytes.reduce(0) { total, byte -> Int in
            if name == "F3" { return total + 600 }
            let table = name == "F2" ? boldWidths : regularWidths
            return total + (byte >= 32 && byte < 127 ? table[Int(byte) - 32] : 556)
        }
        return Double(units) * size / 1000
    }

    /// Text as Windows-1252 bytes: Latin-1 and the encoding's extras, `?` for anything else.
    static func encode(_ text: String) -> [UInt8] {
        let extras: [Character: UInt8] = ["€": 0x80, "‚": 0x82, "„": 0x84, "…": 0x85, "‘": 0x91, "’": 0x92, "“": 0x93, "”": 0x94, "•": 0x95,
                                          "–": 0x96, "—": 0x97, "™": 0x99]
        var bytes: [UInt8] = []
        for character in text {
            if let byte = extras[character] { bytes.append(byte); continue }
            guard let scalar = character.unicodeScalars.first, character.unicodeScalars.count == 1 else { bytes.append(0x3F); continue }
            if scalar.value == 9 { bytes.append(0x20) }
            else if scalar.value >= 32 && scalar.value < 127 || (scalar.value >= 0xA0 && scalar.value <= 0xFF) { bytes.append(UInt8(scalar.value)) }
            else { bytes.append(0x3F) }
        }
        return bytes
    }

    /// Lines of at most `limit` points, broken at spaces (a word wider than a line is cut).
    static func wrap(_ line: [UInt8], style: Style, limit: Double) -> [[UInt8]] {
        var lines: [[UInt8]] = []
        var current: [UInt8] = []
        for word in line.split(separator: 0x20, omittingEmptySubsequences: false).map(Array.init) {
            let candidate = current.isEmpty ? word : current + [0x20] + word
            if width(candidate, style: style) <= limit {
                current = candidate
                continue
            }
            if !current.isEmpty { lines.append(current) }
            current = []
            // A word wider than a line: cut where the next character would not fit.
            var piece: [UInt8] = []
            var pieceWidth = 0.0
            for byte in word {
                let advance = width([byte], style: style)
                if pieceWidth + advance > limit, !piece.isEmpty {
                    lines.append(piece)
                    piece = []
                    pieceWidth = 0
                }
                piece.append(byte)
                pieceWidth += advance
            }
            current = piece
        }
        lines.append(current)
        return lines
    }

    /// The blocks set on pages.
    func pages() -> [[PlacedLine]] {
        var pages: [[PlacedLine]] = [[]]
        let bottom = Self.margin + 20
        var y = Self.pageHeight - Self.margin
        for block in blocks {
            let (_, _, leading) = Self.font(block.style)
            let space = block.style == .heading ? 8.0 : 4.0
            if !(pages[pages.count - 1].isEmpty) { y -= space }
            for paragraph in block.text.split(separator: "\n", omittingEmptySubsequences: false) {
                for line in Self.wrap(Self.encode(String(paragraph)), style: block.style, limit: Self.pageWidth - 2 * Self.margin) {
                    if y - leading < bottom {
                        pages.append([])
                        y = Self.pageHeight - Self.margin
                    }
                    y -= leading
                    pages[pages.count - 1].append(PlacedLine(style: block.style, text: line, y: y))
                }
            }
        }
        return pages
    }

    // MARK: - Writing

    /// A PDF string literal: `(` … `)` with `\`, `(` and `)` escaped and bytes past ASCII in octal.
    static func literal(_ bytes: [UInt8]) -> String {
        var out = "("
        for byte in bytes {
            switch byte {
            case 0x5C: out += "\\\\"
            case 0x28: out += "\\("
            case 0x29: out += "\\)"
            case 32..<127: out += String(UnicodeScalar(byte))
            default: out += "\\" + String(byte, radix: 8).leftPadded(to: 3)
            }
        }
        return out + ")"
    }

    /// The document as PDF bytes.
    public func data() -> Data {
        let pages = pages()
        var objects: [String] = []
        // 1 catalog, 2 page tree, 3–5 fonts, 6 info; then a page and its contents for each page.
        let firstPage = 7
        let kids = pages.indices.map { "\(firstPage + 2 * $0) 0 R" }.joined(separator: " ")
        objects.append("<< /Type /Catalog /Pages 2 0 R >>")
        objects.append("<< /Type /Pages /Kids [\(kids)] /Count \(pages.count) >>")
        for base in ["Helvetica", "Helvetica-Bold", "Courier"] {
            objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /\(base) /Encoding /WinAnsiEncoding >>")
        }
        objects.append("<< /Title \(Self.literal(Self.encode(title))) /Producer (Purse) >>")
        for (index, lines) in pages.enumerated() {
            var stream = ""
            for line in lines {
                let (font, size, _) = Self.font(line.style)
                stream += "BT /\(font) \(Self.number(size)) Tf \(Self.number(Self.margin)) \(Self.number(line.y)) Td \(Self.literal(line.text)) Tj ET\n"
            }
            let footer = Self.encode("\(title) — \(index + 1)/\(pages.count)")
            let footerX = (Self.pageWidth - Self.width(footer, style: .small)) / 2
            stream += "BT /F1 8.5 Tf \(Self.number(footerX)) \(Self.number(Self.margin - 20)) Td \(Self.literal(footer)) Tj ET\n"
            objects.append("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 \(Self.number(Self.pageWidth)) \(Self.number(Self.pageHeight))] "
                + "/Resources << /Font << /F1 3 0 R /F2 4 0 R /F3 5 0 R >> >> /Contents \(firstPage + 2 * index + 1) 0 R >>")
            objects.append("<< /Length \(stream.utf8.count) >>\nstream\n\(stream)endstream")
        }
        var out = Data("%PDF-1.4\n%\u{E2}\u{E3}\u{CF}\u{D3}\n".utf8)
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(out.count)
            out.append(Data("\(index + 1) 0 obj\n\(object)\nendobj\n".utf8))
        }
        let xref = out.count
        var table = "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        for offset in offsets { table += String(offset).leftPadded(to: 10) + " 00000 n \n" }
        table += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R /Info 6 0 R >>\nstartxref\n\(xref)\n%%EOF\n"
        out.append(Data(table.utf8))
        return out
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.2f", value)
    }

    /// Helvetica's advance widths (per 1000 units of the font size) for ASCII 32–126, from the
    /// standard font metrics every PDF reader carries.
    static let regularWidths: [Int] = [
        278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556, 556, 556, 556, 556,
        278, 278, 584, 584, 584, 556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667,
        611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833,
        556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
    ]

    /// Helvetica-Bold's advance widths for ASCII 32–126.
    static let boldWidths: [Int] = [
        278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556, 556, 556, 556, 556,
        333, 333, 584, 584, 584, 611, 975, 722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833, 722, 778, 667, 778, 722, 667,
        611, 722, 667, 944, 667, 667, 611, 333, 278, 333, 584, 556, 333, 556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889,
        611, 611, 611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500, 389, 280, 389, 584,
    ]
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}

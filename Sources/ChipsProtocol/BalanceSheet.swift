import Foundation
import PurseFormats

/// The user's balance sheet: each open tally's net balance with its partner. Positive nets are
/// assets (the partner owes the user), negative ones liabilities. Amounts are milliCHIPs.
public struct BalanceSheet: Sendable, Equatable {
    public struct Entry: Sendable, Equatable, Identifiable {
        /// The tally's id (`tally_seq` or uuid): what selecting the entry opens.
        public var id: String
        public var partner: String
        public var net: Int64

        public init(id: String, partner: String, net: Int64) {
            self.id = id
            self.partner = partner
            self.net = net
        }
    }

    public var entries: [Entry]

    public init(entries: [Entry]) { self.entries = entries }

    public var assets: [Entry] { entries.filter { $0.net > 0 }.sorted { $0.net > $1.net } }
    public var liabilities: [Entry] { entries.filter { $0.net < 0 }.sorted { $0.net < $1.net } }
    // Shown, never compared against a limit: a total past Int64's range (a hostile provider's
    // figures) shows as the range's end instead of wrapping or trapping.
    public var totalAssets: Int64 { CheckedAmount.saturatingSum(assets.map(\.net)) }
    public var totalLiabilities: Int64 { CheckedAmount.saturatingSum(liabilities.map(\.net)) }
    public var net: Int64 { CheckedAmount.saturatingSum(entries.map(\.net)) }
}

/// The visual balance sheet: a bubble chart with the net total in the centre, assets in green to
/// the right and liabilities in red to the left, each bubble's area proportional to its balance.
/// Rendered here for any platform (the app shows it in a web view or draws the same layout
/// natively); every bubble carries its tally's id so selecting one opens that tally.
public struct BalanceSheetChart: Sendable {
    public struct Bubble: Sendable, Equatable {
        public var entry: BalanceSheet.Entry
        public var x: Double
        public var y: Double
        public var radius: Double
    }

    public let sheet: BalanceSheet
    public let width: Double
    public let height: Double
    public let centreRadius: Double
    public let bubbles: [Bubble]

    public init(_ sheet: BalanceSheet, width: Double = 600, height: Double = 400) {
        self.sheet = sheet
        self.width = width
        self.height = height
        let size = min(width, height)
        centreRadius = size * 0.14
        let largest = Double(sheet.entries.map { $0.net.magnitude }.max() ?? 1)
        let ring = size / 2 - size * 0.11
        func place(_ entries: [BalanceSheet.Entry], from start: Double, to end: Double) -> [Bubble] {
            guard !entries.isEmpty else { return [] }
            // Bubbles share their half of the ring; each as large as its share of the arc allows.
            let step = (end - start) / Double(entries.count)
            let arcRoom = max(4, ring * step / 2 * 0.9)
            return entries.enumerated().map { index, entry in
                let angle = start + step * (Double(index) + 0.5)
                let scale = (Double(entry.net.magnitude) / largest).squareRoot()
                let radius = max(4, min(size * 0.1, arcRoom) * scale)
                return Bubble(entry: entry, x: width / 2 + ring * cos(angle), y: height / 2 + ring * sin(angle), radius: radius)
            }
        }
        bubbles = place(sheet.assets, from: -.pi / 2, to: .pi / 2) + place(sheet.liabilities, from: .pi / 2, to: 3 * .pi / 2)
    }

    /// The bubble at a point (a tap), nearest first where bubbles touch; nil for empty space.
    public func bubble(atX x: Double, y: Double) -> Bubble? {
        bubbles.filter { ($0.x - x) * ($0.x - x) + ($0.y - y) * ($0.y - y) <= $0.radius * $0.radius }
            .min { hypot($0.x - x, $0.y - y) < hypot($1.x - x, $1.y - y) }
    }

    /// The chart as SVG. `rate` adds the local-currency value under the net total; `link` makes
    /// each bubble a link to the address it gives for its tally.
    public func svg(rate: ChipsExchangeRate? = nil, title: String = "Balance sheet", assetsLabel: String = "Assets", liabilitiesLabel: String = "Liabilities",
                    link: ((BalanceSheet.Entry) -> String)? = nil) -> String {
        func escaped(_ text: String) -> String { HTML.escape(text) }
        func number(_ value: Double) -> String { String(format: "%.1f", value) }
        var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 \(number(width)) \(number(height))\" width=\"\(number(width))\" height=\"\(number(height))\" role=\"img\" aria-label=\"\(escaped(title))\">"
        out += "<title>\(escaped(title))</title>"
        out += "<style>text{font-family:-apple-system,system-ui,sans-serif;text-anchor:middle;dominant-baseline:middle}</style>"
        for bubble in bubbles {
            let asset = bubble.entry.net > 0
            let label = "\(bubble.entry.partner): \(ChipsUnits.format(bubble.entry.net))"
            if let link { out += "<a href=\"\(escaped(link(bubble.entry)))\">" }
            out += "<g class=\"tally \(asset ? "asset" : "liability")\" data-tally=\"\(escaped(bubble.entry.id))\"><title>\(escaped(label))</title>"
            out += "<line x1=\"\(number(width / 2))\" y1=\"\(number(height / 2))\" x2=\"\(number(bubble.x))\" y2=\"\(number(bubble.y))\" stroke=\"#bbb\" stroke-width=\"1\"/>"
            out += "<circle cx=\"\(number(bubble.x))\" cy=\"\(number(bubble.y))\" r=\"\(number(bubble.radius))\" fill=\"\(asset ? "#3c9d5d" : "#c8453c")\" fill-opacity=\"0.85\"/>"
            if bubble.radius >= 14 {
                out += "<text x=\"\(number(bubble.x))\" y=\"\(number(bubble.y))\" font-size=\"\(number(min(14, bubble.radius / 2.5)))\" fill=\"#fff\">\(escaped(ChipsUnits.format(bubble.entry.net)))</text>"
            }
            out += "<text x=\"\(number(bubble.x))\" y=\"\(number(bubble.y + bubble.radius + 10))\" font-size=\"11\" fill=\"#333\">\(escaped(bubble.entry.partner))</text></g>"
            if link != nil { out += "</a>" }
        }
        let net = sheet.net
        out += "<g class=\"net\"><circle cx=\"\(number(width / 2))\" cy=\"\(number(height / 2))\" r=\"\(number(centreRadius))\" fill=\"\(net >= 0 ? "#e8f5ec" : "#fbeaea")\" stroke=\"#666\"/>"
        out += "<text x=\"\(number(width / 2))\" y=\"\(number(height / 2 - (rate == nil ? 0 : 8)))\" font-size=\"16\" font-weight=\"bold\" fill=\"#222\">\(escaped(ChipsUnits.format(net))) CHIP</text>"
        if let rate {
            let local = DecimalAmount.format(rate.convert(net), decimals: rate.currencyDecimals, minimumDecimals: rate.currencyDecimals)
            out += "<text x=\"\(number(width / 2))\" y=\"\(number(height / 2 + 12))\" font-size=\"11\" fill=\"#555\">≈ \(escaped(local)) \(escaped(rate.currency))</text>"
        }
        out += "</g>"
        // The totals the net comes from: assets on the right, liabilities on the left.
        out += "<g class=\"totals\" font-size=\"12\">"
        out += "<text x=\"\(number(width - 8))\" y=\"\(number(height - 10))\" style=\"text-anchor:end\" fill=\"#2f7d49\">\(escaped(assetsLabel)) \(escaped(ChipsUnits.format(sheet.totalAssets)))</text>"
        out += "<text x=\"8\" y=\"\(number(height - 10))\" style=\"text-anchor:start\" fill=\"#a8372f\">\(escaped(liabilitiesLabel)) \(escaped(ChipsUnits.format(sheet.totalLiabilities)))</text>"
        out += "</g></svg>"
        return out
    }
}

import Foundation
import PurseDatabase

/// A JSON-like value rendered as block-style YAML (for `/openapi.yaml`).
public indirect enum YAMLValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    case string(String)
    case int(Int)
    case bool(Bool)
    case array([YAMLValue])
    /// Keys keep their order.
    case object([(String, YAMLValue)])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: YAMLValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, YAMLValue)...) { self = .object(elements) }

    public static func == (lhs: YAMLValue, rhs: YAMLValue) -> Bool {
        switch (lhs, rhs) {
        case let (.string(a), .string(b)): a == b
        case let (.int(a), .int(b)): a == b
        case let (.bool(a), .bool(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// Block YAML, two spaces an indent.
    public func rendered() -> String {
        var out = ""
        render(into: &out, indent: 0, inline: false)
        return out
    }

    private func render(into out: inout String, indent: Int, inline: Bool) {
        let pad = String(repeating: " ", count: indent)
        switch self {
        case .string, .int, .bool:
            out += scalar + "\n"
        case .array(let items):
            if items.isEmpty { out += "[]\n"; return }
            if inline { out += "\n" }
            for item in items {
                out += pad + "- "
                switch item {
                case .object(let pairs) where !pairs.isEmpty:
                    item.renderPairs(pairs, into: &out, indent: indent + 2, firstInline: true)
                default:
                    item.render(into: &out, indent: indent + 2, inline: true)
                }
            }
        case .object(let pairs):
            if pairs.isEmpty { out += "{}\n"; return }
            if inline { out += "\n" }
            renderPairs(pairs, into: &out, indent: indent, firstInline: false)
        }
    }

    private func renderPairs(_ pairs: [(String, YAMLValue)], into out: inout String, indent: Int, firstInline: Bool) {
        let pad = String(repeating: " ", count: indent)
        for (index, (key, value)) in pairs.enumerated() {
            out += (index == 0 && firstInline ? "" : pad) + YAMLValue.quoted(key) + ":"
            switch value {
            case .string, .int, .bool:
                out += " " + value.scalar + "\n"
            case .array(let items) where items.isEmpty:
                out += " []\n"
            case .object(let items) where items.isEmpty:
                out += " {}\n"
            default:
                value.render(into: &out, indent: indent + 2, inline: true)
            }
        }
    }

    private var scalar: String {
        switch self {
        case .string(let s): YAMLValue.quoted(s)
        case .int(let i): String(i)
        case .bool(let b): b ? "true" : "false"
        default: ""
        }
    }

    /// Plain when unambiguous, else a double-quoted JSON-style string.
    static func quoted(_ s: String) -> String {
        let plainSafe = !s.isEmpty
            && s.unicodeScalars.allSatisfy { $0.properties.isAlphabetic || ("0"..."9").contains($0) || "/_.-{} ".unicodeScalars.contains($0) }
            && !s.hasPrefix(" ") && !s.hasSuffix(" ") && !s.hasPrefix("{") && !s.hasPrefix("-")
            && !["true", "false", "null", "yes", "no", "on", "off", "~"].contains(s.lowercased())
            && Double(s) == nil
        if plainSafe { return s }
        var escaped = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\t": escaped += "\\t"
            default:
                if scalar.value < 0x20 { escaped += String(format: "\\u%04x", scalar.value) } else { escaped.unicodeScalars.append(scalar) }
            }
        }
        return escaped + "\""
    }
}

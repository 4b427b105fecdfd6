import Foundation

/// A Stripe request parameter: Stripe takes `application/x-www-form-urlencoded` bodies with
/// bracket syntax for nesting (`capabilities[card_payments][requested]=true`, `expand[0]=…`).
public indirect enum StripeParam: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral {
    case string(String)
    case int(Int)
    case bool(Bool)
    /// Keys keep their order, so bodies are byte-for-byte reproducible.
    case object([(String, StripeParam)])
    case array([StripeParam])

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(dictionaryLiteral elements: (String, StripeParam)...) { self = .object(elements) }
    public init(arrayLiteral elements: StripeParam...) { self = .array(elements) }

    public static func == (lhs: StripeParam, rhs: StripeParam) -> Bool {
        StripeForm.encode([("x", lhs)]) == StripeForm.encode([("x", rhs)])
    }
}

public enum StripeForm {
    /// Encodes top-level parameters in order.
    public static func encode(_ params: [(String, StripeParam)]) -> String {
        var pairs: [(String, String)] = []
        for (key, value) in params { flatten(key, value, into: &pairs) }
        // Brackets stay literal in keys, as Stripe's own libraries send them.
        return pairs.map { "\(escape($0.0, keepBrackets: true))=\(escape($0.1))" }.joined(separator: "&")
    }

    static func flatten(_ key: String, _ value: StripeParam, into pairs: inout [(String, String)]) {
        switch value {
        case .string(let text): pairs.append((key, text))
        case .int(let number): pairs.append((key, String(number)))
        case .bool(let flag): pairs.append((key, flag ? "true" : "false"))
        case .object(let members):
            for (member, nested) in members { flatten("\(key)[\(member)]", nested, into: &pairs) }
        case .array(let items):
            for (index, nested) in items.enumerated() { flatten("\(key)[\(index)]", nested, into: &pairs) }
        }
    }

    /// Percent-encoding as `application/x-www-form-urlencoded` (RFC 3986 unreserved kept).
    static func escape(_ text: String, keepBrackets: Bool = false) -> String {
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        if keepBrackets { allowed.insert(charactersIn: "[]") }
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// Decodes a form body into flat `key → value` pairs (the sandbox's side).
    public static func decode(_ body: String) -> [(String, String)] {
        body.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func unescape(_ part: Substring) -> String {
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part)
            }
            return (unescape(parts[0]), parts.count > 1 ? unescape(parts[1]) : "")
        }
    }
}

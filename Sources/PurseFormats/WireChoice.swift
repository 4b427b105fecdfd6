/// A closed set of strings on the wire — a status, a category, a kind — read as an enum.
///
/// A value outside the set is a decoding error that says what the set is: its underlying error
/// is an ``UnknownChoice`` ("category must be one of bug, feature, …"), which a server answers
/// as its 400 message word for word.
///
/// ```swift
/// public enum ConversationPriority: String, WireChoice { case low, normal, high, urgent }
/// ```
public protocol WireChoice: RawRepresentable, CaseIterable, Codable, Sendable where RawValue == String {}

extension WireChoice {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let raw = try container.decode(String.self)
        guard let value = Self(rawValue: raw) else {
            let field = decoder.codingPath.last?.stringValue ?? String(describing: Self.self)
            let unknown = UnknownChoice(field: field, value: raw, allowed: Self.rawValues)
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath, debugDescription: unknown.description, underlyingError: unknown))
        }
        self = value
    }

    /// Every case's raw value, in declaration order.
    public static var rawValues: [String] { allCases.map(\.rawValue) }

    /// `raw` as a case, or an ``UnknownChoice`` naming `field` (for query parameters and forms).
    public static func parse(_ raw: String, field: String) throws(UnknownChoice) -> Self {
        guard let value = Self(rawValue: raw) else { throw UnknownChoice(field: field, value: raw, allowed: rawValues) }
        return value
    }
}

/// A value that names no member of a ``WireChoice``.
public struct UnknownChoice: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var value: String
    public var allowed: [String]

    public init(field: String, value: String, allowed: [String]) {
        self.field = field
        self.value = value
        self.allowed = allowed
    }

    public var description: String { "\(field) must be one of \(allowed.joined(separator: ", "))" }
}

/// An open set of wire strings: a value another party defines and may add to (a Stripe
/// PaymentIntent's status, a Starknet finality status, a MyCHIPs tally state). It keeps any
/// value it is given, so a new one never fails a decode; its type's static constants name the
/// values the code acts on.
///
/// ```swift
/// public struct FinalityStatus: OpenChoice {
///     public let rawValue: String
///     public init(rawValue: String) { self.rawValue = rawValue }
///     public static let acceptedOnL2: Self = "ACCEPTED_ON_L2"
/// }
/// ```
public protocol OpenChoice: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral
where RawValue == String, StringLiteralType == String {
    init(rawValue: String)
}

extension OpenChoice {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

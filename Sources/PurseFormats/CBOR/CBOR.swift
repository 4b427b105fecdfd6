import Foundation

/// One CBOR data item (RFC 8949): what ``CBORDecoder`` reads (WebAuthn attestation objects, COSE
/// keys, App Attest statements) and ``encoded`` writes.
public indirect enum CBOR: Equatable, Sendable {
    case unsigned(UInt64)
    case negative(Int64)  // the value itself, e.g. -7
    case bytes(Data)
    case text(String)
    case array([CBOR])
    case map([(CBOR, CBOR)])
    case tagged(UInt64, CBOR)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    public static func == (lhs: CBOR, rhs: CBOR) -> Bool {
        switch (lhs, rhs) {
        case let (.unsigned(a), .unsigned(b)): a == b
        case let (.negative(a), .negative(b)): a == b
        case let (.bytes(a), .bytes(b)): a == b
        case let (.text(a), .text(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.map(a), .map(b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case let (.tagged(t1, a), .tagged(t2, b)): t1 == t2 && a == b
        case let (.bool(a), .bool(b)): a == b
        case (.null, .null), (.undefined, .undefined): true
        case let (.float(a), .float(b)): a == b
        default: false
        }
    }

    /// Looks up a map entry by integer key (COSE labels).
    public subscript(int key: Int64) -> CBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.0.intValue == key }?.1
    }

    /// Looks up a map entry by text key.
    public subscript(text key: String) -> CBOR? {
        guard case .map(let pairs) = self else { return nil }
        return pairs.first { $0.0 == .text(key) }?.1
    }

    public var intValue: Int64? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int64.max) ? Int64(value) : nil
        case .negative(let value): value
        default: nil
        }
    }

    /// An integer as CBOR writes it: major type 0 from zero up, 1 below zero.
    public static func int(_ value: Int64) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(value)
    }

    public var bytesValue: Data? { if case .bytes(let data) = self { data } else { nil } }
    public var textValue: String? { if case .text(let text) = self { text } else { nil } }
}

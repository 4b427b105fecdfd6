/// A Starknet field element: an integer in [0, P) with P = 2^251 + 17·2^192 + 1.
///
/// Addresses, selectors, hashes, calldata and signatures are all felts. Parsing refuses anything
/// out of range instead of reducing it, so a typo never becomes another valid address. On the wire
/// a felt is minimal lowercase hex with `0x` (`description`), as the JSON-RPC specification writes it.
public struct Felt: Hashable, Sendable, Comparable, CustomStringConvertible {
    let raw: U256

    init(raw: U256) { self.raw = raw }

    /// The prime P.
    public static let prime = Felt(raw: Fp.modulus)
    public static let zero = Felt(raw: .zero)
    public static let one = Felt(raw: U256(1))
    /// P − 1, the largest felt.
    public static let max = Felt(raw: U256.subtract(Fp.modulus, U256(1)).0)

    public init(_ value: UInt64) { raw = U256(value) }

    /// The felt for a 256-bit value given as four limbs, least significant first; nil when ≥ P.
    init?(limbs raw: U256) {
        guard raw < Fp.modulus else { return nil }
        self.raw = raw
    }

    /// Parses `0x`-prefixed hexadecimal or decimal digits; nil when malformed or ≥ P.
    public init?(_ text: some StringProtocol) {
        let text = Substring(text)
        let raw: U256?
        if text.hasPrefix("0x") || text.hasPrefix("0X") {
            raw = U256(hexDigits: text.dropFirst(2))
        } else {
            raw = U256(decimalDigits: text)
        }
        guard let raw, raw < Fp.modulus else { return nil }
        self.raw = raw
    }

    /// The felt of up to 32 big-endian bytes; nil when the value is ≥ P.
    public init?(bigEndianBytes bytes: some Collection<UInt8>) {
        guard let raw = U256(bigEndian: bytes), raw < Fp.modulus else { return nil }
        self.raw = raw
    }

    /// Minimal lowercase hex with `0x`: `0x0`, `0x1f`.
    public var description: String { "0x" + raw.hexDigits }
    /// 64 hex digits with `0x`, as block explorers show addresses.
    public var paddedHex: String {
        let digits = raw.hexDigits
        return "0x" + String(repeating: "0", count: 64 - digits.count) + digits
    }
    public var decimal: String { raw.decimalDigits }
    public var bigEndianBytes: [UInt8] { raw.bigEndianBytes }
    public var bitWidth: Int { raw.bitWidth }
    public var isZero: Bool { raw.isZero }

    /// The value when it fits 64 bits.
    public var uint64: UInt64? { raw.l1 | raw.l2 | raw.l3 == 0 ? raw.l0 : nil }

    public static func < (a: Felt, b: Felt) -> Bool { a.raw < b.raw }

    // MARK: Field arithmetic (mod P)

    public static func + (a: Felt, b: Felt) -> Felt { Felt(raw: modularAdd(a.raw, b.raw, modulus: Fp.modulus)) }
    public static func - (a: Felt, b: Felt) -> Felt { Felt(raw: modularSubtract(a.raw, b.raw, modulus: Fp.modulus)) }
    public static func * (a: Felt, b: Felt) -> Felt { Felt(raw: (Fp(a.raw) * Fp(b.raw)).value) }

    var fp: Fp { Fp(raw) }
}

extension Felt: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: UInt64) { self.init(value) }
}

extension Felt: Codable {
    /// Decodes the RPC's hex string (decimal digits are accepted too).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let felt = Felt(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a field element: \(text.prefix(80))")
        }
        self = felt
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

// MARK: - Short strings

extension Felt {
    /// A Cairo short string: at most 31 ASCII characters, big-endian in one felt ("SN_SEPOLIA").
    public init?(shortString text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count <= 31, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        self.init(bigEndianBytes: bytes)
    }

    /// The felt as a short string, when its bytes are printable ASCII.
    public var shortString: String? {
        let bytes = bigEndianBytes.drop { $0 == 0 }
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}

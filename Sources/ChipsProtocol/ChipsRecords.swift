import Crypto
import Foundation
import PurseFormats

/// The two ends of a tally: the stock (held by the vendor, normally owed value) and the foil
/// (held by the client, normally owing it).
public enum TallySide: String, Sendable, Codable, CaseIterable {
    case stock, foil

    public var other: TallySide { self == .stock ? .foil : .stock }
}

/// What a chit does: a transaction (`tran`, a payment), a trading-variable or close setting
/// (`set`), or a credit lift (`lift`).
public enum ChitType: String, Sendable, Codable, CaseIterable {
    case tran, set, lift
}

/// The part of a tally both partners sign: MyCHIPs' `mychips.tally_json`, the `json_core` of
/// `mychips.tallies_v`:
///
///     {version, revision, uuid, date, memo, agree, stock: {cert, terms}, foil: {cert, terms}}
///
/// `memo` is the tally's comment, `revision` counts the times an offer was revised, and `agree`
/// names the tally contract as `{source: rid}`. Each partner signs its stable JSON (keys sorted,
/// no spaces, nulls kept — `json-stable-stringify` of the record) with the signing key whose
/// public half is in their certificate. The tally's digest, the first link of its chit chain, is
/// SHA-256 of the record as `mychips.j2h` serializes it (Python's sorted, compact `json.dumps`).
public struct TallyCore: Sendable, Equatable {
    public var version: Int
    /// How many times the tally was revised (countered) in negotiation; 1 for the first offer.
    public var revision: Int
    public var uuid: TallyID
    /// Unix milliseconds; written as `toISOString()`.
    public var date: Int64
    public var memo: String?
    /// The tally contract: `{source: rid}`.
    public var agree: JSONValue
    public var stock: Half
    public var foil: Half

    /// One end's certificate and the credit terms that end grants its partner (`{limit, call}`).
    public struct Half: Sendable, Equatable {
        public var cert: JSONValue
        public var terms: JSONValue

        public init(cert: JSONValue, terms: JSONValue) {
            self.cert = cert
            self.terms = terms
        }
    }

    public init(version: Int = 1, revision: Int = 1, uuid: TallyID, date: Int64, memo: String?, agree: JSONValue, stock: Half, foil: Half) {
        self.version = version
        self.revision = revision
        self.uuid = uuid
        self.date = date
        self.memo = memo
        self.agree = agree
        self.stock = stock
        self.foil = foil
    }

    /// The record read back from its JSON; nil when a member is missing or has the wrong type,
    /// or when the JSON has members the record does not have (which the signatures would not
    /// cover as the partner meant them).
    public init?(json: JSONValue) {
        guard case .object(let members) = json, let version = members["version"]?.int64Value, let revision = members["revision"]?.int64Value,
              case .string(let uuid)? = members["uuid"], case .string(let dateText)? = members["date"],
              let date = JavaScriptDate.epochMillis(dateText), let stock = members["stock"], let foil = members["foil"],
              let versionInt = Int(exactly: version), let revisionInt = Int(exactly: revision) else { return nil }
        let memo: String?
        switch members["memo"] {
        case .string(let text)?: memo = text
        case .null?, nil: memo = nil
        default: return nil
        }
        self.init(version: versionInt, revision: revisionInt, uuid: TallyID(uuid), date: date, memo: memo, agree: members["agree"] ?? .null,
                  stock: Half(cert: stock["cert"] ?? .null, terms: stock["terms"] ?? .null),
                  foil: Half(cert: foil["cert"] ?? .null, terms: foil["terms"] ?? .null))
        guard self.json == json else { return nil }
    }

    public func half(_ side: TallySide) -> Half { side == .stock ? stock : foil }

    public var json: JSONValue {
        .object([
            "version": .int(Int64(version)), "revision": .int(Int64(revision)), "uuid": .string(uuid.rawValue),
            "date": .string(JavaScriptDate.string(epochMillis: date)), "memo": memo.map(JSONValue.string) ?? .null, "agree": agree,
            "stock": .object(["cert": stock.cert, "terms": stock.terms]),
            "foil": .object(["cert": foil.cert, "terms": foil.terms]),
        ])
    }

    /// The text a partner signs.
    public var signingText: String { JavaScriptJSON.stringify(json, sortingKeys: true) }

    /// `mychips.j2h(json_core)`, base64url: the chain's first link.
    public var digest: String { ChipsDigest.of(json) }

    /// A credit term's `limit` (CHIPs, as a number or decimal text) in milliCHIPs; none is no
    /// credit. The provider checks payments against it and the client shows it from the same rule.
    public static func units(ofLimit value: JSONValue?) -> Int64 {
        switch value {
        case .int(let chips)?: return chips.multipliedReportingOverflow(by: 1000).overflow ? .max : max(0, chips * 1000)
        case .uint(let chips)?: return chips > UInt64(Int64.max / 1000) ? .max : Int64(chips) * 1000
        case .double(let chips)?: return chips.isFinite && chips > 0 ? Int64(min(chips * 1000, 9e18).rounded(.down)) : 0
        case .string(let text)?: return (try? DecimalAmount.parse(text, decimals: 3)) ?? 0
        default: return 0
        }
    }

    /// True when `signature` is the signature of `side`'s holder, by the key in that side's certificate.
    public func isSigned(by side: TallySide, signature: String?, verifier: ChipsSignatureVerifier = .swiftCrypto) -> Bool {
        guard let signature else { return false }
        return ChipsSignature.isValid(signature, over: signingText, publicKey: half(side).cert["public"], verifier: verifier)
    }
}

/// The part of a chit its issuer signs: MyCHIPs' `mychips.chit_json_c`, nulls dropped:
///
///     {tally, by, type, uuid, date, units, ref, memo}
///
/// The issuer signs its stable JSON; the chit's digest is `j2h` of it. Each chit the tally holds
/// is a link of a hash chain that starts at the tally's digest: a link's hash is `j2h` of the core
/// with `{index, prior, sign}` added (`mychips.chit_json_h`), `prior` being the link before it.
public struct ChitCore: Sendable, Equatable {
    public var tally: TallyID
    public var by: TallySide
    public var type: ChitType
    public var uuid: ChitID
    /// Unix milliseconds; written as `toISOString()`.
    public var date: Int64
    /// milliCHIPs, never negative; nil for a `set` chit.
    public var units: Int64?
    /// An invoice or order reference, or a `set` chit's settings.
    public var reference: JSONValue?
    public var memo: String?

    public init(tally: TallyID, by: TallySide, type: ChitType, uuid: ChitID, date: Int64, units: Int64?, reference: JSONValue?, memo: String?) {
        self.tally = tally
        self.by = by
        self.type = type
        self.uuid = uuid
        self.date = date
        self.units = units
        self.reference = reference
        self.memo = memo
    }

    /// The core read back from its JSON (`json_core` as the provider stores it); nil when a member
    /// is missing or has the wrong type, or the JSON has members a chit core does not have.
    public init?(json: JSONValue) {
        guard case .object(let members) = json, Set(members.keys).isSubset(of: ["tally", "by", "type", "uuid", "date", "units", "ref", "memo"]),
              case .string(let tally)? = members["tally"], let by = members["by"]?.stringValue.flatMap(TallySide.init(rawValue:)),
              let type = members["type"]?.stringValue.flatMap(ChitType.init(rawValue:)), case .string(let uuid)? = members["uuid"],
              case .string(let dateText)? = members["date"], let date = JavaScriptDate.epochMillis(dateText) else { return nil }
        let units: Int64?
        switch members["units"] {
        case nil, .null?: units = nil
        case let value?:
            guard let number = value.int64Value, number >= 0 else { return nil }
            units = number
        }
        let memo: String?
        switch members["memo"] {
        case .string(let text)?: memo = text
        case .null?, nil: memo = nil
        default: return nil
        }
        self.init(tally: TallyID(tally), by: by, type: type, uuid: ChitID(uuid), date: date, units: units, reference: members["ref"], memo: memo)
    }

    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "tally": .string(tally.rawValue), "by": .string(by.rawValue), "type": .string(type.rawValue), "uuid": .string(uuid.rawValue),
            "date": .string(JavaScriptDate.string(epochMillis: date)),
        ]
        if let units { members["units"] = .int(units) }
        if let reference, !reference.isNull { members["ref"] = reference }
        if let memo { members["memo"] = .string(memo) }
        return .object(members)
    }

    /// The text the issuer signs: stable JSON, nulls dropped at every depth.
    public var signingText: String { JavaScriptJSON.stable(json) }

    /// `mychips.j2h(json_core)`, base64url.
    public var digest: String { ChipsDigest.of(json) }

    /// The hash of this chit as link `index` of its tally's chain, after the link `prior`:
    /// `j2h(core + {index, prior, sign})`, as MyCHIPs' `chit_json_h` takes it (checked against a
    /// real provider's chains in `ChipsRecordsTests`).
    public func chainHash(index: Int64, prior: String, signature: String?) -> String {
        guard case .object(var members) = json else { return "" }
        members["index"] = .int(index)
        members["prior"] = .string(prior)
        if let signature { members["sign"] = .string(signature) }
        return ChipsDigest.of(.object(members))
    }

    public func isSigned(by publicKey: JSONValue?, signature: String?, verifier: ChipsSignatureVerifier = .swiftCrypto) -> Bool {
        guard let signature else { return false }
        return ChipsSignature.isValid(signature, over: signingText, publicKey: publicKey, verifier: verifier)
    }
}

/// A link of a tally's chit chain as a client reads it from `chits_v_me`.
public struct ChainLink: Sendable, Equatable {
    public var core: ChitCore
    public var signature: String?
    public var index: Int64
    public var prior: String
    public var hash: String

    public init(core: ChitCore, signature: String?, index: Int64, prior: String, hash: String) {
        self.core = core
        self.signature = signature
        self.index = index
        self.prior = prior
        self.hash = hash
    }
}

/// Where a chain stops being what its links claim.
public enum ChainBreak: Error, Equatable, Sendable {
    /// Link `index` is missing, out of order, or does not follow the link before it.
    case misplaced(index: Int64)
    /// Link `index`'s hash is not the hash of its contents.
    case altered(index: Int64)
}

public enum ChipsChain {
    /// Checks links 1…n of a chain that starts at `tallyDigest`: consecutive indexes, each `prior`
    /// the hash before it, each hash the hash of its chit. Returns the last hash (the chain's
    /// checksum of the whole tally history).
    public static func verify(_ links: [ChainLink], tallyDigest: String) throws(ChainBreak) -> String {
        var prior = tallyDigest
        for (offset, link) in links.sorted(by: { $0.index < $1.index }).enumerated() {
            guard link.index == Int64(offset + 1), link.prior == prior else { throw .misplaced(index: link.index) }
            guard link.core.chainHash(index: link.index, prior: prior, signature: link.signature) == link.hash else {
                throw .altered(index: link.index)
            }
            prior = link.hash
        }
        return prior
    }
}

/// `mychips.j2h`: SHA-256 of Python's sorted, compact JSON, base64url without padding.
public enum ChipsDigest {
    public static func of(_ json: JSONValue) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data(PythonJSON.dumps(json).utf8))))
    }

    /// A digest as a `bytea` column reaches a Wyseman client: node-postgres' Buffer,
    /// `{"type": "Buffer", "data": [bytes…]}`. Null for none.
    public static func buffer(_ base64url: String?) -> JSONValue {
        guard let base64url, let bytes = Base64URL.decode(base64url) else { return .null }
        return .object(["type": "Buffer", "data": .array(bytes.map { .int(Int64($0)) })])
    }

    /// A digest column read back as base64url: a Buffer object, or base64url text. Nil for
    /// null, and for anything else (a byte out of range, another type).
    public static func text(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let text)?:
            return Base64URL.decode(text) == nil ? nil : text
        case .object(let members)? where members["type"] == .string("Buffer"):
            guard case .array(let items)? = members["data"], items.count <= 1024 else { return nil }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(items.count)
            for item in items {
                guard let number = item.int64Value, let byte = UInt8(exactly: number) else { return nil }
                bytes.append(byte)
            }
            return Base64URL.encode(Data(bytes))
        default:
            return nil
        }
    }
}

/// The ECDSA P-521 check behind ``ChipsSignature``: a raw `r‖s` signature (132 bytes), the SHA-384
/// digest of the signed text and the signer's public key as `x‖y` (132 bytes, not yet checked to
/// be on the curve). swift-crypto's by default; the provider may bring its own implementation of
/// the same check.
public struct ChipsSignatureVerifier: Sendable {
    public let verify: @Sendable (_ signature: Data, _ digest: SHA384Digest, _ publicKey: Data) -> Bool

    public init(verify: @escaping @Sendable (_ signature: Data, _ digest: SHA384Digest, _ publicKey: Data) -> Bool) {
        self.verify = verify
    }

    /// swift-crypto's P-521 (BoringSSL).
    public static let swiftCrypto = ChipsSignatureVerifier { signature, digest, publicKey in
        guard let key = try? P521.Signing.PublicKey(rawRepresentation: publicKey),
              let ecdsa = try? P521.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
        return key.isValidSignature(ecdsa, for: digest)
    }
}

/// Signatures of MyCHIPs records: ECDSA P-521 with SHA-384 (WebCrypto's `{name: 'ECDSA', hash:
/// 'SHA-384'}`), raw `r‖s`, base64url — by a user's signing key, whose public JWK is the
/// `public` member of their certificate.
public enum ChipsSignature {
    public static func isValid(_ signature: String, over text: String, publicKey: JSONValue?,
                               verifier: ChipsSignatureVerifier = .swiftCrypto) -> Bool {
        guard let key = rawPublicKey(publicKey), let raw = Base64URL.decode(signature), raw.count == 132 else { return false }
        return verifier.verify(raw, SHA384.hash(data: Data(text.utf8)), key)
    }

    /// True when two JWKs (objects or JSON texts) are the same P-521 public key.
    public static func sameKey(_ one: JSONValue?, _ other: JSONValue?) -> Bool {
        guard let first = publicKey(one), let second = publicKey(other) else { return false }
        return first.rawRepresentation == second.rawRepresentation
    }

    /// A P-521 public key from its JWK (a JSON object, or JSON text of one); nil for anything else.
    public static func publicKey(_ jwk: JSONValue?) -> P521.Signing.PublicKey? {
        rawPublicKey(jwk).flatMap { try? P521.Signing.PublicKey(rawRepresentation: $0) }
    }

    /// The `x‖y` of a P-521 public JWK (a JSON object, or JSON text of one), without checking
    /// that the point is on the curve; nil for anything else (another curve, a private key).
    public static func rawPublicKey(_ jwk: JSONValue?) -> Data? {
        let parsed: EllipticCurveJWK?
        switch jwk {
        case .object(let members)?: parsed = EllipticCurveJWK(members: members)
        case .string(let text)?: parsed = EllipticCurveJWK.parse(text)
        default: return nil
        }
        guard let parsed, parsed.kty == "EC", parsed.crv == "P-521", parsed.d == nil else { return nil }
        return parsed.rawPublicKey
    }
}

import Foundation

/// An elliptic-curve JSON Web Key (RFC 7518 §6.2) as WebCrypto's `exportKey('jwk', …)` writes it:
/// `kty` `EC`, `crv`, the point `x` and `y` (and the private `d`) in base64url. MyCHIPs'
/// connection keys are P-521 keys in this form, sent base64url-encoded in the login URL's `pub`.
public struct EllipticCurveJWK: Sendable, Equatable, Codable {
    public var kty: String
    public var crv: String
    public var x: String
    public var y: String
    public var d: String?
    /// WebCrypto's extras; kept so an exported key reads back as it was.
    public var ext: Bool?
    public var key_ops: [String]?

    public init(crv: String, x: Data, y: Data, d: Data? = nil, keyOps: [String]? = nil) {
        self.kty = "EC"
        self.crv = crv
        self.x = Base64URL.encode(x)
        self.y = Base64URL.encode(y)
        self.d = d.map { Base64URL.encode($0) }
        self.ext = true
        self.key_ops = keyOps
    }

    /// The coordinate length of the key's curve in bytes, or nil for a curve not handled here.
    public static func coordinateLength(of curve: String) -> Int? {
        switch curve {
        case "P-256": 32
        case "P-384": 48
        case "P-521": 66
        default: nil
        }
    }

    /// The uncompressed point `x ‖ y`, checked against the curve's coordinate length.
    public var rawPublicKey: Data? {
        guard kty == "EC", let length = Self.coordinateLength(of: crv), let x = Base64URL.decode(x), let y = Base64URL.decode(y),
              x.count == length, y.count == length else { return nil }
        return x + y
    }

    /// The private scalar, checked against the curve's length.
    public var rawPrivateKey: Data? {
        guard let d, let length = Self.coordinateLength(of: crv), let raw = Base64URL.decode(d), raw.count == length else { return nil }
        return raw
    }

    /// Without the private part.
    public var publicOnly: EllipticCurveJWK {
        var key = self
        key.d = nil
        key.key_ops = key_ops.map { _ in ["verify"] }
        return key
    }

    /// Compact JSON text (members in a fixed order).
    public var jsonText: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    /// The key of a JSON object's members, as ``parse(_:)`` reads the object's text: `kty`,
    /// `crv`, `x` and `y` strings, and `d` (a string), `ext` (a boolean) and `key_ops` (strings)
    /// each absent or null. Nil for anything else.
    public init?(members: [String: JSONValue]) {
        guard case .string(let kty)? = members["kty"], case .string(let crv)? = members["crv"],
              case .string(let x)? = members["x"], case .string(let y)? = members["y"] else { return nil }
        (self.kty, self.crv, self.x, self.y) = (kty, crv, x, y)
        switch members["d"] {
        case nil, .null?: d = nil
        case .string(let value)?: d = value
        default: return nil
        }
        switch members["ext"] {
        case nil, .null?: ext = nil
        case .bool(let value)?: ext = value
        default: return nil
        }
        switch members["key_ops"] {
        case nil, .null?: key_ops = nil
        case .array(let items)?:
            var operations: [String] = []
            for item in items {
                guard case .string(let operation) = item else { return nil }
                operations.append(operation)
            }
            key_ops = operations
        default: return nil
        }
    }

    public static func parse(_ text: String) -> EllipticCurveJWK? {
        try? JSONDecoder().decode(EllipticCurveJWK.self, from: Data(text.utf8))
    }
}

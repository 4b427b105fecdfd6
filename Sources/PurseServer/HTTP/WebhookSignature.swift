import Crypto
import Foundation
import PurseFormats

/// Signed webhooks in Stripe's scheme: a header `t=<unix time>,v1=<hex HMAC-SHA256>[,v1=…]`, the
/// HMAC keyed with the endpoint secret over `"<t>.<raw body>"`. Maly checks Stripe's
/// (`Stripe-Signature`) and its sandbox sends them; ChippiPay signs its own (`Chipi-Signature`).
public enum WebhookSignature {
    public static let defaultTolerance: TimeInterval = 300

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case missingHeader
        case malformedHeader
        case noSignatures
        case mismatch
        case outsideTolerance

        public var description: String {
            switch self {
            case .missingHeader: "Missing signature header"
            case .malformedHeader: "Unable to extract timestamp and signatures from header"
            case .noSignatures: "No signatures found with expected scheme"
            case .mismatch: "No signatures found matching the expected signature for payload"
            case .outsideTolerance: "Timestamp outside the tolerance zone"
            }
        }
    }

    /// The header value for `payload` signed at `timestamp`.
    public static func header(payload: Data, secret: String, timestamp: Int) -> String {
        header(payload: payload, secrets: [secret], timestamp: timestamp)
    }

    /// The header value with a `v1` signature by each of `secrets` (during a secret's roll, the
    /// new one first): a receiver that knows any of them verifies it, as Stripe's do.
    public static func header(payload: Data, secrets: [String], timestamp: Int) -> String {
        "t=\(timestamp)" + secrets.map { ",v1=" + signature(payload: payload, secret: $0, timestamp: timestamp) }.joined()
    }

    static func signature(payload: Data, secret: String, timestamp: Int) -> String {
        let key = SymmetricKey(data: Data(secret.utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(timestamp).".utf8) + payload, using: key)
        return Hex.encode(mac)
    }

    /// Verifies a header against the raw body, as Stripe's libraries do: any `v1` may match,
    /// compared in constant time, and the timestamp must be within `tolerance` of `now`.
    public static func verify(header: String?, payload: Data, secret: String, now: Date, tolerance: TimeInterval = defaultTolerance) throws {
        guard let header, !header.isEmpty else { throw Failure.missingHeader }
        var timestamp: Int?
        var signatures: [String] = []
        for item in header.split(separator: ",") {
            let parts = item.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else { continue }
            let key = parts[0].trimmingCharacters(in: .whitespaces), value = parts[1].trimmingCharacters(in: .whitespaces)
            if key == "t" { timestamp = Int(value) } else if key == "v1" { signatures.append(value) }
        }
        guard let timestamp else { throw Failure.malformedHeader }
        guard !signatures.isEmpty else { throw Failure.noSignatures }
        let expected = Array(signature(payload: payload, secret: secret, timestamp: timestamp).utf8)
        let matched = signatures.reduce(false) { found, candidate in
            found || ConstantTime.equal(Array(candidate.utf8), expected)
        }
        guard matched else { throw Failure.mismatch }
        guard abs(now.timeIntervalSince1970 - Double(timestamp)) <= tolerance else { throw Failure.outsideTolerance }
    }
}

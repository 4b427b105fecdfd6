import Foundation

/// A fresh key for one intended effect; reuse it on every retry of that effect.
public enum IdempotencyKey {
    /// A random (version 4) UUID in lowercase, drawn from the system's CSPRNG directly: on Linux,
    /// Foundation's `UUID()` opens, reads and closes `/dev/urandom` for every one.
    public static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = raw[6] & 0x0F | 0x40  // version 4
            raw[8] = raw[8] & 0x3F | 0x80  // RFC 9562 variant
            return UUID(uuid: raw.load(as: uuid_t.self)).uuidString.lowercased()
        }
    }
}

extension JSONEncoder {
    /// The wire encoder: ISO-8601 dates, stable key order.
    public static var purse: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

extension JSONDecoder {
    /// The wire decoder: ISO-8601 dates (with or without fractional seconds).
    public static var purse: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            if let date = ISO8601DateFormatter.withFractions.date(from: text) ?? ISO8601DateFormatter().date(from: text) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO-8601 date: \(text)")
        }
        return decoder
    }
}

extension ISO8601DateFormatter {
    static var withFractions: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}

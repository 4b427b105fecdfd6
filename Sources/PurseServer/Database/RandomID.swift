import Foundation

/// Random identifiers and tokens from the system's CSPRNG.
public enum RandomID {
    /// `prefix_` followed by 24 lowercase hex characters (96 random bits), e.g. `usr_3f9a…`.
    public static func make(_ prefix: String) -> String {
        "\(prefix)_\(hex(bytes: 12))"
    }

    public static func hex(bytes count: Int) -> String {
        Hex.encode(bytes(count))
    }

    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 7)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next() as UInt64) { bytes.append(contentsOf: $0) }
        }
        return Array(bytes.prefix(count))
    }
}

/// Milliseconds since 1970, the one time format in storage.
public typealias EpochMillis = Int64

extension Date {
    public var epochMillis: EpochMillis { EpochMillis((timeIntervalSince1970 * 1000).rounded(.down)) }
    public init(epochMillis: EpochMillis) { self.init(timeIntervalSince1970: Double(epochMillis) / 1000) }
}

import Foundation

/// Random identifiers and tokens from the system's CSPRNG.
public enum RandomID {
    /// `prefix_` followed by 24 lowercase hex characters (96 random bits), e.g. `usr_3f9a…`.
    public static func make(_ prefix: String) -> String {
        "\(prefix)_\(hex(bytes: 12))"
    }

    public static func hex(bytes count: Int) -> String {
        bytes(count).map { String(format: "%02x", $0) }.joined()
    }

    public static func bytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}

/// Milliseconds since 1970, the one time format in storage.
public typealias EpochMillis = Int64

extension Date {
    public var epochMillis: EpochMillis { EpochMillis((timeIntervalSince1970 * 1000).rounded(.down)) }
    public init(epochMillis: EpochMillis) { self.init(timeIntervalSince1970: Double(epochMillis) / 1000) }
}

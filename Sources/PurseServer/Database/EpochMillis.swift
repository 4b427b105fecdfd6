import Foundation
import PurseDatabase

/// Milliseconds since 1970, the one time format in storage.
public typealias EpochMillis = Int64

extension Date {
    public var epochMillis: EpochMillis { EpochMillis((timeIntervalSince1970 * 1000).rounded(.down)) }
    public init(epochMillis: EpochMillis) { self.init(timeIntervalSince1970: Double(epochMillis) / 1000) }
}

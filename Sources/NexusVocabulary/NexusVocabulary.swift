@_exported import PurseFormats

/// The words the Nexus Data app and its service share on the wire: where a transaction stands,
/// what kind it is, and the ids that name one. The client core re-exports this module; the
/// service encodes the same types, so a status the one writes is a status the other reads.

/// Where a wallet transaction stands.
public enum TransactionStatus: String, WireChoice {
    /// A top-up the supplier has not confirmed yet; its price is held from the wallet.
    case pending
    case completed
    /// The supplier refused it; its price went back to the wallet.
    case failed

    /// Whether the transaction can still change.
    public var isSettled: Bool { self != .pending }
}

/// What moved money in a wallet.
public enum TransactionKind: String, WireChoice {
    /// Airtime or data bought for a phone number.
    case topup
    /// Money paid into the wallet.
    case funding
}

/// How a top-up was authorised.
public enum TopupMethod: String, WireChoice {
    case biometric
    case pin
}

public enum TransactionTag {}
/// A wallet transaction's id (`tx_…`).
public typealias TransactionID = Tagged<TransactionTag, String>

/// What a biometric challenge is for. A step-up token carries its intent, and a route takes only
/// a token issued for its own.
public enum ChallengeIntent: String, WireChoice {
    /// A top-up.
    case transaction
    /// The app's soft lock.
    case unlock
    /// Enrolling a credential (a registration ceremony).
    case enrol
}

/// Which WebAuthn ceremony a challenge belongs to.
public enum Ceremony: String, WireChoice {
    case registration
    case authentication
}

@_exported import PurseFormats

/// The words the ChippiPay app and the provider share on the wire: where a purchase and a wallet
/// stand, and the ids that name them. The client core re-exports this module; the provider
/// encodes the same types.

/// Where a service purchase (`/v1/sku-transactions`) stands.
public enum PurchaseStatus: String, WireChoice {
    /// Paid from the vault; the service is being fulfilled.
    case pending
    case completed
    /// Not fulfilled; the STRK it paid went back to the payer.
    case failed

    /// Whether the purchase can still change.
    public var isSettled: Bool { self != .pending }
}

/// Where a gasless wallet stands at the provider.
public enum WalletStatus: String, WireChoice {
    /// Its id is reserved for an app user; no key is saved yet.
    case prepared
    /// Saved with its public key, address and sealed private key.
    case active
}

public enum WalletTag {}
/// A gasless wallet's id at the provider.
public typealias WalletID = Tagged<WalletTag, String>

public enum PurchaseTag {}
/// A service purchase's id (`transaction_id`).
public typealias PurchaseID = Tagged<PurchaseTag, String>

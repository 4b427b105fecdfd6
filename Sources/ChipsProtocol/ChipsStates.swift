import PurseFormats

/// Where a tally stands: MyCHIPs' `mychips.tallies.status`.
public enum TallyStatus: String, WireChoice {
    /// Withdrawn or refused; never opened.
    case void
    /// Being written by one partner.
    case draft
    /// Signed by one partner (or both) and sent to the other.
    case offer
    /// Signed by both: chits may be exchanged.
    case open
    /// Closed at a zero balance.
    case close

    /// Open for chits (a tally asked to close stays open until its balance reaches zero).
    public var isOpen: Bool { self == .open }
    /// One partner may still change or withdraw it.
    public var isNegotiable: Bool { self == .draft || self == .offer }
}

/// Where a chit stands: MyCHIPs' `mychips.chits.status`.
public enum ChitStatus: String, WireChoice {
    case draft
    /// A request to pay, or a payment waiting for its signature.
    case pend
    /// Signed and in the chain: it moves the balance.
    case good
    case void
}

/// A tally's state as the holder sees it (MyCHIPs' `mychips.tally_state`): its status, with a
/// prefix saying whose signatures it has (`H.` holder, `P.` partner, `B.` both) or that it is
/// closing (`C.`), and a suffix naming a pending request (`draft.offer`). The provider composes
/// it, so it is an open set: the constants name the states the app acts on.
public struct TallyState: OpenChoice {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The holder's own draft.
    public static let draft: TallyState = "draft"
    /// A draft the partner joined (by a ticket): the holder offers it next.
    public static let partnerDraft: TallyState = "P.draft"
    /// Offered by the holder, waiting for the partner.
    public static let holderOffer: TallyState = "H.offer"
    /// Offered by the partner: the holder accepts, counters or refuses it.
    public static let partnerOffer: TallyState = "P.offer"
    public static let open: TallyState = "open"
    /// Open, with a close asked for: it closes when its balance reaches zero.
    public static let closing: TallyState = "C.open"
    public static let close: TallyState = "close"
    public static let void: TallyState = "void"
}

/// A chit's state as the holder sees it (MyCHIPs' `mychips.chit_state`): `A.` (an asset: the
/// partner issued it) or `L.` (a liability: the holder issued it), its status, and a pending
/// request (`.good`). An open set, like ``TallyState``.
public struct ChitState: OpenChoice {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The state of a chit with `status` and `request`, seen by a holder to whom it is an asset
    /// (`isDebit`: the partner issued it) or a liability.
    public init(asset: Bool, status: ChitStatus, request: String?) {
        self.rawValue = (asset ? "A." : "L.") + status.rawValue + (request.map { "." + $0 } ?? "")
    }

    /// A request to the holder to pay: the holder signs it (or refuses).
    public static let requestToPay: ChitState = "L.pend"
    /// A payment the holder received.
    public static let assetGood: ChitState = "A.good"
    /// A payment the holder made.
    public static let liabilityGood: ChitState = "L.good"
    /// A voided chit that is an asset to the holder (the partner issued it).
    public static let assetVoid: ChitState = "A.void"
    /// A voided chit that is a liability of the holder (the holder issued it).
    public static let liabilityVoid: ChitState = "L.void"
}

public enum TallyTag {}
/// A tally's uuid: the one both partners' records of the tally share.
public typealias TallyID = Tagged<TallyTag, String>

public enum ChitTag {}
/// A chit's uuid: the one both ends of the tally know it by.
public typealias ChitID = Tagged<ChitTag, String>

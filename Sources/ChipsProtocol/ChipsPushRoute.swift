import PurseFormats

/// Where a tally or chit notice leads in the app, in the one form both ends use: the provider
/// puts it beside `aps` in each push, and the app reads it from a push's `userInfo` or from a
/// websocket notice alike.
///
/// ```json
/// {"target": "chit", "sequence": 3, "state": "L.pend", "uuid": "6179c2e0-…", "action": true}
/// ```
///
/// `sequence` is the notified user's tally (a number), `uuid` the chit for chit notices, and
/// `action` (a boolean) says the user is asked to do something: sign a tally offer, pay a
/// request, or (`reason: "invoice"`, with `memo` and `units` when given) send an invoice.
public struct ChipsPushRoute: Equatable, Sendable {
    public enum Target: String, Sendable { case tally, chit }

    /// The state the notice reports: a tally's, or a chit's. It says which the notice is about.
    public enum State: Equatable, Sendable {
        case tally(TallyState)
        case chit(ChitState)

        public var target: Target {
            switch self {
            case .tally: .tally
            case .chit: .chit
            }
        }

        /// The state as the provider writes it (`P.offer`, `L.pend`, …).
        public var rawValue: String {
            switch self {
            case .tally(let state): state.rawValue
            case .chit(let state): state.rawValue
            }
        }
    }

    public var state: State
    public var sequence: Int64
    public var uuid: ChitID?
    public var action: Bool
    /// Why a tally notice came when it is not a change of state: `invoice` (the partner asks
    /// the user for an invoice, with ``memo`` and ``units``).
    public var reason: String?
    public var memo: String?
    public var units: Int64?

    public var target: Target { state.target }

    public init(state: State, sequence: Int64, uuid: ChitID? = nil, action: Bool, reason: String? = nil, memo: String? = nil, units: Int64? = nil) {
        self.state = state
        self.sequence = sequence
        self.uuid = uuid
        self.action = action
        self.reason = reason
        self.memo = memo
        self.units = units
    }

    /// Reads a provider notice (`{target, sequence, state, action, object, …}`) or a push's
    /// route members. Nil when it names no tally.
    public init?(_ data: JSONValue) {
        guard let target = data["target"]?.stringValue.flatMap(Target.init(rawValue:)),
              let sequence = data["sequence"]?.int64Value, sequence > 0 else { return nil }
        let state = data["state"]?.stringValue ?? ""
        self.sequence = sequence
        switch target {
        case .tally:
            self.state = .tally(TallyState(rawValue: state))
            uuid = nil
            action = Self.flag(data["action"]) ?? false
            if data["reason"]?.stringValue == "invoice" {
                reason = "invoice"
                memo = data["memo"]?.stringValue
                units = data["units"]?.int64Value
            }
        case .chit:
            let chitState = ChitState(rawValue: state)
            self.state = .chit(chitState)
            uuid = (data["uuid"]?.stringValue ?? data["object"]?["uuid"]?.stringValue).map(ChitID.init(rawValue:))
            // A chit notice carries no `action`: a pending request (`L.pend`) is the one to answer.
            action = Self.flag(data["action"]) ?? (chitState == .requestToPay)
        }
    }

    private static func flag(_ value: JSONValue?) -> Bool? {
        if case .bool(let flag)? = value { return flag }
        return nil
    }

    /// The members a push carries beside `aps`.
    public var members: [String: JSONValue] {
        var members: [String: JSONValue] = ["target": .string(target.rawValue), "sequence": .int(sequence),
                                            "state": .string(state.rawValue), "action": .bool(action)]
        if let uuid { members["uuid"] = .string(uuid.rawValue) }
        if let reason { members["reason"] = .string(reason) }
        if let memo { members["memo"] = .string(memo) }
        if let units { members["units"] = .int(units) }
        return members
    }
}

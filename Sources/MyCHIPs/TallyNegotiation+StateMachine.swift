import PurseFormats

/// A tally's negotiation, as a pure state machine: which actions its state allows, what each
/// asks the provider to do, and what the answer leaves. ``TallyEditViewModel`` drives it: it
/// feeds in what happened (``Event``) and runs what the machine asks for (``Effect``), so every
/// rule here is tested without a provider.
///
/// An action the tally's state does not allow is refused here and never reaches the provider;
/// one asked for while another is on its way is ignored.
public struct TallyNegotiation: Sendable, Equatable {
    public enum Action: String, Sendable, CaseIterable {
        /// Make an invitation (a ticket) for a partner to join the holder's draft.
        case invite
        /// Sign and offer a draft the partner joined.
        case offer
        /// Sign the partner's offer: the tally opens.
        case accept
        /// Offer changed terms back to the partner.
        case counter
        /// Refuse a draft or an offer (it becomes void).
        case reject
        /// Ask to close an open tally (it closes at a zero balance).
        case close
    }

    public enum Step: Sendable, Equatable {
        /// No tally loaded yet.
        case unloaded
        /// The tally as it stands: any of ``TallyNegotiation/actions`` may be taken.
        case ready
        /// An action is on its way to the provider.
        case performing(Action)
        /// An action was refused (by this machine or the provider); the tally is as it was.
        case refused(Action, ChipsError)
    }

    public enum Event: Sendable {
        /// The tally as the provider has it now.
        case loaded(ChipsTally)
        /// The user asks for an action.
        case chose(Action)
        /// The invitation was made.
        case invited(TallyInvite)
        /// The provider took the action; the tally as it left it.
        case changed(ChipsTally)
        /// The action failed (the edits did not parse, the key was not there, the provider refused).
        case failed(ChipsError)
    }

    /// What the driver does for the machine, then reports back as an ``Event``.
    public enum Effect: Sendable, Equatable {
        case makeInvitation
        /// Sign the tally with the holder's edits and offer it (an offer, or a counter-offer).
        case signAndOffer
        case signAndAccept
        case reject
        /// Sign a closing settings chit, then read the tally again.
        case signAndClose
    }

    public private(set) var step: Step = .unloaded
    public private(set) var tally: ChipsTally?
    public private(set) var invite: TallyInvite?

    public init() {}

    /// What the holder may do in the tally's state.
    public static func actions(in state: TallyState) -> [Action] {
        switch state {
        case .draft: [.invite, .reject]
        case .partnerDraft: [.offer, .reject]
        case .holderOffer: [.reject]
        case .partnerOffer: [.accept, .counter, .reject]
        case .open: [.close]
        default: []
        }
    }

    /// What the user can do now: nothing while an action is on its way.
    public var actions: [Action] {
        guard let tally, !isPerforming else { return [] }
        return Self.actions(in: tally.state)
    }

    public var isPerforming: Bool {
        if case .performing = step { true } else { false }
    }

    /// The error of the last refused action, as a value.
    public var failure: ChipsError? {
        if case .refused(_, let error) = step { error } else { nil }
    }

    public mutating func handle(_ event: Event) -> [Effect] {
        switch (step, event) {
        case (.performing, .loaded(let tally)), (.performing, .changed(let tally)):
            self.tally = tally
            step = .ready
            return []
        case (_, .loaded(let tally)):
            self.tally = tally
            step = .ready
            return []

        case (.performing, .chose):
            // One action at a time: the one on its way decides what comes next.
            return []
        case (_, .chose(let action)):
            guard let tally else {
                step = .refused(action, .invalidLink("the tally is not loaded yet"))
                return []
            }
            guard Self.actions(in: tally.state).contains(action) else {
                step = .refused(action, .invalidLink("a tally that is \(tally.state) cannot be sent \(action.rawValue)"))
                return []
            }
            step = .performing(action)
            return [Self.effect(of: action)]

        case (.performing, .invited(let invite)):
            self.invite = invite
            step = .ready
            return []
        case (.performing(let action), .failed(let error)):
            step = .refused(action, error)
            return []

        case (_, .invited), (_, .changed), (_, .failed):
            // An answer with no action on its way (a late one after a reload): the tally stands.
            return []
        }
    }

    static func effect(of action: Action) -> Effect {
        switch action {
        case .invite: .makeInvitation
        case .offer, .counter: .signAndOffer
        case .accept: .signAndAccept
        case .reject: .reject
        case .close: .signAndClose
        }
    }
}

import Foundation
import PurseHTTP

/// The seed's implementation flow as a pure state machine: check status → create (skipped when it
/// exists) → link → present → on return (success or reauth) check again → complete, or offer to resume.
public struct HostOnboarding: Sendable, Equatable {
    public enum Step: Sendable, Equatable {
        case idle
        case checkingStatus
        case creatingAccount
        case creatingLink
        /// Show this URL (SFSafariViewController / browser) and wait for the return.
        case presenting(URL)
        case complete(ConnectAccountStatus)
        /// Back from Stripe but not done: offer "Resume onboarding".
        case incomplete(ConnectAccountStatus)
        /// "Platform configuration incomplete": show the contact-support message.
        case platformNotConfigured(String)
        case needsLogin
        case failed(PurseError, retry: Action)
    }

    public enum Event: Sendable, Equatable {
        case start
        case statusLoaded(ConnectAccountStatus)
        case accountCreated
        case linkCreated(URL)
        /// The web view reached a URL: `…/stripe/connect/success` or `…/stripe/connect/reauth`.
        case returned(URL)
        /// The user closed the onboarding page without a redirect.
        case dismissed
        case resume
        case retry
        case failed(PurseError)
    }

    public enum Action: Sendable, Equatable {
        case loadStatus
        case createAccount
        case createLink
        case present(URL)
    }

    public private(set) var step: Step = .idle
    /// True once the user has been to Stripe: an incomplete status then means "offer resume".
    private var returnedFromStripe = false
    private var inFlight: Action?

    public init() {}

    public mutating func handle(_ event: Event) -> [Action] {
        switch (step, event) {
        case (.idle, .start), (.complete, .start), (.incomplete, .start), (.needsLogin, .start), (.platformNotConfigured, .start):
            returnedFromStripe = false
            return go(.checkingStatus, .loadStatus)

        case (.checkingStatus, .statusLoaded(let status)):
            if status.onboardingComplete { step = .complete(status); return [] }
            if !status.hasAccount { return go(.creatingAccount, .createAccount) }
            if returnedFromStripe { step = .incomplete(status); return [] }
            return go(.creatingLink, .createLink)

        case (.creatingAccount, .accountCreated):
            return go(.creatingLink, .createLink)

        case (.creatingLink, .linkCreated(let url)):
            step = .presenting(url)
            inFlight = nil
            return [.present(url)]

        case (.presenting, .returned(let url)):
            guard url.path.hasSuffix("/stripe/connect/success") || url.path.hasSuffix("/stripe/connect/reauth") else { return [] }
            returnedFromStripe = true
            return go(.checkingStatus, .loadStatus)
        case (.presenting, .dismissed):
            returnedFromStripe = true
            return go(.checkingStatus, .loadStatus)

        case (.incomplete, .resume):
            return go(.creatingLink, .createLink)

        case (.failed(_, let action), .retry):
            return go(Self.step(for: action), action)

        case (_, .failed(let error)):
            guard let action = inFlight else { return [] }
            inFlight = nil
            switch (action, error.domainCode) {
            case (.createAccount, "already_has_account"):
                // The seed: skip creation, go straight to the onboarding link.
                return go(.creatingLink, .createLink)
            case (.createAccount, "platform_configuration"):
                step = .platformNotConfigured(error.message)
            default:
                step = error.kind == .unauthorized ? .needsLogin : .failed(error, retry: action)
            }
            return []

        default:
            return []
        }
    }

    private mutating func go(_ next: Step, _ action: Action) -> [Action] {
        step = next
        inFlight = action
        return [action]
    }

    static func step(for action: Action) -> Step {
        switch action {
        case .loadStatus: .checkingStatus
        case .createAccount: .creatingAccount
        case .createLink: .creatingLink
        case .present(let url): .presenting(url)
        }
    }
}

import Foundation
import HTTPTypes
import Observation
import PurseHTTP

/// Runs ``HostOnboarding`` against the API. The view presents ``presentedURL`` (a Safari view
/// controller on iOS, the browser in the CLI) and calls ``handleReturn(_:)`` or ``dismissed()``.
@MainActor
@Observable
public final class HostOnboardingViewModel {
    public private(set) var machine = HostOnboarding()
    public var step: HostOnboarding.Step { machine.step }
    public var presentedURL: URL? {
        if case .presenting(let url) = machine.step { return url }
        return nil
    }

    @ObservationIgnored let service: StripeConnectService

    public init(service: StripeConnectService) { self.service = service }

    public func start() async { await send(.start) }
    public func handleReturn(_ url: URL) async { await send(.returned(url)) }
    public func dismissed() async { await send(.dismissed) }
    public func resume() async { await send(.resume) }
    public func retry() async { await send(.retry) }

    func send(_ event: HostOnboarding.Event) async {
        var pending = machine.handle(event)
        while !pending.isEmpty {
            let action = pending.removeFirst()
            if let next = await perform(action) { pending += machine.handle(next) }
        }
    }

    private func perform(_ action: HostOnboarding.Action) async -> HostOnboarding.Event? {
        do {
            switch action {
            case .loadStatus: return .statusLoaded(try await service.getAccountStatus())
            case .createAccount:
                _ = try await service.createConnectAccount()
                return .accountCreated
            case .createLink:
                let link = try await service.createAccountLink()
                guard let url = URL(string: link.url) else { return .failed(.invalidResponse("onboarding URL is not a URL")) }
                return .linkCreated(url)
            case .present: return nil  // the view shows it
            }
        } catch {
            return .failed((error as? PurseError) ?? .invalidResponse(String(describing: error)))
        }
    }
}

import ConnectService
import Foundation
import PurseHTTP
import PurseKit
import PurseTestSupport
import StripeConnect
import Testing

@Suite("Maly: host onboarding flow")
struct HostOnboardingTests {
    let link = URL(string: "https://connect.example/setup/abc")!
    let success = URL(string: "https://app.example/stripe/connect/success")!
    let reauth = URL(string: "https://app.example/stripe/connect/reauth")!
    let none = ConnectAccountStatus(hasAccount: false, onboardingComplete: false)
    let partial = ConnectAccountStatus(hasAccount: true, onboardingComplete: false)
    let done = ConnectAccountStatus(hasAccount: true, onboardingComplete: true)

    // MARK: The pure state machine

    @Test func firstTimeHostGoesStatusCreateLinkPresent() {
        var flow = HostOnboarding()
        #expect(flow.handle(.start) == [.loadStatus])
        #expect(flow.handle(.statusLoaded(none)) == [.createAccount])
        #expect(flow.handle(.accountCreated) == [.createLink])
        #expect(flow.handle(.linkCreated(link)) == [.present(link)])
        #expect(flow.step == .presenting(link))
        #expect(flow.handle(.returned(success)) == [.loadStatus])
        _ = flow.handle(.statusLoaded(done))
        #expect(flow.step == .complete(done))
    }

    @Test func existingIncompleteHostSkipsCreation() {
        var flow = HostOnboarding()
        _ = flow.handle(.start)
        #expect(flow.handle(.statusLoaded(partial)) == [.createLink])
    }

    @Test func completedHostIsDoneAtOnce() {
        var flow = HostOnboarding()
        _ = flow.handle(.start)
        #expect(flow.handle(.statusLoaded(done)) == [])
        #expect(flow.step == .complete(done))
    }

    @Test func returningUnfinishedOffersResume() {
        var flow = HostOnboarding()
        _ = flow.handle(.start)
        _ = flow.handle(.statusLoaded(partial))
        _ = flow.handle(.linkCreated(link))
        #expect(flow.handle(.returned(reauth)) == [.loadStatus])
        #expect(flow.handle(.statusLoaded(partial)) == [])
        #expect(flow.step == .incomplete(partial))
        #expect(flow.handle(.resume) == [.createLink])
    }

    @Test func unrelatedNavigationIsIgnoredAndDismissChecksStatus() {
        var flow = HostOnboarding()
        _ = flow.handle(.start)
        _ = flow.handle(.statusLoaded(partial))
        _ = flow.handle(.linkCreated(link))
        #expect(flow.handle(.returned(URL(string: "https://connect.example/setup/abc/step2")!)) == [])
        #expect(flow.handle(.dismissed) == [.loadStatus])
    }

    @Test func alreadyHasAccountSkipsToTheLink() {
        var flow = HostOnboarding()
        _ = flow.handle(.start)
        _ = flow.handle(.statusLoaded(none))
        #expect(flow.handle(.failed(.domain("already_has_account", message: "User already has a Stripe Connect account"))) == [.createLink])
    }

    @Test func errorsMapToTheSeedsAdvice() {
        var platform = HostOnboarding()
        _ = platform.handle(.start)
        _ = platform.handle(.statusLoaded(none))
        _ = platform.handle(.failed(.domain("platform_configuration", message: "Platform configuration incomplete. Please contact support to complete Stripe platform setup.")))
        #expect(platform.step == .platformNotConfigured("Platform configuration incomplete. Please contact support to complete Stripe platform setup."))

        var expired = HostOnboarding()
        _ = expired.handle(.start)
        _ = expired.handle(.failed(.unauthorized("Your session has expired. Please log in again.")))
        #expect(expired.step == .needsLogin)

        var network = HostOnboarding()
        _ = network.handle(.start)
        _ = network.handle(.statusLoaded(partial))
        _ = network.handle(.failed(.server(status: 500, message: "Failed to create account link")))
        #expect(network.step == .failed(.server(status: 500, message: ""), retry: .createLink))
        #expect(network.handle(.retry) == [.createLink])
    }

    // MARK: The seed's five test scenarios, against the service and its Stripe sandbox

    @MainActor
    @Test func scenariosAgainstTheSandbox() async throws {
        try await ConnectHarness.withServer { h in
            // 1. First-time host setup, from account creation to completed onboarding.
            let (_, service, _) = try await h.host()
            let model = await HostOnboardingViewModel(service: service)
            await model.start()
            let url = try #require(await model.presentedURL)
            let (_, location) = try await h.completeOnboarding(at: url)
            _ = try await h.deliverWebhooksAndReadStatus(service)
            await model.handleReturn(try #require(location.flatMap(URL.init(string:))))
            #expect(await model.step == .complete(ConnectAccountStatus(hasAccount: true, onboardingComplete: true)))

            // 2. Existing host with incomplete onboarding resumes.
            let (_, second, _) = try await h.host()
            let resuming = await HostOnboardingViewModel(service: second)
            await resuming.start()
            let firstLink = try #require(await resuming.presentedURL)
            _ = try await h.completeOnboarding(at: firstLink, action: "leave_due")
            await resuming.handleReturn(URL(string: "\(h.base.absoluteString)/stripe/connect/success")!)
            #expect(await resuming.step == .incomplete(ConnectAccountStatus(hasAccount: true, onboardingComplete: false)))
            await resuming.resume()
            let secondLink = try #require(await resuming.presentedURL)
            #expect(secondLink != firstLink)
            let resubmitted = try await h.completeOnboarding(at: secondLink)
            #expect(resubmitted.status == 303, "\(resubmitted)")
            let refreshed = try await h.deliverWebhooksAndReadStatus(second)
            let fromStripe = try await second.verifyAccount()
            #expect(refreshed.onboardingComplete, "\(fromStripe)")
            await resuming.handleReturn(URL(string: "\(h.base.absoluteString)/stripe/connect/success")!)
            guard case .complete = await resuming.step else { Issue.record("resume did not complete"); return }

            // 3. Completed host: status shows completion at once.
            let again = await HostOnboardingViewModel(service: service)
            await again.start()
            #expect(await again.step == .complete(ConnectAccountStatus(hasAccount: true, onboardingComplete: true)))

            // 4. Error handling: an expired session asks to log in again.
            let expired = StripeConnectService(api: APIClient(session: ClientSession(baseURL: h.base), transport: service.api.transport, retry: .none), origin: h.base.absoluteString)
            let loggedOut = await HostOnboardingViewModel(service: expired)
            await loggedOut.start()
            #expect(await loggedOut.step == .needsLogin)

            // 5. Status refresh: verify-account reads Stripe and agrees.
            let verified = try await service.verifyAccount()
            #expect(verified.chargesEnabled == true && verified.payoutsEnabled == true && verified.detailsSubmitted == true)
        }
    }
}

import ArgumentParser
import Foundation
import PurseHTTP
import StripeConnect

/// `purse connect status | onboard | verify`: Maly host onboarding.
struct ConnectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connect",
        abstract: "Maly: Stripe Connect onboarding for event hosts (sign in first with `purse account login`).",
        subcommands: [Status.self, Onboard.self, Verify.self]
    )

    static func service(_ options: ClientOptions) throws -> StripeConnectService {
        let url = try options.serverURL
        var origin = "\(url.scheme ?? "http")://\(url.host ?? "127.0.0.1")"
        if let port = url.port { origin += ":\(port)" }
        return StripeConnectService(api: try options.apiClient(), origin: origin)
    }

    static func describe(_ status: ConnectAccountStatus) -> String {
        guard status.hasAccount else { return "No Stripe Connect account yet. Run `purse connect onboard`." }
        var text = status.onboardingComplete ? "Onboarding complete: you can create paid events." : "Onboarding not finished. Run `purse connect onboard` to resume."
        if let charges = status.chargesEnabled, let payouts = status.payoutsEnabled, let details = status.detailsSubmitted {
            text += "\n  charges \(charges ? "enabled" : "disabled") · payouts \(payouts ? "enabled" : "disabled") · details \(details ? "submitted" : "missing")"
        }
        return text
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the onboarding status (from Purse).")
        @OptionGroup var options: ClientOptions
        func run() async throws {
            let service = try ConnectCommand.service(options)
            let status = try await client { try await service.getAccountStatus() }
            try options.output.emit(status) { ConnectCommand.describe(status) }
        }
    }

    struct Verify: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Refresh the status from Stripe.")
        @OptionGroup var options: ClientOptions
        func run() async throws {
            let service = try ConnectCommand.service(options)
            let status = try await client { try await service.verifyAccount() }
            try options.output.emit(status) { ConnectCommand.describe(status) }
        }
    }

    struct Onboard: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the account if needed, print the onboarding URL (opening a browser when there is one), and wait for completion.")
        @OptionGroup var options: ClientOptions
        @Option(help: "Seconds to wait for onboarding to complete.") var timeout: Int = 900
        @Flag(help: "Print the URL and exit without waiting.") var noWait = false

        @MainActor
        func run() async throws {
            let service = try ConnectCommand.service(options)
            let model = HostOnboardingViewModel(service: service)
            await model.start()
            switch model.step {
            case .complete(let status):
                try options.output.emit(status) { "Onboarding is already complete." }
                return
            case .presenting(let url):
                if options.json { print(#"{"url": "\#(url.absoluteString)"}"#) } else { print("Open this page to finish onboarding:\n  \(url.absoluteString)") }
                // Out now, not when the wait ends: a script or `tee` reading a pipe needs the link.
                fflush(nil)
                Self.openBrowser(url)
                if noWait { return }
            case .platformNotConfigured(let message):
                throw CLIError("\(message) (the platform's Stripe Connect profile is not set up)")
            case .needsLogin:
                throw CLIError("Your session has expired. Please log in again with `purse account login`.")
            case .failed(let error, _):
                throw explain(error)
            default:
                throw CLIError("Onboarding stopped at \(model.step).")
            }
            // Wait as the app does after presenting: poll the status until it completes.
            let poller = Poller(interval: .seconds(2), multiplier: 1.2, maxInterval: .seconds(10), maxAttempts: max(1, timeout / 2))
            let status = try await withSpinner("Waiting for onboarding to finish (Ctrl-C to stop)") {
                try await client {
                    try await poller.poll { () -> PollStatus<ConnectAccountStatus> in
                        let status = try await service.getAccountStatus()
                        return status.onboardingComplete ? .done(status) : .pending
                    }
                }
            }
            try options.output.emit(status) { "✓ Onboarding complete: charges and payouts are enabled." }
        }

        static func openBrowser(_ url: URL) {
            guard ProcessInfo.processInfo.environment["DISPLAY"] != nil || ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"] != nil else { return }
            for opener in ["/usr/bin/xdg-open", "/usr/bin/open"] where FileManager.default.isExecutableFile(atPath: opener) {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: opener)
                process.arguments = [url.absoluteString]
                try? process.run()
                return
            }
        }
    }
}

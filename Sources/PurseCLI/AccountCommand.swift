import ArgumentParser
import Foundation
import HTTPTypes
import PurseKit

/// `purse account register | login | whoami | logout`.
struct AccountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account",
        abstract: "Register, sign in and show the signed-in user (the token is kept in the secure store).",
        subcommands: [Register.self, Login.self, WhoAmI.self, Logout.self]
    )

    struct UserInfo: Codable, Sendable {
        var id: String
        var email: String?
        var phone: String?
        var name: String?
    }

    struct AuthAnswer: Codable, Sendable {
        var token: String
        var user: UserInfo
        /// Sign-in only: this client's sign-in device credential, for the next sign-in.
        var device_credential: String?
    }

    struct Credentials: Encodable, Sendable {
        var email: String?
        var phone: String?
        var password: String
        var name: String?
        var device_credential: String?
    }

    struct Identity: ParsableArguments {
        @Option(help: "Email address.") var email: String?
        @Option(help: "Phone number.") var phone: String?
        @Option(help: "Password (prompted for when omitted; env PURSE_PASSWORD).") var password: String?

        func validate() throws {
            if email == nil && phone == nil { throw ValidationError("Give --email or --phone.") }
        }

        func resolvedPassword() throws -> String {
            if let password { return password }
            if let fromEnv = ProcessInfo.processInfo.environment["PURSE_PASSWORD"], !fromEnv.isEmpty { return fromEnv }
            guard let typed = readSecret("Password: "), !typed.isEmpty else { throw CLIError("A password is required.") }
            return typed
        }
    }

    /// Posts credentials to `path`, keeps the session token, returns the user.
    static func authenticate(_ path: String, _ body: Credentials, options: ClientOptions, spinner: String) async throws -> UserInfo {
        let api = try options.apiClient()
        return try await client {
            var body = body
            if path == "/auth/login" { body.device_credential = try await api.session.signInDevice() }
            let sent = body
            let answer: AuthAnswer = try await withSpinner(spinner) {
                try await api.send(.post, path, body: sent, authenticated: false)
            }
            try await api.session.setToken(answer.token)
            if let credential = answer.device_credential { try await api.session.setSignInDevice(credential) }
            return answer.user
        }
    }

    static func describe(_ user: UserInfo) -> String {
        [user.name, user.email, user.phone].compactMap { $0 }.joined(separator: " · ") + " (\(user.id))"
    }

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an account and sign in.")
        @OptionGroup var options: ClientOptions
        @OptionGroup var identity: Identity
        @Option(help: "Display name.") var name: String?

        func run() async throws {
            let body = Credentials(email: identity.email, phone: identity.phone, password: try identity.resolvedPassword(), name: name)
            let user = try await AccountCommand.authenticate("/auth/register", body, options: options, spinner: "Registering")
            try options.output.emit(user) { "Registered and signed in as \(AccountCommand.describe(user))." }
        }
    }

    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Sign in.")
        @OptionGroup var options: ClientOptions
        @OptionGroup var identity: Identity

        func run() async throws {
            let body = Credentials(email: identity.email, phone: identity.phone, password: try identity.resolvedPassword())
            let user = try await AccountCommand.authenticate("/auth/login", body, options: options, spinner: "Signing in")
            try options.output.emit(user) { "Signed in as \(AccountCommand.describe(user))." }
        }
    }

    struct WhoAmI: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "whoami", abstract: "Show the signed-in user.")
        @OptionGroup var options: ClientOptions

        struct Me: Codable, Sendable { var user: UserInfo }

        func run() async throws {
            let api = try options.apiClient()
            let me: Me = try await client { try await api.send(.get, "/auth/me") }
            try options.output.emit(me.user) { AccountCommand.describe(me.user) }
        }
    }

    struct Logout: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Forget the session token.")
        @OptionGroup var options: ClientOptions

        func run() async throws {
            try await options.apiClient().session.setToken(nil)
            if !options.json { print("Signed out.") }
        }
    }
}

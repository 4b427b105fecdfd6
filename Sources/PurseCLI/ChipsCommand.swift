import ArgumentParser
import ChipsService
import Foundation
import MyCHIPs
import PurseFormats
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import PurseServer

/// `purse chips …`: the MyCHIPs wallet's first steps as the app takes them — connect with a
/// ticket, log in again by key, read the profile, choose a language — and the provider's ticket.
struct ChipsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chips",
        abstract: "MyCHIPs: connection tickets, connect and log in by key, profile and language, tallies, payments and requests, the balance sheet.",
        subcommands: [Ticket.self, Connect.self, Whoami.self, Lang.self, Status.self, Link.self, Key.self, Tally.self, Pay.self, Request.self,
                      Invoice.self, Scan.self, Answer.self, Receive.self, Watch.self, Chits.self, Balance.self, History.self]
    )

    /// Who the CLI is, as an app install: each profile keeps its own connection key.
    struct ProfileOptions: ParsableArguments {
        @Option(help: "Which install this is: each profile has its own connection key.") var profile: String = "default"
        @Option(help: "Request timeout in seconds.") var timeout: Int = 15
        @Flag(help: "Print JSON.") var json = false
        @Option(help: "Talk to this HOST:PORT instead of the provider named in the ticket (one replica behind a load balancer).") var via: String?
        @Option(help: "Trust this CA (a PEM file) for the provider's TLS too, beside the system's: a development provider's own CA.") var caFile: String?

        var directory: URL {
            get throws {
                guard profile.range(of: #"^[A-Za-z0-9_-]{1,40}$"#, options: .regularExpression) != nil else {
                    throw ValidationError("--profile must be letters, digits, _ or -")
                }
                return EncryptedFileSecureStore.defaultDirectory().appendingPathComponent("chips").appendingPathComponent(profile)
            }
        }

        func session() async throws -> ChipsSession {
            let directory = try directory
            var options = ChipsConnection.Options()
            options.requestTimeout = .seconds(timeout)
            options.userAgent = "purse-cli/\(PurseVersion.current) (MyCHIPs)"
            var keychain = ChipsKeychain(store: EncryptedFileSecureStore(directory: directory))
            if let via {
                // The same key and user, another address: a copy of the profile in memory.
                let parts = via.split(separator: ":")
                guard parts.count == 2, let port = Int(parts[1]), (1...65535).contains(port) else { throw ValidationError("--via is HOST:PORT") }
                guard let key = try await keychain.key(), var account = try await keychain.account() else { throw CLIError("this profile has not connected yet") }
                account.host = String(parts[0])
                account.port = port
                account.httpPort = nil
                let copy = ChipsKeychain(store: InMemorySecureStore())
                try await copy.importKey(jwk: key.privateJWK, account: account)
                keychain = copy
            }
            let transport: NIOWebSocketTransport
            let http: any HTTPTransport
            if let caFile {
                do {
                    transport = try NIOWebSocketTransport(trustRootsFile: caFile)
                    http = TrustingTransport(tls: try PinnedTLSTransport(extraTrustRootFile: caFile) { _ in true })
                } catch {
                    throw ValidationError("--ca-file \(caFile) holds no PEM certificate: \(error)")
                }
            } else {
                (transport, http) = (NIOWebSocketTransport(), AsyncHTTPClientTransport())
            }
            let connection = ChipsConnection(keychain: keychain, transport: transport, http: http, options: options)
            return ChipsSession(connection: connection, preferences: FilePreferences(file: directory.appendingPathComponent("preferences.json")))
        }
    }

    static func run<T: Sendable>(_ work: () async throws -> T) async throws -> T {
        do {
            return try await work()
        } catch let error as ChipsError {
            throw CLIError(error.description)
        }
    }

    static func printUser(_ user: ChipsUser, json: Bool) {
        if json {
            print(JavaScriptJSON.stringify(user.row))
            return
        }
        print("\(user.displayName) (\(user.username), \(user.id))")
        print("CHIP address: \(user.address.text)" + (user.address.host.map { " at \($0):\(user.address.port ?? 0)" } ?? ""))
        if let born = user.birthDate { print("born: \(born)") }
        if let country = user.country { print("country: \(country)") }
        for item in user.connect { print("\(item["media"] ?? "?"): \(item["address"] ?? "")") }
        print("language: \(user.language)")
    }

    struct Ticket: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make a connection ticket for a user (made if new), as JSON, a link and a QR code.",
                                                        discussion: """
                                                            Reads the database as `purse serve` does (DATABASE_URL, PURSE_DATA_DIR). The ticket names \
                                                            CHIPS_HOST and CHIPS_PORT when set, else where the server on this database serves.
                                                            """)
        @Option(help: "The username.") var user: String
        @Option(help: "The user's name, for a new user (default: the username).") var name: String?
        @Flag(help: "Print only the ticket's JSON.") var json = false

        func run() async throws {
            var configuration = try ChipsConfiguration.from(try PurseConfiguration.fromEnvironment())
            let variables = ProcessInfo.processInfo.environment
            let explicit = (host: variables["CHIPS_HOST"].map { !$0.isEmpty } ?? false, port: variables["CHIPS_PORT"].map { !$0.isEmpty } ?? false)
            let ticket = try await CutieCommand.withServer { environment in
                if let serving = try await ChipsModule.servingAddress(environment: environment) {
                    if !explicit.host { configuration.publicHost = serving.host }
                    if !explicit.port { configuration.publicPort = serving.port }
                }
                return try await ChipsModule.makeTicket(username: user, name: name, configuration: configuration, environment: environment)
            }
            if json {
                print(ticket.json)
                return
            }
            print(ticket.json)
            print(ticket.link)
            if let code = try? QRCode.encode(text: ticket.link, errorCorrection: .low) { print(code.terminal()) }
        }
    }

    struct Connect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Connect with a ticket (its JSON or link): make a connection key, log in, show the profile.")
        @OptionGroup var options: ProfileOptions
        @Argument(help: "The ticket's JSON, its https://mychips.org/ticket?… link, or @FILE.") var ticket: String
        @Option(help: "The username, when the ticket has none.") var username: String?
        @Option(help: "The provider's HTTP port for /clientinfo, when not the websocket's.") var httpPort: Int?
        @Flag(help: "Plain ws/http even to a host that is not this machine.") var insecure = false
        @Flag(help: "TLS (wss/https) even to this machine: a development provider behind its own CA (with --ca-file).") var secure = false

        func run() async throws {
            var text = ticket
            if text.hasPrefix("@") {
                guard let contents = try? String(contentsOfFile: String(text.dropFirst()), encoding: .utf8) else { throw ValidationError("cannot read \(text.dropFirst())") }
                text = contents
            }
            let session = try await options.session()
            try await ChipsCommand.run {
                let parsed = try ChipsTicket.parse(text)
                guard !(insecure && secure) else { throw ChipsError.invalidTicket("give --secure or --insecure, not both") }
                try await session.connection.connect(ticket: parsed, username: username, httpPort: httpPort, secure: insecure ? false : secure ? true : nil)
                let user = try await session.me()
                await session.connection.disconnect()
                if !options.json { print("connected; the connection key is stored for later logins") }
                ChipsCommand.printUser(user, json: options.json)
            }
        }
    }

    struct Whoami: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Log in with the stored key and show the profile and certificate.")
        @OptionGroup var options: ProfileOptions

        func run() async throws {
            let session = try await options.session()
            try await ChipsCommand.run {
                try await session.connection.connect()
                let user = try await session.me()
                await session.connection.disconnect()
                ChipsCommand.printUser(user, json: options.json)
                if !options.json { print("certificate: \(JavaScriptJSON.stringify(user.certificate))") }
            }
        }
    }

    struct Lang: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the provider's languages, or choose one and show the labels in it.")
        @OptionGroup var options: ProfileOptions
        @Argument(help: "A language code (eng, spa …) to choose.") var code: String?

        func run() async throws {
            let session = try await options.session()
            try await ChipsCommand.run {
                try await session.connection.connect()
                defer { Task { await session.connection.disconnect() } }
                guard let code else {
                    let languages = try await session.languages()
                    let chosen = await session.language
                    for language in languages {
                        print("\(language.code == chosen ? "*" : " ") \(language.code)  \(language.name) (\(language.englishName)), \(language.tables) views")
                    }
                    await session.connection.disconnect()
                    return
                }
                let offered = try await session.languages()
                guard offered.contains(where: { $0.code == code }) else {
                    await session.connection.disconnect()
                    throw CLIError("the provider has no language \(code): it offers \(offered.map(\.code).joined(separator: ", "))")
                }
                let texts = try await session.setLanguage(code)
                await session.connection.disconnect()
                guard let users = texts[ChipsSession.usersView] else { return }
                if options.json {
                    print(JavaScriptJSON.stringify(.object(users.columns.mapValues { .string($0.title) })))
                    return
                }
                print("\(users.title) — \(users.help)")
                for column in users.columns.keys.sorted() { print("  \(column): \(users.label(column))") }
            }
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the stored provider and whether a login by key works now.")
        @OptionGroup var options: ProfileOptions

        func run() async throws {
            let directory = try options.directory
            let keychain = ChipsKeychain(store: EncryptedFileSecureStore(directory: directory))
            guard let account = try await keychain.account(), try await keychain.key() != nil else {
                print("not connected: no connection key stored (run `purse chips connect TICKET`)")
                return
            }
            print("provider: \(account.secure ? "wss" : "ws")://\(account.host):\(account.port) as \(account.user)")
            let session = try await options.session()
            do {
                try await session.connection.connect()
                print("state: connected")
                await session.connection.disconnect()
            } catch let error as ChipsError {
                let state = error.kind == .loginRefused || error.kind == .notLoggedIn ? "login refused" : "not connected"
                throw CLIError("state: \(state) — \(error.message)")
            }
        }
    }

    struct Link: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Links and QR codes.", subcommands: [Parse.self])

        struct Parse: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Name a link's kind (ticket, invite, pay, signkey, chit) and its fields.")
            @Argument(help: "The link, or a ticket's or signkey's JSON.") var link: String
            @Flag(help: "Print JSON.") var json = false

            func run() async throws {
                let parsed = try await ChipsCommand.run { try ChipsLink.parse(link) }
                var fields: [String: JSONValue] = ["kind": .string(parsed.kind)]
                switch parsed {
                case .ticket(let ticket):
                    fields["host"] = .string(ticket.host)
                    fields["port"] = .int(Int64(ticket.port))
                    fields["user"] = ticket.user.map(JSONValue.string) ?? .null
                    fields["token"] = .string(ticket.token)
                    fields["expires"] = ticket.expires.map { .string(JavaScriptDate.string($0)) } ?? .null
                case .invite(let invite):
                    fields["token"] = .string(invite.token)
                    fields["chad"] = invite.chad.json
                    fields["expires"] = invite.expires.map { .string(JavaScriptDate.string($0)) } ?? .null
                case .pay(let request):
                    fields["chad"] = .string(request.chad.text)
                    fields["units"] = request.units.map(JSONValue.int) ?? .null
                    fields["ref"] = request.reference.map(JSONValue.string) ?? .null
                    fields["memo"] = request.memo.map(JSONValue.string) ?? .null
                case .signkey(let backup):
                    fields["salt"] = .string(Hex.encode(backup.salt))
                    fields["iv"] = .string(Hex.encode(backup.iv))
                    fields["sealed_bytes"] = .int(Int64(backup.sealed.count))
                case .chit(let chit):
                    fields["chit"] = chit.json
                    fields["units"] = chit.core.units.map(JSONValue.int) ?? .null
                case .connectKey(let backup):
                    fields["salt"] = .string(Hex.encode(backup.salt))
                    fields["iv"] = .string(Hex.encode(backup.iv))
                    fields["sealed_bytes"] = .int(Int64(backup.sealed.count))
                }
                if json {
                    print(JavaScriptJSON.stringify(.object(fields)))
                    return
                }
                for key in fields.keys.sorted() { print("\(key): \(JavaScriptJSON.stringify(fields[key]!).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))") }
            }
        }
    }

    struct Key: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The signing key: export it as a passphrase-protected signkey link, or import one.",
                                                        subcommands: [Export.self, Import.self, Replace.self])

        static let noBiometrics = SoftwareBiometricGate(available: false) { _ in .unavailable }

        static func passphrase(_ prompt: String) throws -> String {
            guard let passphrase = readSecret(prompt), !passphrase.isEmpty else { throw CLIError("a passphrase is needed") }
            return passphrase
        }

        struct Export: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Print the signing key (or, with --connection, the connection key and its provider) as a sealed link and a QR code.",
                discussion: "The passphrase is read from the terminal, or from the first line of stdin. The signing key is made first if the user has none.")
            @OptionGroup var options: ProfileOptions
            @Flag(help: "Export the connection key and provider instead: another device imports it and logs in as this one.") var connection = false

            func run() async throws {
                let keychain = ChipsKeychain(store: EncryptedFileSecureStore(directory: try options.directory))
                if connection {
                    let passphrase = try Key.passphrase("Passphrase for the backup: ")
                    let backup = try await ChipsCommand.run {
                        try await keychain.exportConnection(passphrase: passphrase, unlockingWith: Key.noBiometrics, reason: "export the connection key")
                    }
                    print(options.json ? backup.json : backup.link)
                    if !options.json, let code = try? QRCode.encode(text: backup.link, errorCorrection: .low) { print(code.terminal()) }
                    return
                }
                let key: SigningKey
                if let held = try await keychain.signingKey(unlockingWith: Key.noBiometrics, reason: "export the signing key") {
                    key = held
                } else {
                    // None here yet: the user's first key (made and published), unless the
                    // certificate publishes one made elsewhere.
                    key = try await ChipsCommand.withWallet(options) { _, key in key }
                }
                let backup = try SigningKeyBackup.seal(key, passphrase: try Key.passphrase("Passphrase for the backup: "))
                if options.json {
                    print(backup.json)
                    return
                }
                print(backup.link)
                if let code = try? QRCode.encode(text: backup.link, errorCorrection: .low) { print(code.terminal()) }
            }
        }

        struct Import: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Open a signkey or connection key link with its passphrase and store the key (--dry-run: only show it).")
            @OptionGroup var options: ProfileOptions
            @Argument(help: "The signkey link or its JSON.") var link: String
            @Flag(help: "Decrypt and show the key's type without storing it.") var dryRun = false

            func run() async throws {
                let parsed = try await ChipsCommand.run { try ChipsLink.parse(link) }
                if case .connectKey(let backup) = parsed {
                    let passphrase = try Key.passphrase("Passphrase: ")
                    let (_, account) = try await ChipsCommand.run { try backup.open(passphrase: passphrase) }
                    print("connection key for \(account.user) at \(account.host):\(account.port)")
                    guard !dryRun else {
                        print("not stored (--dry-run)")
                        return
                    }
                    let keychain = ChipsKeychain(store: EncryptedFileSecureStore(directory: try options.directory))
                    _ = try await ChipsCommand.run { try await keychain.importConnection(backup, passphrase: passphrase) }
                    print("stored: this profile logs in as \(account.user)")
                    return
                }
                guard case .signkey(let backup) = parsed else { throw CLIError("this is a \(parsed.kind) link, not a signkey or connection key") }
                let passphrase = try Key.passphrase("Passphrase: ")
                let key = try await ChipsCommand.run { try backup.open(passphrase: passphrase) }
                print("signing key: EC P-521 (ECDSA, SHA-384)")
                guard !dryRun else {
                    print("not stored (--dry-run)")
                    return
                }
                try await ChipsKeychain(store: EncryptedFileSecureStore(directory: try options.directory)).save(key)
                print("stored")
            }
        }

        struct Replace: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Publish this profile's signing key (or, with --new, a new one) in place of the key your certificate publishes.",
                discussion: """
                    Partners check your new chits against the key you publish; chits already signed stay as they are. \
                    Asks you to type 'replace' unless --yes is given.
                    """)
            @OptionGroup var options: ProfileOptions
            @Flag(help: "Make a new signing key rather than publishing the one this profile holds.") var new = false
            @Flag(help: "Do not ask for confirmation.") var yes = false

            func run() async throws {
                let keychain = ChipsKeychain(store: EncryptedFileSecureStore(directory: try options.directory))
                let held = try await keychain.signingKey(unlockingWith: Key.noBiometrics, reason: "replace the signing key")
                guard new || held != nil else {
                    throw CLIError("this profile holds no signing key: import its backup (purse chips key import), or give --new to make one")
                }
                if !yes {
                    print("Your certificate will publish \(new ? "a new signing key" : "this profile's signing key"); partners check your new chits against it.")
                    print("Type 'replace' to confirm: ", terminator: "")
                    guard readLine()?.trimmingCharacters(in: .whitespaces) == "replace" else { throw CLIError("not replaced") }
                }
                let key = new ? SigningKey() : held!
                try await ChipsCommand.withSession(options) { session in try await session.replaceSigningKey(with: key, in: keychain) }
                print("replaced: your certificate publishes \(new ? "a new" : "this profile's") signing key")
            }
        }
    }
}

/// HTTPS with an extra trust root (``PinnedTLSTransport`` accepting every chain it verifies);
/// plain HTTP to a loopback development provider as usual.
struct TrustingTransport: HTTPTransport {
    let tls: PinnedTLSTransport
    let plain = AsyncHTTPClientTransport()

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        request.url.scheme?.lowercased() == "https" ? try await tls.send(request) : try await plain.send(request)
    }
}

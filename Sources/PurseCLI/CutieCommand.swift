import ArgumentParser
import CutiE
import CutiEService
import Crypto
import Foundation
import HTTPTypes
import Logging
import PurseDatabase
import PurseFormats
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import PurseServer
import Synchronization

/// `purse cutie …`: the Cuti-E SDK's journeys as an app would walk them, and the operator's tasks.
struct CutieCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cutie",
        abstract: "Cuti-E: in-app feedback — write to support, read the inbox, link devices by QR; create apps and admin accounts.",
        subcommands: [App.self, Admin.self, Attest.self, Feedback.self, Inbox.self, Open.self, Reply.self, MarkRead.self, Push.self, Link.self, Devices.self, Unlink.self,
                      Subscription.self, Usage.self]
    )

    /// Who the CLI is, as an app install: the app id and a profile (each profile is a device).
    struct DeviceOptions: ParsableArguments {
        @OptionGroup var client: ClientOptions
        @Option(help: "The app's id (env CUTIE_APP_ID).") var appId: String = ProcessInfo.processInfo.environment["CUTIE_APP_ID"] ?? "app_sandbox"
        @Option(help: "Which device this is: each profile has its own device id and token.") var profile: String = "default"
        @Flag(help: "Use App Attest: attest this device (software attester, the server's development CA) and send an assertion with every request.")
        var appAttest = false
        @Option(help: "Pin a key: base64 SHA-256 of a SubjectPublicKeyInfo, or gts for Google Trust Services' roots. Repeatable; needs https.")
        var pin: [String] = []
        @Option(help: "An extra trust root (PEM file) for pinned connections.") var caFile: String?

        /// The transport: AsyncHTTPClient, or a pinned TLS connection when --pin is given.
        func transport() throws -> any HTTPTransport {
            guard !pin.isEmpty else { return AsyncHTTPClientTransport() }
            var pins = Set<String>()
            for value in pin {
                if value == "gts" { pins.formUnion(CutiECertificatePinning.googleTrustServices); continue }
                guard let bytes = Data(base64Encoded: value), bytes.count == 32 else { throw ValidationError("--pin must be a base64 SHA-256 (44 characters) or gts") }
                pins.insert(value)
            }
            let pinning = CutiECertificatePinning(pins: pins)
            // As the Cuti-E SDK connects: TLS 1.3 or nothing.
            return try PinnedTLSTransport(extraTrustRootFile: caFile, requireTLS13: true) { pinning.accepts(chain: $0) }
        }

        /// The SDK, configured for this profile.
        func cutie() throws -> CutiE {
            guard profile.range(of: #"^[A-Za-z0-9_-]{1,40}$"#, options: .regularExpression) != nil else {
                throw ValidationError("--profile must be letters, digits, _ or -")
            }
            let directory = EncryptedFileSecureStore.defaultDirectory().appendingPathComponent("cutie").appendingPathComponent(profile)
            let cutie = CutiE()
            cutie.configure(appId: appId, apiURL: try client.serverURL, transport: try transport(),
                            store: EncryptedFileSecureStore(directory: directory), preferences: FilePreferences(file: directory.appendingPathComponent("preferences.json")),
                            useAppAttest: appAttest)
            return cutie
        }
    }

    static func run<T: Sendable>(_ work: () async throws(CutiEError) -> T) async throws -> T {
        do {
            return try await work()
        } catch .networkError(let underlying) {
            // A pinning refusal is not an unreachable server: say which it is.
            if underlying is CertificatePinningError { throw CLIError(CutiEError.networkError(underlying).description) }
            throw CLIError("Cannot reach the server (\(underlying)). Is `purse serve` running?")
        } catch {
            throw CLIError(error.description)
        }
    }

    static func time(_ millis: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(millis) / 1000))
    }

    struct Feedback: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start a conversation with the app's support team.")
        @OptionGroup var options: DeviceOptions
        @Argument(help: "The message.") var message: String
        @Option(help: "bug, feature, question, feedback or other.") var category: String = "feedback"
        @Option(help: "A title.") var title: String?
        @Option(help: "Your name, as support sees it.") var name: String?

        func run() async throws {
            guard let category = ConversationCategory(rawValue: category) else { throw ValidationError("--category must be bug, feature, question, feedback or other") }
            let cutie = try options.cutie()
            cutie.setUserName(name)
            cutie.setAppContext(appVersion: PurseVersion.current, osVersion: ProcessInfo.processInfo.operatingSystemVersionString, deviceModel: "purse CLI")
            let id = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.createConversation(category: category, message: message, title: title) }
            try options.client.output.emit(["conversation_id": id]) { "Conversation \(id) started." }
        }
    }

    struct Inbox: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Your conversations (and your linked devices'), newest first.")
        @OptionGroup var options: DeviceOptions

        struct Listing: Encodable { var conversations: [Conversation]; var total_unread: Int }

        func run() async throws {
            let cutie = try options.cutie()
            let inbox = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.inbox() }
            try options.client.output.emit(Listing(conversations: inbox.conversations, total_unread: inbox.totalUnread)) {
                guard !inbox.conversations.isEmpty else { return "No conversations yet." }
                return inbox.conversations.map { c in
                    let unread = (c.unreadCount ?? 0) > 0 ? " [\(c.unreadCount!) unread]" : ""
                    return "\(c.id)  \(c.status.displayName)  \(c.category?.displayName ?? "")  \(c.title ?? "(no title)")\(unread)"
                }.joined(separator: "\n") + "\n\(inbox.totalUnread) unread."
            }
        }
    }

    struct Open: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "A conversation's messages (support's replies are then read).")
        @OptionGroup var options: DeviceOptions
        @Argument(help: "The conversation id.") var id: String

        func run() async throws {
            let cutie = try options.cutie()
            let conversation = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.getConversation(id: id) }
            if conversation.hasUnread { try await CutieCommand.run { () async throws(CutiEError) in try await cutie.markAllRead(conversationId: id) } }
            try options.client.output.emit(conversation) {
                var lines = ["\(conversation.title ?? "(no title)") — \(conversation.status.displayName)"]
                for message in conversation.messages ?? [] {
                    let who = message.isFromUser ? "You" : (message.senderName ?? "Support")
                    lines.append("[\(CutieCommand.time(message.createdAt))] \(who): \(message.message)")
                }
                return lines.joined(separator: "\n")
            }
        }
    }

    struct Reply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Write in a conversation.")
        @OptionGroup var options: DeviceOptions
        @Argument(help: "The conversation id.") var id: String
        @Argument(help: "The message.") var message: String

        func run() async throws {
            let cutie = try options.cutie()
            let sent = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.sendMessage(message, to: id) }
            try options.client.output.emit(sent) { "Sent \(sent.id)." }
        }
    }

    struct MarkRead: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "mark-read", abstract: "Mark support's replies in a conversation read.")
        @OptionGroup var options: DeviceOptions
        @Argument(help: "The conversation id.") var id: String

        func run() async throws {
            let cutie = try options.cutie()
            try await CutieCommand.run { () async throws(CutiEError) in try await cutie.markAllRead(conversationId: id) }
            let unread = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.getUnreadCount() }
            try options.client.output.emit(["total_unread": unread]) { "\(unread) unread." }
        }
    }

    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register this device's APNs token (hex), so support's replies are pushed to it.")
        @OptionGroup var options: DeviceOptions
        @Argument(help: "The APNs device token, 64 hex characters.") var token: String
        @Option(help: "The app's bundle id.") var bundleId: String?
        @Option(help: "sandbox or production.") var environment: String = "sandbox"

        func run() async throws {
            guard token.count % 2 == 0, let bytes = Hex.decode(token) else { throw ValidationError("The token must be hexadecimal") }
            let cutie = try options.cutie()
            try await CutieCommand.run { () async throws(CutiEError) in
                try await cutie.registerForPushNotifications(deviceToken: Data(bytes), bundleId: bundleId, environment: environment)
            }
            try options.client.output.emit(["registered": token.lowercased()]) { "Pushes go to \(token.lowercased().prefix(12))…" }
        }
    }

    struct Link: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Link devices by QR: one initiates and shows the code, the other confirms it.",
                                                        subcommands: [Initiate.self, Confirm.self, Status.self])

        struct Initiate: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Make a link code and print it as a QR code.")
            @OptionGroup var options: DeviceOptions
            @Option(help: "Also write the QR code as a PNG here.") var qrPng: String?
            @Flag(help: "Wait until the other device confirms (or the code expires).") var wait = false

            struct Initiated: Encodable { var link_token: String; var expires_at: Int64; var expires_in: Int; var has_existing_group: Bool; var status: LinkTokenStatus? }

            func run() async throws {
                let cutie = try options.cutie()
                let token = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.initiateLinkToken() }
                guard let code = cutie.linkQRCode(for: token) else { throw CLIError("The link code does not fit a QR code") }
                if let qrPng { try Data(code.png(scale: 8, border: 4)).write(to: URL(fileURLWithPath: qrPng)) }
                var status: LinkStatus?
                let human = {
                    "\(code.terminal())\nScan this on the other device, or run there:\n  purse cutie link confirm \(token.linkToken)\n"
                        + "It expires in \(token.expiresIn / 60) minutes." + (qrPng.map { "\nQR code written to \($0)." } ?? "")
                }
                if !options.client.json { print(human()) }
                if wait {
                    let poller = Poller(interval: .seconds(1), multiplier: 1, maxAttempts: token.expiresIn + 5)
                    status = try await poller.poll { () async throws -> PollStatus<LinkStatus> in
                        let now = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.checkLinkStatus(token: token.linkToken).status }
                        return now == .pending ? .pending : .done(now)
                    }
                    if !options.client.json { print(status == .confirmed ? "Linked." : "The code expired.") }
                }
                if options.client.json {
                    try options.client.output.emit(Initiated(link_token: token.linkToken, expires_at: token.expiresAt, expires_in: token.expiresIn,
                                                             has_existing_group: token.hasExistingGroup, status: status)) { "" }
                }
            }
        }

        struct Confirm: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Join the inbox of the device that showed the code.")
            @OptionGroup var options: DeviceOptions
            @Argument(help: "The link code (lnk_…), or @FILE as `link initiate --json` wrote it.") var token: String
            @Option(help: "This device's name, as the other devices list it.") var deviceName: String?

            func run() async throws {
                let cutie = try options.cutie()
                let token = try argumentValue(token, key: "link_token")
                let group = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.confirmLink(token: token, deviceName: deviceName).groupId }
                try options.client.output.emit(["success": "true", "group_id": group]) { "Linked: this device now shares the inbox (group \(group))." }
            }
        }

        struct Status: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "pending, confirmed or expired.")
            @OptionGroup var options: DeviceOptions
            @Argument(help: "The link code (lnk_…).") var token: String

            func run() async throws {
                let cutie = try options.cutie()
                let status = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.checkLinkStatus(token: token).status }
                try options.client.output.emit(["status": status.rawValue]) { status.rawValue }
            }
        }
    }

    struct Devices: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The devices sharing this device's inbox.")
        @OptionGroup var options: DeviceOptions

        func run() async throws {
            let cutie = try options.cutie()
            let devices = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.getLinkedDevices().devices }
            try options.client.output.emit(["devices": devices]) {
                devices.map { "\($0.id)  \($0.deviceName)\($0.isCurrent ? "  (this device)" : "")" }.joined(separator: "\n")
            }
        }
    }

    struct Unlink: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Unlink a device: it keeps its own inbox from then on.")
        @OptionGroup var options: DeviceOptions
        @Argument(help: "The device id (device_…).") var id: String

        func run() async throws {
            let cutie = try options.cutie()
            try await CutieCommand.run { () async throws(CutiEError) in try await cutie.unlinkDevice(id) }
            try options.client.output.emit(["unlinked": id]) { "Unlinked \(id)." }
        }
    }

    // MARK: Developer tools

    struct Attest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "App Attest: attest this device, and a verifier for attestation objects.",
                                                        subcommands: [Device.self, Verify.self])

        struct Device: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Attest this device's key (software attester, the server's development CA) and check one assertion.",
                discussion: "After this, commands with --app-attest send an assertion with every request.")
            @OptionGroup var options: DeviceOptions

            struct Asserted: Decodable, Sendable { var success: Bool; var counter: Int64 }

            func run() async throws {
                var options = options
                options.appAttest = true
                let cutie = try options.cutie()
                let attest = cutie.appAttest
                guard attest.isSupported else { throw CLIError("App Attest is not configured") }
                let keyID: String
                do {
                    keyID = try await attest.performAttestation()
                } catch {
                    throw CLIError("App Attest failed: \(error.localizedDescription)")
                }
                _ = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.getConversations() }
                try options.client.output.emit(["key_id": keyID, "device_id": cutie.deviceID ?? ""]) {
                    "Attested: key \(keyID); requests from this profile with --app-attest carry assertions."
                }
            }
        }

        struct Verify: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Verify an App Attest attestation object offline: prints the attested public key, or the check that failed.",
                discussion: """
                    FILE holds the attestation object as raw CBOR or base64. The client data is SHA-256 of the UTF-8 of \
                    `challenge|keyId` (the key id in base64), as Cuti-E's SDK makes it (--client-data sdk), or the challenge's bytes \
                    as they are, as in Apple's published sample (--client-data raw).
                    """)
            @Argument(help: "The attestation object (CBOR or base64).") var file: String
            @Option(help: "Team id and bundle id, such as 0352187391.com.apple.example_app_attest.") var appId: String
            @Option(help: "The server's challenge.") var challenge: String
            @Option(help: "The key id (base64).") var keyId: String
            @Option(help: "Verify as of this time (ISO 8601; default now).") var at: String?
            @Option(help: "production or development (the AAGUID).") var environment: String = "production"
            @Option(help: "sdk or raw: how the client data was made.") var clientData: String = "sdk"
            @Option(help: "Also trust this root (PEM), such as the sandbox's development root.") var root: String?

            func run() async throws {
                guard let bytes = FileManager.default.contents(atPath: file) else { throw CLIError("Cannot read \(file)") }
                let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                let attestation = bytes.first == 0xA3 ? bytes : (Data(base64Encoded: text) ?? Base64URL.decode(text) ?? bytes)
                guard let keyID = Data(base64Encoded: keyId) ?? Base64URL.decode(keyId) else { throw ValidationError("--key-id must be base64") }
                guard let environment = AppAttestVerifier.Environment(rawValue: environment) else { throw ValidationError("--environment must be production or development") }
                let date: Date
                if let at {
                    guard let parsed = ISO8601DateFormatter().date(from: at) else { throw ValidationError("--at must be an ISO 8601 time such as 2024-04-18T12:00:00Z") }
                    date = parsed
                } else {
                    date = Date()
                }
                let clientDataHash: Data
                switch clientData {
                case "sdk": clientDataHash = AppAttestVerifier.sdkClientData(challenge: challenge, keyID: keyId)
                case "raw": clientDataHash = Data(challenge.utf8)
                default: throw ValidationError("--client-data must be sdk or raw")
                }
                let verifier = try Self.verifier(root: root)
                let attested: AppAttestVerifier.Attested
                do {
                    attested = try await verifier.verify(attestation: attestation, appID: appId, clientDataHash: clientDataHash,
                                                         keyID: keyID, environment: environment, at: date)
                } catch {
                    throw CLIError("invalid: \(error.description)")
                }
                print("valid: key \(keyId)\npublic key (X9.63, base64): \(attested.publicKey.x963Representation.base64EncodedString())\nreceipt: \(attested.receipt.count) bytes")
            }

            /// Apple's root, and `root` (PEM) too when given.
            static func verifier(root: String?) throws -> AppAttestVerifier {
                let apple = try AppAttestVerifier.apple()
                guard let root else { return apple }
                guard let pem = try? String(contentsOfFile: root, encoding: .utf8), let extended = try? apple.trusting(pem: pem) else {
                    throw ValidationError("--root must be a PEM certificate")
                }
                return extended
            }
        }
    }

    // MARK: Operator tasks

    /// Opens the server's database as `purse serve` does, runs `work`, and closes it.
    static func withServer<T: Sendable>(_ work: (ServerEnvironment) async throws -> T) async throws -> T {
        do {
            return try await OperatorEnvironment.with(work)
        } catch {
            throw CLIError("\(error)")
        }
    }

    struct App: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Apps (on the server's database).", subcommands: [Create.self])

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Create an app and print its id, for the SDK's configure(appId:).",
                                                            discussion: "Reads the database as `purse serve` does (DATABASE_URL, PURSE_DATA_DIR).")
            @Option(help: "The app's name.") var name: String
            @Option(help: "Its bundle id (the APNs topic).") var bundleId: String
            @Option(help: "An id of your choosing (default: app_…).") var id: String?
            @Option(help: "sandbox or production: where its pushes go.") var apnsEnvironment: String = "production"
            @Option(help: "The Apple team id (App Attest's app id is team id and bundle id).") var teamId: String?
            @Flag(help: "Accept only devices attested with App Attest.") var requireAppAttest = false
            @Flag(help: "Accept only signed requests (the Purse SDK signs; the Cuti-E SDK sends its device token alone).") var requireSignedRequests = false
            @Flag(help: "Print JSON.") var json = false

            func run() async throws {
                let id = try await CutieCommand.withServer { environment in
                    try await CutiEModule.createApp(id: self.id, name: name, bundleID: bundleId, apnsEnvironment: apnsEnvironment, teamID: teamId,
                                                    requireAppAttest: requireAppAttest, requireSignedRequests: requireSignedRequests, environment: environment)
                }
                try Output(json: json).emit(["app_id": id]) { "App \(id) created." }
                if requireSignedRequests { FileHandle.standardError.write(Data(("Warning: " + CutiEModule.signedRequestsWarning + "\n").utf8)) }
            }
        }
    }

    struct Admin: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Support staff accounts, and answering as one.", subcommands: [Create.self, Reply.self])

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create an admin account for the dashboard (/cutie/admin).",
                discussion: "The password is read from CUTIE_ADMIN_PASSWORD or stdin. Reads the database as `purse serve` does (DATABASE_URL, PURSE_DATA_DIR).")
            @Option(help: "The e-mail to sign in with.") var email: String
            @Option(help: "The name users see on replies.") var name: String
            @Option(help: "owner, agent or viewer.") var role: String = "agent"
            @Flag(help: "Print JSON.") var json = false

            func run() async throws {
                let password = ProcessInfo.processInfo.environment["CUTIE_ADMIN_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 } ?? readLine(strippingNewline: true) ?? ""
                let admin = try await CutieCommand.withServer { environment in
                    try await CutiEModule.createAdmin(email: email, name: name, role: role, password: password, environment: environment)
                }
                try Output(json: json).emit(["admin_id": admin.id, "email": admin.email]) { "Admin \(admin.email) (\(admin.id)) created." }
            }
        }

        struct Reply: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Answer a conversation as support staff (the answer is pushed to the user's devices).",
                discussion: "Signs in to the admin API with --email and CUTIE_ADMIN_PASSWORD (or stdin).")
            @OptionGroup var client: ClientOptions
            @Option(help: "The admin's e-mail.") var email: String
            @Argument(help: "The conversation id, or @FILE as `cutie feedback --json` wrote it.") var conversation: String
            @Argument(help: "The answer.") var message: String

            struct Login: Encodable { var email: String; var password: String }
            struct SignedIn: Decodable { var csrf_token: String }
            struct ReplyBody: Encodable { var message: String }

            func run() async throws {
                let password = ProcessInfo.processInfo.environment["CUTIE_ADMIN_PASSWORD"].flatMap { $0.isEmpty ? nil : $0 } ?? readLine(strippingNewline: true) ?? ""
                let api = try client.apiClient()
                let id = try argumentValue(conversation, key: "conversation_id")
                do {
                    let login = try await api.sendRaw(.post, "/v1/admin/login", body: Login(email: email, password: password), authenticated: false)
                    let csrf = try JSONDecoder().decode(SignedIn.self, from: login.body).csrf_token
                    guard let cookie = login.headerFields[.setCookie]?.split(separator: ";").first.map(String.init) else { throw CLIError("The server set no session cookie") }
                    let sent = try await api.sendRaw(.post, "/v1/admin/conversations/\(id)/messages", body: ReplyBody(message: message),
                                                     headerFields: [.cookie: cookie, .csrfToken: csrf], authenticated: false)
                    if client.json { print(String(decoding: sent.body, as: UTF8.self)) } else { print("Answered \(id).") }
                } catch let error as PurseError {
                    throw CLIError(error.kind == .offline ? "Cannot reach the server (\(error.message)). Is `purse serve` running?" : error.message)
                }
            }
        }
    }
}

/// Preferences in a JSON file: the CLI's stand-in for `UserDefaults`, one file per profile.
final class FilePreferences: Preferences {
    let file: URL
    private let lock = Mutex(())

    init(file: URL) { self.file = file }

    private func load() -> [String: String] {
        (try? Data(contentsOf: file)).flatMap { try? JSONDecoder().decode([String: String].self, from: $0) } ?? [:]
    }

    func string(forKey key: String) -> String? { lock.withLock { _ in load()[key] } }

    func set(_ value: String?, forKey key: String) {
        lock.withLock { _ in
            var values = load()
            values[key] = value
            try? FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try? JSONEncoder().encode(values).write(to: file, options: .atomic)
        }
    }
}

extension CutieCommand {
    struct Subscription: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The app's Cuti-E subscription.", subcommands: [Grant.self])

        struct Grant: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Buy a tier through the sandbox's StoreKit (its development signer) and have the backend verify it.",
                discussion: "The purchase is signed like an App Store transaction, sent by the SDK's CutiESubscriptionManager and verified by the server as Apple's are.")
            @OptionGroup var options: DeviceOptions
            @Option(help: "starter, pro or business.") var tier: String
            @Flag(help: "The yearly product instead of the monthly one.") var yearly = false
            @Option(help: "The app's bundle id (default: the sandbox app's).") var bundleId: String = "com.purse.cutie.sandbox"

            func run() async throws {
                guard ["starter", "pro", "business"].contains(tier) else { throw ValidationError("--tier must be starter, pro or business") }
                let cutie = try options.cutie()
                let store = SandboxSubscriptionStore(baseURL: try options.client.serverURL, transport: try options.transport(), bundleID: bundleId)
                let product = "com.cutie.\(tier).\(yearly ? "yearly" : "monthly")"
                let json = options.client.json
                let outcome: (String, String?, Int64?) = await Task { @MainActor in
                    let manager = CutiESubscriptionManager(cutie: cutie, store: store)
                    await manager.loadProducts()
                    if let item = manager.products.first(where: { $0.id == product }) { await manager.purchase(item) }
                    return (manager.currentTier.rawValue, manager.errorMessage, manager.feedbackLimit)
                }.value
                if let error = outcome.1 { throw CLIError(error) }
                try Output(json: json).emit(["tier": outcome.0, "product_id": product, "limit": outcome.2.map(String.init) ?? "unlimited"]) {
                    "Subscribed: \(outcome.0) (\(product)); feedback a month: \(outcome.2.map(String.init) ?? "unlimited")."
                }
            }
        }
    }

    struct Usage: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The app's tier and this month's feedback against its limit.")
        @OptionGroup var options: DeviceOptions

        func run() async throws {
            let cutie = try options.cutie()
            let usage = try await CutieCommand.run { () async throws(CutiEError) in try await cutie.getUsage() }
            try Output(json: options.client.json).emit(["tier": usage.tier.rawValue, "status": usage.status.rawValue, "period": usage.period,
                                                        "feedback_received": String(usage.feedback_received), "limit": usage.limit.map(String.init) ?? "unlimited"]) {
                "\(usage.tier.rawValue) (\(usage.status.rawValue)), \(usage.period): \(usage.feedback_received) of \(usage.limit.map(String.init) ?? "unlimited") conversations."
            }
        }
    }
}

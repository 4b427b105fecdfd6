import ChipsProtocol
import Foundation
import HTTPTypes
import NIOCore
import Hummingbird
import Logging
import PurseAPNs
import PurseDatabase
import PurseHTTP
import PurseFormats
import PurseServer
import SQLKit
import ServiceLifecycle
import Synchronization

/// MyCHIPs: a provider speaking the Wyseman websocket API as the real MyCHIPs server does — the
/// upgrade on `/` with the login in its query (ticket or signature), `GET /clientinfo` for the
/// text a signature login signs, the views `mychips.users_v_me` and `base.language_v` with their
/// language data and metadata, and notices to each user's channel.
public struct ChipsModule: PurseModule {
    /// Where the APNs sandbox is mounted, and the path the in-process push client uses.
    static let apnsSandboxPath = "sandbox/chips/apns"
    public let id = "chips"
    public let title = "MyCHIPs"
    public let summary = "A mutual-credit provider over the Wyseman websocket API: connection tickets, login by connection key, the user's certificate, and language data for every view."
    let configuration: ChipsConfiguration
    let apnsTransport: (any HTTPTransport)?
    let pushClient = ChipsPushClient()

    /// `apnsTransport` replaces the HTTP/2 client to APNs (tests).
    public init(configuration: ChipsConfiguration, apnsTransport: (any HTTPTransport)? = nil) {
        self.configuration = configuration
        self.apnsTransport = apnsTransport
    }

    /// What the provider's APNs sandbox received.
    static let apnsSandboxTables = APNsSandbox.Tables(prefix: "chips_apns_sandbox")

    public var links: [ModuleLink] {
        var links = [ModuleLink("Client info for a signature login (JSON)", "/clientinfo")]
        if configuration.apnsSandbox != nil { links.append(ModuleLink("APNs sandbox: pushes received (JSON)", "/\(Self.apnsSandboxPath)/deliveries")) }
        return links
    }

    public var migrations: [Migration] { ChipsMigrations.all }

    /// The websocket's own port, one above `/clientinfo` as real MyCHIPs clients expect.
    public var additionalPorts: [Int] { configuration.webSocketPort.map { [$0] } ?? [] }

    public var openAPI: OpenAPIFragment { ChipsOpenAPI.fragment(sandbox: configuration.apnsSandbox != nil) }

    public func reshape(_ refusal: APIError, path: String) -> APIError {
        APNsSandbox.reshape(refusal, path: path, mountPath: Self.apnsSandboxPath)
    }

    public func mount(on router: Router<PurseRequestContext>, environment: ServerEnvironment) async throws -> [any Service] {
        try await LanguageCatalog.install(into: environment.database)
        try await ContractCatalog.install(into: environment.database)
        let notifier = ChipsNotifier(database: environment.database, logger: environment.logger)
        let tickets = ChipsTickets(database: environment.database, configuration: configuration, now: environment.now)
        let dispatcher = WysemanDispatcher(views: Self.makeViews(), logger: environment.logger)
        var endpoint = ChipsEndpoint(database: environment.database, configuration: configuration, tickets: tickets, notifier: notifier,
                                     dispatcher: dispatcher, now: environment.now, logger: environment.logger)
        endpoint.invoiceRequests = SharedRateLimiter(name: "chips.invoice", perSecond: 1.0 / 60, burst: 10, database: environment.database)
        if let apns = configuration.apns {
            var sandbox: APNsSandbox?
            if let credentials = configuration.apnsSandbox {
                let topic = configuration.pushTopic
                let mounted = APNsSandbox(environment: environment, credentials: credentials, tables: Self.apnsSandboxTables) { asked, _ in asked == topic }
                mounted.mount(on: router, at: Self.apnsSandboxPath)
                sandbox = mounted
            }
            let client: APNsClient
            switch apns.target {
            case .inProcess:
                guard let sandbox else { throw ConfigurationError("MyCHIPs needs APNS_URL or APNS_KEY_FILE when its APNs sandbox is off") }
                client = APNsClient(baseURL: APNsSandbox.inProcessBaseURL(at: Self.apnsSandboxPath), transport: apnsTransport ?? sandbox.inProcessTransport(at: Self.apnsSandboxPath),
                                    credentials: apns.credentials, now: environment.now)
            case .url(let url):
                client = APNsClient(baseURL: url, transport: try apnsTransport ?? APNsTransports.http2(caFile: apns.caFile), credentials: apns.credentials, now: environment.now)
            }
            pushClient.client.withLock { $0 = client }
            endpoint.pushes = ChipsPushes(environment: environment, configuration: configuration)
        }
        environment.webSockets.register(endpoint, at: "/")

        let now = environment.now
        router.get("clientinfo") { request, context -> Response in
            // `{ip, cookie, userAgent, date}`: the login text's members, absent headers left out.
            let info = ChipsTickets.loginMessage(ip: context.remoteAddress?.ipAddress, cookie: request.headers[.cookie],
                                                 userAgent: request.headers[.userAgent], date: JavaScriptDate.string(now()))
            var response = Response.jsonData(Data(info.utf8))
            response.headers[.cacheControl] = "no-store"
            return response
        }
        // The visual balance sheet of a logged-in user: the same signature login as the websocket
        // (`?user&sign&date` over this request's `{ip, cookie, userAgent, date}`), one use each.
        // Missing or stale credentials are a 401, a signature that does not verify a 403.
        router.get("chips/balance.svg") { request, context -> Response in
            let query = request.uri.queryParameters
            guard let user = query["user"].map(String.init), let sign = query["sign"].map(String.init), let date = query["date"].map(String.init),
                  !user.isEmpty, !sign.isEmpty, !date.isEmpty else {
                return Self.refusal(.unauthorized, "No login credentials")
            }
            let message = ChipsTickets.loginMessage(ip: context.remoteAddress?.ipAddress, cookie: request.headers[.cookie],
                                                    userAgent: request.headers[.userAgent], date: date)
            switch try await tickets.signatureLogin(username: user, sign: sign, date: date, message: message) {
            // Credentials that are out of date: on this plain HTTP resource, a 401.
            case .staleDate: return Self.refusal(.unauthorized, "Invalid Date Stamp")
            case .invalid: return Self.refusal(.forbidden, "Invalid Login")
            case .valid(let record):
                let tallies = try await environment.database.read { db in try await TallyRecord.all(of: record.userEnt, in: db) }
                let sheet = TallyRecord.balanceSheet(tallies)
                let title = query["title"].map(String.init) ?? "Balance sheet"
                var response = Response(status: .ok, headers: [.contentType: "image/svg+xml; charset=utf-8", .cacheControl: "no-store"],
                                        body: .init(byteBuffer: ByteBuffer(string: BalanceSheetChart(sheet).svg(title: title))))
                response.headers[.contentSecurityPolicy] = "default-src 'none'; style-src 'unsafe-inline'"
                return response
            }
        }
        // Reports of named actions (`agree.pdf`, `graph.html`), by the link the action answered.
        let chipsConfiguration = configuration
        router.get("report/:token/:resource") { request, context -> Response in
            try await ChipsReports.serve(token: try context.parameters.require("token"), resource: try context.parameters.require("resource"),
                                         environment: environment, configuration: chipsConfiguration)
        }
        let serving = ServingRecord(database: environment.database, host: configuration.publicHost, port: configuration.publicPort, now: environment.now)
        return [notifier.listener, serving].compactMap { $0 }
    }

    /// Records where clients reach this provider while it serves, so a ticket made beside it
    /// (`purse chips ticket`, another process on the same database) names this server.
    struct ServingRecord: Service {
        let database: Database
        let host: String
        let port: Int
        let now: @Sendable () -> Date

        func run() async throws {
            if (1...65535).contains(port) {
                let millis = now().epochMillis
                try? await database.transaction { db in
                    try await db.raw("""
                        INSERT INTO chips_serving (id, host, port, updated_at) VALUES (1, \(bind: host), \(bind: port), \(bind: millis))
                        ON CONFLICT (id) DO UPDATE SET host = excluded.host, port = excluded.port, updated_at = excluded.updated_at
                        """).run()
                }
            }
            try? await gracefulShutdown()
        }
    }

    /// Where the serving provider's clients connect, as it last recorded it; nil when none has served.
    public static func servingAddress(environment: ServerEnvironment) async throws -> (host: String, port: Int)? {
        try await environment.database.read { db in
            guard let row = try await db.raw("SELECT host, port FROM chips_serving WHERE id = 1").first() else { return nil }
            return (try row.decode(column: "host", as: String.self), try row.decode(column: "port", as: Int.self))
        }
    }

    public func jobHandlers(environment: ServerEnvironment) -> [JobHandler] {
        let pushClient = pushClient
        let configuration = configuration
        return [
            JobHandler(kind: ChipsPushes.jobKind, backoff: JobBackoff(base: 2, maximum: 600)) { job in
                guard let client = pushClient.client.withLock({ $0 }) else { throw ConfigurationError("MyCHIPs pushes are not configured") }
                try await ChipsPushes(environment: environment, configuration: configuration).run(job, client: client)
            },
        ]
    }

    static func refusal(_ status: HTTPResponse.Status, _ message: String) -> Response {
        Response(status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: message)))
    }

    /// The views, made per mount: a view may keep state for its database (rendered rows).
    static func makeViews() -> [any ChipsView] {
        [UsersView(), LanguagesView(), MessagesFunction(), TalliesView(), TicketProcessFunction(), ChitsView(), ContractsView(), TokensView(),
         CurrentEntityFunction(), UserCertFunction(), CountriesView(), ContactView.comm, ContactView.addr, CurrenciesView(), ExchangeView(), FilesView()]
    }

    // MARK: Operator tasks (the CLI)

    /// Makes a connection ticket for `username`, making the user first if there is none
    /// (`purse chips ticket --user NAME`): `{ticket: {…}}` as JSON text, and its link.
    public static func makeTicket(username: String, name: String?, configuration: ChipsConfiguration, environment: ServerEnvironment) async throws -> (json: String, link: String) {
        guard username.range(of: #"^[A-Za-z0-9_.-]{1,64}$"#, options: .regularExpression) != nil else {
            throw ConfigurationError("a username is 1–64 characters of letters, digits, '.', '-' and '_'")
        }
        let tickets = ChipsTickets(database: environment.database, configuration: configuration, now: environment.now)
        let now = environment.now()
        // Two new users made at once on PostgreSQL can pick the same entity id; the one that loses
        // the unique check runs again and picks the next.
        var attempt = 0
        while true {
            attempt += 1
            do {
                let ticket = try await environment.database.transaction { db in
                    _ = try await ChipsUserRecord.ensure(username: username, name: name, cuid: nil, now: now, in: db)
                    return try await tickets.issue(for: username, in: db)
                }
                return (JavaScriptJSON.stringify(ticket.json), ticket.link)
            } catch where attempt < 8 {
                try await Task.sleep(for: .milliseconds(Int.random(in: 5...40)))
            }
        }
    }
}

import Foundation
import Hummingbird
import Logging
import PurseDatabase
import PurseFormats
import PurseServer
import ServiceLifecycle

/// MyCHIPs: a provider speaking the Wyseman websocket API as the real MyCHIPs server does — the
/// upgrade on `/` with the login in its query (ticket or signature), `GET /clientinfo` for the
/// text a signature login signs, the views `mychips.users_v_me` and `base.language_v` with their
/// language data and metadata, and notices to each user's channel.
public struct ChipsModule: PurseModule {
    public let id = "chips"
    public let title = "MyCHIPs"
    public let summary = "A mutual-credit provider over the Wyseman websocket API: connection tickets, login by connection key, the user's certificate, and language data for every view."
    let configuration: ChipsConfiguration

    public init(configuration: ChipsConfiguration) {
        self.configuration = configuration
    }

    public var links: [ModuleLink] {
        [ModuleLink("Client info for a signature login (JSON)", "/clientinfo")]
    }

    public var migrations: [Migration] { ChipsMigrations.all }

    public var openAPI: OpenAPIFragment { ChipsOpenAPI.fragment }

    public func mount(on router: Router<PurseRequestContext>, environment: ServerEnvironment) async throws -> [any Service] {
        try await LanguageCatalog.install(into: environment.database)
        try await ContractCatalog.install(into: environment.database)
        let notifier = ChipsNotifier(database: environment.database, logger: environment.logger)
        let tickets = ChipsTickets(database: environment.database, configuration: configuration, now: environment.now)
        let dispatcher = WysemanDispatcher(views: Self.makeViews(), logger: environment.logger)
        let endpoint = ChipsEndpoint(database: environment.database, configuration: configuration, tickets: tickets, notifier: notifier,
                                     dispatcher: dispatcher, now: environment.now, logger: environment.logger)
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
        return [notifier.listener].compactMap { $0 }
    }

    /// The views, made per mount: a view may keep state for its database (rendered rows).
    static func makeViews() -> [any ChipsView] {
        [UsersView(), LanguagesView(), MessagesFunction(), TalliesView(), TicketProcessFunction(), ChitsView(), ContractsView(), TokensView()]
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
        let ticket = try await environment.database.transaction { db in
            _ = try await ChipsUserRecord.ensure(username: username, name: name, cuid: nil, now: now, in: db)
            return try await tickets.issue(for: username, in: db)
        }
        return (JavaScriptJSON.stringify(ticket.json), ticket.link)
    }
}

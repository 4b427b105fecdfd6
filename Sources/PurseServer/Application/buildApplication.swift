import PurseFormats
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import PurseDatabase
import ServiceLifecycle

/// A built server: the Hummingbird application plus what tests and the CLI need to reach into.
public struct PurseServerApp: Sendable {
    public let application: Application<RouterResponder<PurseRequestContext>>
    public let environment: ServerEnvironment
    public let document: OpenAPIDocument
    /// Every route the router serves, as `METHOD /path`.
    public let routes: [String]
    /// The modules' job worker: a service of the application unless
    /// ``PurseConfiguration/runsJobsInBackground`` is off, when jobs run only when
    /// ``JobWorker/runDue(batches:)`` is called (tests that step an injected clock).
    public let jobWorker: JobWorker
}

/// Builds the server: opens and migrates the database, mounts every module, and wires the
/// middleware, the job worker and graceful shutdown.
/// - Parameters:
///   - configuration: Where to listen and what to connect to.
///   - modules: The services to serve, in the order `GET /` lists them. Accounts are always mounted.
///   - now: The clock; tests inject their own.
/// - Throws: Configuration, database or migration errors; nothing is served then.
public func buildApplication(
    configuration: PurseConfiguration,
    modules: [any PurseModule],
    now: @escaping @Sendable () -> Date = Date.init
) async throws -> PurseServerApp {
    let allModules: [any PurseModule] = [AccountsModule()] + modules
    let environment = try await openEnvironment(configuration: configuration, modules: modules, now: now)
    let (logger, metrics, database) = (environment.logger, environment.metrics, environment.database)
    let document = OpenAPIDocument(
        title: "Purse", version: PurseVersion.current,
        fragments: [CoreRoutes.openAPI] + allModules.map(\.openAPI)
    )

    let router = Router(context: PurseRequestContext.self)
    router.add(middleware: RequestLoggingMiddleware(level: .info))
    router.add(middleware: MetricsMiddleware(metrics: metrics))
    router.add(middleware: ErrorMiddleware())
    router.add(middleware: NULRefusalMiddleware { refusal, path in allModules.reduce(refusal) { $1.reshape($0, path: path) } })
    router.add(middleware: SessionAuthenticator(tokens: environment.tokens, users: KnownUsers(accounts: environment.accounts)))

    CoreRoutes(environment: environment, modules: allModules, document: document).mount(on: router)
    // Graceful shutdown runs in reverse order: the HTTP server (which Hummingbird adds last) finishes
    // its requests, then the job worker and the modules' services stop, and only then does the
    // maintenance service close the database they were using.
    var services: [any Service] = [DatabaseMaintenance(database: database, logger: logger)]
    for module in allModules {
        services += try await module.mount(on: router, environment: environment)
    }
    let handlers = allModules.flatMap { $0.jobHandlers(environment: environment) }
    let jobWorker = JobWorker(queue: environment.jobs, handlers: handlers, now: now, logger: logger, metrics: metrics)
    if configuration.runsJobsInBackground { services.append(jobWorker) }
    try router.validate()
    let served = router.routes.map { (method: $0.method, path: $0.path.description) }
    router.add(middleware: MethodNotAllowedMiddleware(routes: served) { refusal, path in
        allModules.reduce(refusal) { $1.reshape($0, path: path) }
    })
    let routes = served.map { "\($0.method.rawValue) \($0.path)" }

    // Ports modules ask for: the same routes on another listener, stopped before the modules'
    // services as the main server is.
    let connections = ConnectionCounter(limits: configuration.httpLimits, exempt: configuration.trustedProxies)
    var extraPorts: [Int] = []
    for port in allModules.flatMap(\.additionalPorts) where port != configuration.port && !extraPorts.contains(port) { extraPorts.append(port) }
    for port in extraPorts {
        services.append(Application(
            router: router,
            server: .http1(webSockets: environment.webSockets, limits: configuration.httpLimits, connections: connections),
            configuration: .init(address: .hostname(configuration.host, port: port), serverName: "purse"),
            logger: logger
        ))
    }

    let application = Application(
        router: router,
        server: .http1(webSockets: environment.webSockets, limits: configuration.httpLimits, connections: connections),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "purse"),
        services: services,
        logger: logger
    )
    return PurseServerApp(application: application, environment: environment, document: document, routes: routes, jobWorker: jobWorker)
}

/// Runs the database's housekeeping while the server runs (SQLite: WAL checkpoints off the
/// request path), then closes the database once the server has stopped. It must be the first
/// service of the group, so that graceful shutdown reaches it after every service that uses the
/// database has returned.
///
/// While writes are committing a pass runs every `busyInterval`, otherwise every `idleInterval`.
/// Short, frequent checkpoints keep writes flowing: while a pass copies the WAL into the database
/// file, commits slow down, and how long they do grows with what the pass has to copy. Passes
/// every 200 ms under a steady write load held every connection for 15–25 ms about four times a
/// second (the p99 of write requests was 5–6 × their p50); every 20 ms the p99 is 2–2.5 × the p50. The wait
/// starts when a pass ends, so a disk that is slow to sync spaces the passes out by itself.
struct DatabaseMaintenance: Service {
    let database: Database
    let logger: Logger
    var busyInterval: Duration = .milliseconds(20)
    var idleInterval: Duration = .milliseconds(200)

    func run() async throws {
        try await PeriodicService("database maintenance", every: idleInterval, logger: logger, adaptive: { try await nextPass() }).run()
        await database.shutdown()
    }

    /// One pass, then how long to wait before the next.
    func nextPass() async throws -> Duration {
        try await database.maintain() == .busy ? busyInterval : idleInterval
    }
}

/// Opens the database as `purse serve` does — the data directory secured, the secrets read, every
/// module's migrations run — and returns the environment, without mounting a route or starting a
/// service: for operator commands (`purse chippi keys create`, `purse cutie admin create` …),
/// which must not change what a running server set up (its sandbox merchant, its files).
public func openEnvironment(
    configuration: PurseConfiguration,
    modules: [any PurseModule],
    now: @escaping @Sendable () -> Date = Date.init
) async throws -> ServerEnvironment {
    var logger = Logger(label: "purse")
    logger.logLevel = configuration.logLevel

    let allModules: [any PurseModule] = [AccountsModule()] + modules
    var ids = Set<String>()
    for module in allModules where !ids.insert(module.id).inserted {
        throw ConfigurationError("module id \(module.id) is used twice")
    }

    let secret: [UInt8]
    if let configured = configuration.jwtSecret {
        guard configured.utf8.count >= 32 else { throw ConfigurationError("PURSE_JWT_SECRET must be at least 32 bytes") }
        secret = Array(configured.utf8)
    } else if configuration.isProduction {
        throw ConfigurationError("PURSE_JWT_SECRET is required when PURSE_ENV=production")
    } else {
        secret = try ServerSecrets(dataDirectory: configuration.dataDirectory).secret(named: "jwt.key")
    }

    let sealer = try SecretSealer(configuration: configuration)
    if configuration.isProduction, SecretSealer.isInsideDataDirectory(configuration) {
        logger.warning("""
            the seal key is inside the data directory: a copy of it opens every sealed secret;             set PURSE_SEAL_KEY or PURSE_SEAL_KEY_FILE to a key kept outside it (docs/deploy.md)
            """)
    }
    try DataDirectory.secure(configuration)

    let metrics = RequestMetrics()
    let database = try await Database.open(
        url: configuration.effectiveDatabaseURL,
        options: DatabaseOptions(sqliteTuning: configuration.sqliteTuning, metrics: metrics.factory),
        logger: logger
    )
    do {
        try await Migrator(database: database, logger: logger).run(CoreMigrations.all + allModules.flatMap(\.migrations))
    } catch {
        await database.shutdown()
        throw error
    }

    return ServerEnvironment(
        configuration: configuration, database: database, tokens: await TokenService(secret: secret, now: now),
        metrics: metrics, logger: logger, sealer: sealer, now: now
    )
}

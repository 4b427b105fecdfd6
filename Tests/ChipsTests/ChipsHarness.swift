import ChipsService
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import MyCHIPs
import PurseDatabase
import PurseKit
import PurseHTTP
import PurseHTTPNIO
import PurseServer
import PurseTestSupport
import ServiceLifecycle

/// A MyCHIPs provider on a free loopback port over a test database, that can be stopped and
/// started again on the same port and database (a provider restarting under its clients).
final class ChipsProvider: Sendable {
    let port: Int
    let engine: DatabaseEngine
    let database: TestDatabase
    let dataDirectory: String
    let clock: TestClock
    let configure: @Sendable (inout PurseConfiguration) -> Void
    private let running = Mutex<(app: PurseServerApp, group: ServiceGroup, task: Task<Void, any Error>)?>(nil)

    private let ownsDatabase: Bool

    init(engine: DatabaseEngine = .sqlite, clock: TestClock = TestClock(Date()), configure: @escaping @Sendable (inout PurseConfiguration) -> Void = { _ in }) async throws {
        self.port = try LoopbackPort.freePair()
        self.engine = engine
        self.database = try await TestDatabase.make(engine)
        self.dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-chips-\(UUID().uuidString)").path
        self.clock = clock
        self.configure = configure
        self.ownsDatabase = true
    }

    /// Another replica: its own port, the same database, clock and agent id.
    init(replicaOf other: ChipsProvider) throws {
        self.port = try LoopbackPort.freePair()
        self.engine = other.engine
        self.database = other.database
        self.dataDirectory = other.dataDirectory
        self.clock = other.clock
        self.configure = other.configure
        self.ownsDatabase = false
    }

    var configuration: PurseConfiguration {
        var configuration = PurseConfiguration()
        configuration.port = port
        configuration.databaseURL = database.url
        configuration.dataDirectory = dataDirectory
        configuration.jwtSecret = "test-secret-test-secret-test-secret-0123456789"
        configuration.bcryptCost = 4
        configuration.logLevel = .warning
        configuration.sqliteTuning = TestEngines.sqliteTuning
        configure(&configuration)
        return configuration
    }

    var chipsConfiguration: ChipsConfiguration { get throws { try ChipsConfiguration.from(configuration) } }

    var environment: ServerEnvironment? { running.withLock { $0?.app.environment } }

    /// Starts serving (again) and waits until `/health` answers.
    func start() async throws {
        let configuration = configuration
        let app = try await buildApplication(configuration: configuration, modules: [ChipsModule(configuration: try ChipsConfiguration.from(configuration))],
                                             now: clock.closure)
        let group = ServiceGroup(configuration: .init(services: [app.application], logger: app.application.logger))
        let task = Task { try await group.run() }
        running.withLock { $0 = (app, group, task) }
        let client = LiveHTTPClient(base: URL(string: "http://127.0.0.1:\(port)")!)
        for _ in 0..<200 {
            if (try? await client.execute(uri: "/health", method: .get))?.status == .ok { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        throw ConfigurationError("the provider on port \(port) did not start")
    }

    /// Stops serving: open websockets are cut, the database closed.
    func stop() async {
        guard let current = running.withLock({ state -> (app: PurseServerApp, group: ServiceGroup, task: Task<Void, any Error>)? in
            defer { state = nil }
            return state
        }) else { return }
        await current.group.triggerGracefulShutdown()
        _ = await current.task.result
        await current.app.environment.database.shutdown()
    }

    func dispose() async {
        await stop()
        guard ownsDatabase else { return }
        await database.dispose()
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }

    /// A connection ticket for `user` (made if new).
    func ticket(for user: String, name: String? = nil) async throws -> ChipsTicket {
        guard let environment else { throw ConfigurationError("the provider is not running") }
        let made = try await ChipsModule.makeTicket(username: user, name: name, configuration: try chipsConfiguration, environment: environment)
        return try ChipsTicket.parse(made.json)
    }

    /// A client as an app install: its own key store and preferences.
    func client(store: InMemorySecureStore = InMemorySecureStore(), timeout: Duration = .seconds(15), sleeper: Sleeper = .live,
                transport: any WebSocketTransport = NIOWebSocketTransport()) -> ChipsSession {
        var options = ChipsConnection.Options()
        options.requestTimeout = timeout
        options.reconnect = RetryPolicy(baseDelay: .milliseconds(50), maxDelay: .milliseconds(400))
        let connection = ChipsConnection(keychain: ChipsKeychain(store: store), transport: transport, http: AsyncHTTPClientTransport(),
                                         options: options, sleeper: sleeper, now: clock.closure)
        return ChipsSession(connection: connection, preferences: InMemoryPreferences())
    }

    /// Runs `body` with the provider started, and disposes of it after.
    static func with<T>(engine: DatabaseEngine = .sqlite, configure: @escaping @Sendable (inout PurseConfiguration) -> Void = { _ in },
                        isolation: isolated (any Actor)? = #isolation, _ body: (ChipsProvider) async throws -> T) async throws -> T {
        let provider = try await ChipsProvider(engine: engine, configure: configure)
        do {
            try await provider.start()
            let result = try await body(provider)
            await provider.dispose()
            return result
        } catch {
            await provider.dispose()
            throw error
        }
    }
}

/// Waits for `condition` (polled), up to `seconds` (generous: the whole suite runs at once on two cores).
func eventually(_ seconds: Double = 30, isolation: isolated (any Actor)? = #isolation, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

import Synchronization

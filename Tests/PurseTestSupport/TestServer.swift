import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOFoundationCompat
import PurseDatabase
import PurseServer
import PurseSQLite
import SQLKit
import Synchronization
import Testing

/// A clock tests move by hand.
public final class TestClock: Sendable {
    private let current: Mutex<Date>
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) { current = Mutex(start) }
    public var now: Date { current.withLock { $0 } }
    public func advance(by seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
    public var closure: @Sendable () -> Date { { self.now } }
}

/// The engines a store suite runs on: SQLite always, PostgreSQL when `PURSE_TEST_POSTGRES_URL` is set.
public enum TestEngines {
    public static var all: [DatabaseEngine] {
        ProcessInfo.processInfo.environment["PURSE_TEST_POSTGRES_URL"].map { $0.isEmpty ? [] : [.postgres] }.map { [.sqlite] + $0 } ?? [.sqlite]
    }

    /// The store contract's engines: SQLite with the hooks in force and with its per-database
    /// hooks off (the process-wide ones stay as the process has them), and PostgreSQL when
    /// configured.
    public static var contract: [TestEngine] {
        all.flatMap { engine -> [TestEngine] in
            switch engine {
            case .sqlite:
                [TestEngine(.sqlite, sqliteTuning: sqliteTuning),
                 TestEngine(.sqlite, sqliteTuning: SQLiteTuning(sqliteTuning.hooks.subtracting([.combinedWALWrites, .writerPriority])))]
            case .postgres: [TestEngine(.postgres, sqliteTuning: .none)]
            }
        }
    }

    /// The SQLite hooks the tests run with: `PURSE_SQLITE_TUNING` (CI runs the SQLite suites a
    /// second time with `none`, since the process-wide hooks cannot be taken out of a process
    /// that installed them), else all of them.
    public static var sqliteTuning: SQLiteTuning {
        (try? SQLiteTuning(parsing: ProcessInfo.processInfo.environment["PURSE_SQLITE_TUNING"] ?? "all")) ?? .all
    }
}

/// An engine with the SQLite hooks it opens with.
public struct TestEngine: Sendable, CustomTestStringConvertible {
    public let engine: DatabaseEngine
    public let sqliteTuning: SQLiteTuning

    public init(_ engine: DatabaseEngine, sqliteTuning: SQLiteTuning) {
        self.engine = engine
        self.sqliteTuning = sqliteTuning
    }

    public var testDescription: String {
        engine == .sqlite ? "sqlite (hooks: \(sqliteTuning))" : engine.rawValue
    }

    /// True where the ledger spreads house accounts' balances over slot rows (writers run side
    /// by side), so a posting reports no balance for them.
    public var spreadsHouseBalances: Bool { !SQLDialectDifferences(engine: engine).writesAreSerial }
}

/// A throwaway database: a temporary SQLite file, or a fresh PostgreSQL database on the test server.
public struct TestDatabase: Sendable {
    public let url: String
    let cleanup: @Sendable () async -> Void

    public static func make(_ engine: DatabaseEngine) async throws -> TestDatabase {
        switch engine {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-test-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return TestDatabase(url: directory.appendingPathComponent("purse.sqlite").path) {
                try? FileManager.default.removeItem(at: directory)
            }
        case .postgres:
            guard let admin = ProcessInfo.processInfo.environment["PURSE_TEST_POSTGRES_URL"],
                  var components = URLComponents(string: admin) else {
                throw ConfigurationError("PURSE_TEST_POSTGRES_URL is not set")
            }
            let name = "purse_test_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16))"
            let adminDB = try await Database.open(url: admin, logger: Logger(label: "test"))
            try await adminDB.read { db in try await db.raw("CREATE DATABASE \(unsafeRaw: String(name))").run() }
            await adminDB.shutdown()
            components.path = "/\(name)"
            let url = components.string!
            return TestDatabase(url: url) {
                if let adminDB = try? await Database.open(url: admin, logger: Logger(label: "test")) {
                    try? await adminDB.read { db in try await db.raw("DROP DATABASE IF EXISTS \(unsafeRaw: String(name)) WITH (FORCE)").run() }
                    await adminDB.shutdown()
                }
            }
        }
    }

    public func dispose() async { await cleanup() }
}

/// A server built for a test: fast bcrypt, fixed secret, a throwaway database, a test clock.
public struct TestServer: Sendable {
    public let app: PurseServerApp
    public let clock: TestClock
    let database: TestDatabase

    public var environment: ServerEnvironment { app.environment }

    public static func make(
        engine: DatabaseEngine = .sqlite, modules: [any PurseModule] = [],
        configure: (inout PurseConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        let database = try await TestDatabase.make(engine)
        var configuration = PurseConfiguration()
        configuration.port = 0
        configuration.databaseURL = database.url
        configuration.dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-data-\(UUID().uuidString)").path
        configuration.jwtSecret = "test-secret-test-secret-test-secret-0123456789"
        configuration.bcryptCost = 4
        configuration.logLevel = .warning
        configuration.sqliteTuning = TestEngines.sqliteTuning
        configure(&configuration)
        let clock = TestClock(Date())
        let app = try await buildApplication(configuration: configuration, modules: modules, now: clock.closure)
        return TestServer(app: app, clock: clock, database: database)
    }

    /// A second server on the same database and clock, as a replica behind a load balancer
    /// would be. The caller shuts its database connections down (`environment.database.shutdown()`).
    public func replica(modules: [any PurseModule]) async throws -> PurseServerApp {
        try await buildApplication(configuration: app.environment.configuration, modules: modules, now: clock.closure)
    }

    /// Runs `body` against the router (in-process), then tears everything down.
    public func withRouter<T: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        try await run(.router, body)
    }

    /// Runs `body` against a live server on 127.0.0.1 (a free port), then tears everything down.
    public func withLive<T: Sendable>(_ body: @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        try await run(.live, body)
    }

    private func run<T: Sendable>(_ setup: TestingSetup, _ body: @Sendable (any TestClientProtocol) async throws -> T) async throws -> T {
        do {
            let result = try await app.application.test(setup) { client in try await body(client) }
            await shutdown()
            return result
        } catch {
            await shutdown()
            throw error
        }
    }

    public func shutdown() async {
        await app.environment.database.shutdown()
        await database.dispose()
        try? FileManager.default.removeItem(atPath: app.environment.configuration.dataDirectory)
    }
}

extension TestClientProtocol {
    /// Sends JSON and returns the response.
    @discardableResult
    public func json(
        _ method: HTTPRequest.Method, _ uri: String, _ body: String? = nil, token: String? = nil, headers: HTTPFields = [:]
    ) async throws -> TestResponse {
        try await execute(uri: uri, method: method, headers: JSONRequest.headers(headers, body: body, token: token), body: body.map { ByteBuffer(string: $0) })
    }

    /// Registers a user and returns its session token and id.
    public func register(email: String = JSONRequest.freshEmail(), password: String = "correct horse") async throws -> (token: String, userID: String) {
        let response = try await json(.post, "/auth/register", JSONRequest.registration(email: email, password: password))
        return try JSONRequest.registered(status: response.status, body: response.body)
    }
}

/// What the router test client and ``LiveHTTPClient`` share: JSON request headers and the
/// registration call.
public enum JSONRequest {
    public static func headers(_ headers: HTTPFields, body: String?, token: String?) -> HTTPFields {
        var headers = headers
        if body != nil { headers[.contentType] = "application/json" }
        if let token { headers[.authorization] = "Bearer \(token)" }
        return headers
    }

    public static func freshEmail() -> String { "user-\(UUID().uuidString.prefix(8))@example.com" }

    static func registration(email: String, password: String) -> String {
        #"{"email": "\#(email)", "password": "\#(password)"}"#
    }

    /// The session token and user id of a `POST /auth/register` answer.
    static func registered(status: HTTPResponse.Status, body: ByteBuffer) throws -> (token: String, userID: String) {
        guard status == .created else { throw ConfigurationError("register failed: \(status) \(String(buffer: body))") }
        let object = try JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any]
        guard let token = object?["token"] as? String, let user = object?["user"] as? [String: Any], let id = user["id"] as? String else {
            throw ConfigurationError("register answer lacks token")
        }
        return (token, id)
    }
}

extension TestResponse {
    /// The body parsed as a JSON object.
    public var object: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:]
    }
    public var text: String { String(buffer: body) }
}

/// Telling database errors apart on either engine.
public enum TestErrors {
    /// A unique or primary-key violation: SQLite's "UNIQUE constraint failed", PostgreSQL's SQLSTATE
    /// 23505 (which PSQLError shows only in its debug description).
    public static func isUniqueViolation(_ error: any Error) -> Bool {
        let text = String(reflecting: error)
        return text.contains("UNIQUE constraint failed") || text.contains("23505")
    }
}

import HummingbirdTesting
import PurseDatabase
import PurseServer
import Testing

/// A server in the test's process, made fresh for each test case and torn down after it: the
/// test reads it from ``InProcessServer/current``.
///
/// ```swift
/// @Test(.inProcessServer()) func health() async throws {
///     let (server, client) = try InProcessServer.current
///     …
/// }
/// ```
///
/// On a suite it gives each of its tests its own server. Requests go through the router, with
/// no socket (`TestServer.withRouter`).
public struct InProcessServer: Sendable {
    public let server: TestServer
    public let client: any TestClientProtocol

    @TaskLocal static var scoped: InProcessServer?

    /// The server of the test case that is running.
    public static var current: (server: TestServer, client: any TestClientProtocol) {
        get throws {
            guard let scoped else { throw ConfigurationError("no in-process server: add .inProcessServer() to the test or its suite") }
            return (scoped.server, scoped.client)
        }
    }
}

/// The trait behind ``InProcessServer``.
public struct InProcessServerTrait: TestTrait, SuiteTrait, TestScoping {
    let engine: DatabaseEngine
    let modules: @Sendable () -> [any PurseModule]
    let configure: @Sendable (inout PurseConfiguration) -> Void

    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        let server = try await TestServer.make(engine: engine, modules: modules(), configure: configure)
        try await server.withRouter { client in
            try await InProcessServer.$scoped.withValue(InProcessServer(server: server, client: client)) {
                try await function()
            }
        }
    }
}

extension Trait where Self == InProcessServerTrait {
    /// A fresh in-process server for each test case, with `modules` mounted and `configure`
    /// applied to its configuration.
    public static func inProcessServer(
        engine: DatabaseEngine = .sqlite, modules: @escaping @Sendable () -> [any PurseModule] = { [] },
        configure: @escaping @Sendable (inout PurseConfiguration) -> Void = { _ in }
    ) -> Self {
        InProcessServerTrait(engine: engine, modules: modules, configure: configure)
    }
}

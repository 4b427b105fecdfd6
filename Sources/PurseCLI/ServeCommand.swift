import ArgumentParser
import Foundation
import Hummingbird
import Logging
import PurseDatabase
import PurseServer

/// `purse serve`.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Start every Purse service.",
        discussion: """
            With nothing set it listens on 127.0.0.1:8080, keeps a SQLite database in ./data and uses
            the built-in sandboxes. Stops gracefully on SIGINT or SIGTERM. Environment:
            """ + "\n" + ServerSettings.help
    )

    @Option(help: "Address to listen on (env PURSE_HOST, default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on (env PURSE_PORT, default 8080; 0 picks a free one).")
    var port: Int?

    @Option(name: .customLong("data-dir"), help: "Directory for the SQLite database and generated secrets (env PURSE_DATA_DIR, default ./data).")
    var dataDir: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (env PURSE_LOG_LEVEL, default info).")
    var logLevel: String?

    @Flag(name: .customLong("settings-markdown"), help: "Print every setting as docs/configuration.md has it, and exit.")
    var settingsMarkdown = false

    func run() async throws {
        if settingsMarkdown {
            print(ServerSettings.markdown, terminator: "")
            return
        }
        var configuration = try PurseConfiguration.fromEnvironment()
        if let host { configuration.host = host }
        if let port {
            guard (0...65535).contains(port) else { throw ValidationError("--port must be between 0 and 65535") }
            configuration.port = port
        }
        if let dataDir { configuration.dataDirectory = dataDir }
        if let logLevel {
            guard let level = Logger.Level(rawValue: logLevel.lowercased()) else {
                throw ValidationError("--log-level must be one of trace, debug, info, notice, warning, error, critical")
            }
            configuration.logLevel = level
        }
        Self.bootstrapLogging(level: configuration.logLevel)
        // Lines below `notice` wait up to 100 ms in memory; none is lost when the server stops.
        defer { BufferedLogOutput.standardError.flush() }
        let server = try await buildApplication(configuration: configuration, modules: PurseModules.all(configuration: configuration))
        let engine = server.environment.database.engine
        server.environment.logger.notice("purse serving", metadata: [
            "url": "\(configuration.effectivePublicURL)", "database": "\(engine.rawValue)", "mode": "\(configuration.mode.rawValue)",
        ])
        try await server.application.runService()
    }

    /// Every logger of the process writes through ``PurseLogHandler`` at `level` (once per
    /// process: `purse serve`, and `purse bench` for the server it starts itself).
    static func bootstrapLogging(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = PurseLogHandler(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

import ArgumentParser
import Foundation
import HTTPTypes
@testable import PurseCLI
import PurseDatabase
import PurseServer
import Testing

@Suite("CLI")
struct CommandParsingTests {
    func help(_ arguments: [String]) -> String { PurseCommand.helpText(arguments) }

    @Test func serveHelpDocumentsEveryOptionAndItsEnvironmentTwin() {
        let text = help(["serve"])
        for option in ["--host", "--port", "--data-dir", "--log-level"] { #expect(text.contains(option), "\(option)") }
        for variable in ["PURSE_HOST", "PURSE_PORT", "PURSE_DATA_DIR", "PURSE_LOG_LEVEL", "DATABASE_URL", "PURSE_ENV", "PURSE_JWT_SECRET"] {
            #expect(text.contains(variable), "\(variable)")
        }
    }

    @Test func everySystemHasItsSubcommands() {
        #expect(help([]).contains("nexus") && help([]).contains("connect") && help([]).contains("account"))
        for sub in ["enroll", "unlock", "products", "buy-airtime", "balance", "history", "fund"] { #expect(help(["nexus"]).contains(sub), "\(sub)") }
        for sub in ["status", "onboard", "verify"] { #expect(help(["connect"]).contains(sub), "\(sub)") }
        for sub in ["register", "login", "whoami"] { #expect(help(["account"]).contains(sub), "\(sub)") }
    }

    @Test func badInputIsAUsageError() {
        let unknown = #expect(throws: (any Error).self) { try PurseCommand.parseAsRoot(["fly"]) }
        #expect(unknown.map { PurseCommand.message(for: $0) } == "Unexpected argument 'fly'")
        let notANumber = #expect(throws: (any Error).self) { try PurseCommand.parseAsRoot(["nexus", "buy-airtime", "--amount", "ten"]) }
        #expect(notANumber.map { PurseCommand.message(for: $0) }?.contains("The value 'ten' is invalid for '--amount <amount>'") == true)
    }

    /// The server `purse serve` builds, with every module: its OpenAPI document lists exactly its routes.
    @Test func theFullServerDocumentsEveryRoute() async throws {
        var configuration = PurseConfiguration()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        configuration.dataDirectory = directory.path
        configuration.jwtSecret = String(repeating: "s", count: 40)
        let server = try await buildApplication(configuration: configuration, modules: try PurseModules.all(configuration: configuration))
        let served = Set(server.routes)
        let documented = Set(server.document.operations.map { "\($0.method.rawValue) \($0.path)" })
        await server.environment.database.shutdown()
        #expect(served == documented, "undocumented \(served.subtracting(documented)), unserved \(documented.subtracting(served))")
        #expect(served.count >= 37, "every system's routes are mounted")
    }
}

@Suite("serve --help")
struct ServerSettingsTests {
    /// Every environment setting the server's code reads (`value("NAME")`, `env["NAME"]`) is in
    /// the one table `serve --help` prints.
    @Test("every setting the server reads is listed")
    func everySettingIsListed() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources")
        let serverTargets = ["PurseServer", "NexusService", "ConnectService", "ChippiPayService", "CutiEService", "ChipsService", "PurseAPNs"]
        let pattern = try NSRegularExpression(pattern: #"(?:value|roots|seconds|env|environment)(?:\(|\[)"([A-Z][A-Z0-9_]{3,})""#)
        var read: Set<String> = []
        for target in serverTargets {
            let directory = sources.appendingPathComponent(target)
            guard let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { continue }
            for case let file as URL in files where file.pathExtension == "swift" {
                let text = try String(contentsOf: file, encoding: .utf8)
                for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    if let range = Range(match.range(at: 1), in: text) { read.insert(String(text[range])) }
                }
            }
        }
        #expect(read.count > 50, "\(read.count) settings found: the scan must see the code")
        #expect(read.subtracting(ServerSettings.names).sorted() == [])
        let help = ServeCommand.helpMessage()
        for name in ["CHIPPI_RATE_LIMIT", "CUTIE_LINK_SECONDS", "APNS_KEY_FILE", "CHIPS_WS_PORT", "DATABASE_URL"] { #expect(help.contains(name), "\(name)") }
    }

    @Test("docs/configuration.md is the table's current rendering (regenerate: purse serve --settings-markdown > docs/configuration.md)")
    func configurationDocIsCurrent() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let committed = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        #expect(committed == ServerSettings.markdown)
        for name in ServerSettings.names { #expect(committed.contains("`\(name)`"), "\(name)") }
    }
}

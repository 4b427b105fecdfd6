import PurseFormats
import ArgumentParser

/// `purse`: serve every Purse service, or walk a system's journeys as its app would.
public struct PurseCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "purse",
        abstract: "Purse: mobile-money services and their clients.",
        discussion: """
            `purse serve` starts every service (SQLite and the built-in sandboxes by default).
            The other subcommands are clients of a running server (--server, default http://127.0.0.1:8080).
            """,
        version: PurseVersion.current,
        subcommands: [ServeCommand.self, AccountCommand.self, NexusCommand.self, ConnectCommand.self, ChippiCommand.self, CutieCommand.self, ChipsCommand.self, StarknetCommand.self, BenchCommand.self]
    )

    public init() {}
}

extension PurseCommand {
    /// The executable's entry point: parses arguments and runs the (async) subcommand.
    public static func runMain() async {
        let asyncCommand: any AsyncParsableCommand.Type = PurseCommand.self
        await asyncCommand.main()
    }
}

extension PurseCommand {
    /// The help text of a subcommand path (`["nexus", "buy-airtime"]`), as `--help` prints it.
    public static func helpText(_ path: [String], columns: Int = 200) -> String {
        var command: any ParsableCommand.Type = PurseCommand.self
        for name in path {
            guard let next = command.configuration.subcommands.first(where: { $0._commandName == name }) else { return "" }
            command = next
        }
        return PurseCommand.helpMessage(for: command, columns: columns)
    }
}

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
        version: "0.1.0",
        subcommands: [ServeCommand.self, AccountCommand.self, NexusCommand.self, ConnectCommand.self, BenchCommand.self]
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

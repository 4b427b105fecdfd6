import ArgumentParser
import PurseCLI
import Testing

@Suite("CLI parsing")
struct CommandParsingTests {
    @Test func serveHelpDocumentsEveryOption() {
        let help = PurseCommand.helpMessage(for: PurseCommand.self, columns: 200)
        #expect(help.contains("serve"))
        #expect(help.contains("account"))
    }

    @Test func rejectsUnknownSubcommand() {
        #expect(throws: (any Error).self) { try PurseCommand.parseAsRoot(["fly"]) }
    }
}

import HTTPTypes
import PurseFormats
import ArgumentParser
import Foundation
import PurseKit
import PurseHTTPNIO

/// Options every client subcommand takes.
struct ClientOptions: ParsableArguments {
    @Option(help: "The Purse server (env PURSE_SERVER).")
    var server: String = ProcessInfo.processInfo.environment["PURSE_SERVER"] ?? "http://127.0.0.1:8080"

    @Flag(help: "Print JSON instead of text, for scripts.")
    var json = false

    var serverURL: URL {
        get throws {
            guard let url = URL(string: server), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
                throw ValidationError("--server must be an http(s) URL, got \(server)")
            }
            return url
        }
    }

    /// The CLI's secure store (`$PURSE_HOME` or `~/.purse`).
    var store: EncryptedFileSecureStore {
        EncryptedFileSecureStore(directory: EncryptedFileSecureStore.defaultDirectory())
    }

    func apiClient() throws -> APIClient {
        APIClient(
            session: ClientSession(baseURL: try serverURL, store: store),
            transport: AsyncHTTPClientTransport(),
            defaultHeaderFields: [.userAgent: "purse-cli/\(PurseVersion.current)"]
        )
    }

    var output: Output { Output(json: json) }
}

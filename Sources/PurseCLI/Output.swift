import ArgumentParser
import Foundation
import PurseHTTP

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Human text by default, JSON with `--json`.
struct Output {
    let json: Bool

    func emit(_ value: some Encodable, human: () -> String) throws {
        if json {
            let encoder = JSONEncoder.purse
            encoder.outputFormatting.insert(.prettyPrinted)
            print(String(decoding: try encoder.encode(value), as: UTF8.self))
        } else {
            print(human())
        }
    }
}

/// Shows a spinner on stderr while `work` runs longer than half a second (only on a terminal).
func withSpinner<T: Sendable>(_ message: String, _ work: @Sendable () async throws -> T) async throws -> T {
    guard isatty(STDERR_FILENO) != 0 else { return try await work() }
    let spinner = Task {
        try await Task.sleep(for: .milliseconds(500))
        let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
        var index = 0
        while !Task.isCancelled {
            FileHandle.standardError.write(Data("\r\(frames[index % frames.count]) \(message)".utf8))
            index += 1
            try await Task.sleep(for: .milliseconds(100))
        }
    }
    defer {
        spinner.cancel()
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
    return try await work()
}

/// Turns client errors into one plain line and a non-zero exit.
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func explain(_ error: PurseError) -> CLIError {
    switch error.kind {
    case .offline: CLIError("Cannot reach the server (\(error.message)). Is `purse serve` running?")
    case .unauthorized: CLIError("\(error.message). Sign in with `purse account login`.")
    default: CLIError(error.message)
    }
}

/// Runs a client call, mapping ``PurseError`` to a readable failure.
func client<T: Sendable>(_ work: @Sendable () async throws -> T) async throws -> T {
    do {
        return try await work()
    } catch let error as PurseError {
        throw explain(error)
    }
}

/// An argument that is either a value or `@FILE`, a JSON object another command wrote with
/// `--json`, whose `key` member is the value (`cutie feedback --json > conversation.json`, then
/// `cutie admin reply @conversation.json …`).
func argumentValue(_ text: String, key: String) throws -> String {
    guard text.hasPrefix("@") else { return text }
    let path = String(text.dropFirst())
    guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("cannot read \(path)") }
    guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any], let value = object[key] as? String, !value.isEmpty else {
        throw CLIError("\(path) has no \(key)")
    }
    return value
}

/// Reads a secret from the terminal without echo (or a line from stdin when not a terminal).
func readSecret(_ prompt: String) -> String? {
    if isatty(STDIN_FILENO) != 0, let pointer = getpass(prompt) {
        return String(cString: pointer)
    }
    FileHandle.standardError.write(Data(prompt.utf8))
    return readLine(strippingNewline: true)
}

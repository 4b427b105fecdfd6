import Foundation
import Logging
import PurseDatabase
@testable import PurseServer
import Synchronization
import Testing

/// ``BufferedLogOutput`` and ``PurseLogHandler``, writing to a file of their own (never through
/// `LoggingSystem`, which a process bootstraps once).
@Suite("Log output")
struct LogOutputTests {
    /// A temporary file open for writing, and what has reached it so far.
    final class LogFile {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("purse-log-\(UUID().uuidString).log")
        let descriptor: Int32

        init() throws {
            descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            try #require(descriptor >= 0)
        }

        deinit {
            close(descriptor)
            try? FileManager.default.removeItem(at: url)
        }

        var lines: [String] {
            let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
            return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
        }
    }

    static func logger(_ output: BufferedLogOutput, label: String = "purse") -> Logger {
        Logger(label: label) { label in
            var handler = PurseLogHandler(label: label, output: output, metadataProvider: nil)
            handler.logLevel = .trace
            return handler
        }
    }

    @Test func linesBelowNoticeWaitAndANoticeWritesThemInOrder() throws {
        let file = try LogFile()
        let output = BufferedLogOutput(fileDescriptor: file.descriptor, interval: nil)
        let logger = Self.logger(output)
        logger.info("one")
        logger.debug("two")
        logger.info("three")
        #expect(file.lines.isEmpty)
        logger.notice("four")
        #expect(file.lines.map { $0.split(separator: " ").last.map(String.init) } == ["one", "two", "three", "four"])
        logger.info("five")
        #expect(file.lines.count == 4)
        output.flush()
        #expect(file.lines.count == 5)
    }

    @Test func warningsAndErrorsAreWrittenAtOnce() throws {
        let file = try LogFile()
        let logger = Self.logger(BufferedLogOutput(fileDescriptor: file.descriptor, interval: nil))
        logger.warning("careful")
        #expect(file.lines.count == 1)
        logger.error("failed")
        #expect(file.lines.count == 2)
    }

    @Test func aFullBufferIsWrittenWithoutWaiting() throws {
        let file = try LogFile()
        let logger = Self.logger(BufferedLogOutput(fileDescriptor: file.descriptor, interval: nil))
        let filler = String(repeating: "x", count: 1_000)
        for index in 0..<100 { logger.info("\(index) \(filler)") }
        let written = file.lines
        // 100 lines of ~1 KB pass the 64 KiB threshold once: the first ~60 are out, whole.
        #expect(written.count > 50 && written.count < 100)
        #expect(written.allSatisfy { $0.hasSuffix(filler) })
    }

    @Test func theBackgroundThreadWritesAQuietServersLines() async throws {
        let file = try LogFile()
        let output = BufferedLogOutput(fileDescriptor: file.descriptor, interval: .milliseconds(10))
        Self.logger(output).info("quiet")
        for _ in 0..<200 where file.lines.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        #expect(file.lines.count == 1)
    }

    @Test func concurrentLinesArriveWholeAndInEachWritersOrder() async throws {
        let file = try LogFile()
        let output = BufferedLogOutput(fileDescriptor: file.descriptor, interval: .milliseconds(1))
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    let logger = Self.logger(output)
                    for index in 0..<500 { logger.info("writer \(writer) line \(index)", metadata: ["padding": "\(String(repeating: "p", count: writer * 40))"]) }
                }
            }
        }
        output.flush()
        let lines = file.lines
        #expect(lines.count == 4_000)
        for writer in 0..<8 {
            let indices = lines.compactMap { line -> Int? in
                guard line.contains(" writer \(writer) line ") else { return nil }
                #expect(line.contains("padding=\(String(repeating: "p", count: writer * 40)) "))
                return Int(line.split(separator: " ").last!)
            }
            #expect(indices == Array(0..<500))
        }
    }

    /// The same line swift-log's `StreamLogHandler` writes, but for the timestamp.
    @Test func theFormatIsStreamLogHandlers() throws {
        final class Captured: TextOutputStream, @unchecked Sendable {
            var text = ""
            func write(_ string: String) { text += string }
        }
        struct Stream: TextOutputStream, Sendable {
            let captured: Captured
            mutating func write(_ string: String) { captured.write(string) }
        }
        let captured = Captured()
        var reference = StreamLogHandler(label: "purse", stream: Stream(captured: captured), metadataProvider: nil)
        reference.logLevel = .trace
        reference[metadataKey: "request_id"] = "abc"
        let file = try LogFile()
        let output = BufferedLogOutput(fileDescriptor: file.descriptor, interval: nil)
        var ours = PurseLogHandler(label: "purse", output: output, metadataProvider: nil)
        ours.logLevel = .trace
        ours[metadataKey: "request_id"] = "abc"

        struct Failure: Error, CustomStringConvertible { var description: String { "disk full" } }
        let events: [LogEvent] = [
            LogEvent(level: .info, message: "request", metadata: ["method": "GET", "status": .stringConvertible(200), "b": ["x", "y"], "a": ["k": "v"]],
                     source: "PurseServer", file: #fileID, function: #function, line: #line),
            LogEvent(level: .warning, message: "no metadata of its own", metadata: nil, source: "NexusService", file: #fileID, function: #function, line: #line),
            LogEvent(level: .error, message: "with an error", error: Failure(), metadata: ["request_id": "overridden"],
                     source: "PurseServer", file: #fileID, function: #function, line: #line),
        ]
        for event in events {
            reference.log(event: event)
            ours.log(event: event)
        }
        output.flush()
        let expected = captured.text.split(separator: "\n").map { $0.drop { $0 != " " } }
        let actual = file.lines.map { $0.drop { $0 != " " } }
        #expect(actual.count == 3)
        #expect(actual == expected)
        #expect(file.lines.allSatisfy { $0.split(separator: " ").first?.count == 24 })
    }

    @Test func theTimestampIsTheLocalTimeToTheSecond() {
        let text = LocalTimestamp.format(0)
        // `%Y-%m-%dT%H:%M:%S%z`: 1970-01-01T00:00:00+0000 in UTC, another offset elsewhere.
        #expect(text.count == 24)
        #expect(text.dropFirst(4).first == "-" && text.dropFirst(10).first == "T")
        #expect(LocalTimestamp.now().count == 24)
    }

    @Test func requestDurationsHaveTwoDecimals() {
        #expect(RequestLoggingMiddleware.milliseconds(.zero) == "0.00")
        #expect(RequestLoggingMiddleware.milliseconds(.microseconds(1_234)) == "1.23")
        #expect(RequestLoggingMiddleware.milliseconds(.microseconds(5)) == "0.01")
        #expect(RequestLoggingMiddleware.milliseconds(.microseconds(4)) == "0.00")
        #expect(RequestLoggingMiddleware.milliseconds(.microseconds(12_999)) == "13.00")
        #expect(RequestLoggingMiddleware.milliseconds(.microseconds(90)) == "0.09")
        #expect(RequestLoggingMiddleware.milliseconds(.seconds(2)) == "2000.00")
        for micros in [0, 7, 10, 99, 100, 505, 1_000, 25_049, 999_999] {
            let expected = String(format: "%.2f", Double(micros) / 1000)
            // Halves round up here, and to even in printf; only exact halves may differ.
            if micros % 10 != 5 { #expect(RequestLoggingMiddleware.milliseconds(.microseconds(micros)) == expected) }
        }
    }
}

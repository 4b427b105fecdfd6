import Logging
import Synchronization

/// Captures log lines: every line of the process (``shared``, once ``bootstrap`` ran), or the lines
/// of one ``logger``.
public final class CapturedLogs: Sendable {
    public static let shared = CapturedLogs()
    public let lines = Mutex<[String]>([])

    public init() {}
    public static let bootstrap: Void = {
        LoggingSystem.bootstrap { label in CaptureHandler(label: label, sink: shared) }
    }()

    /// A logger whose lines this capture alone receives.
    public var logger: Logger { Logger(label: "test") { label in CaptureHandler(label: label, sink: self) } }

    public struct CaptureHandler: LogHandler {
        public var label: String
        let sink: CapturedLogs
        public var metadata: Logger.Metadata = [:]
        public var logLevel: Logger.Level = .trace
        public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        public func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            sink.lines.withLock { $0.append("\(event.level) \(event.message) \(all)") }
        }
    }
}

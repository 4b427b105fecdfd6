import HTTPTypes
import PurseHTTP
import Synchronization

/// A transport answering APNs requests from a script (200 once it runs out), recording what it was sent.
public final class ScriptedAPNs: HTTPTransport {
    public let answers: Mutex<[TransportResponse]>
    public let sent = Mutex<[TransportRequest]>([])

    public init(_ answers: [TransportResponse]) { self.answers = Mutex(answers) }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        sent.withLock { $0.append(request) }
        return answers.withLock { $0.isEmpty ? TransportResponse(status: 200) : $0.removeFirst() }
    }
}

import Foundation
import HTTPTypes
import PurseHTTP
import Synchronization

/// A transport that answers from a script and records every request.
final class ScriptedTransport: HTTPTransport {
    enum Step: Sendable {
        case respond(TransportResponse)
        case fail(PurseError)
    }
    private let state: Mutex<(steps: [Step], requests: [TransportRequest])>

    init(_ steps: [Step]) { state = Mutex((steps, [])) }

    var requests: [TransportRequest] { state.withLock { $0.requests } }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        let step = state.withLock { state -> Step in
            state.requests.append(request)
            return state.steps.isEmpty ? .fail(.offline("script exhausted")) : state.steps.removeFirst()
        }
        switch step {
        case .respond(let response): return response
        case .fail(let error): throw error
        }
    }
}

/// Records requested waits instead of sleeping.
final class RecordingSleeper: Sendable {
    private let waits = Mutex<[Duration]>([])
    var recorded: [Duration] { waits.withLock { $0 } }
    var sleeper: Sleeper {
        Sleeper { duration in self.waits.withLock { $0.append(duration) } }
    }
}

func json(_ status: HTTPResponse.Status, _ text: String, headerFields: HTTPFields = [:]) -> ScriptedTransport.Step {
    var fields = headerFields
    if fields[.contentType] == nil { fields[.contentType] = "application/json" }
    return .respond(TransportResponse(status: status, headerFields: fields, body: Data(text.utf8)))
}

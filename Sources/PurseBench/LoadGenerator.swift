import NIOCore
import PurseHTTP

/// Which load generator drives the benchmark.
public enum LoadGeneratorKind: String, Sendable, CaseIterable {
    /// ``LeanLoadGenerator``: prepared request bytes, like wrk.
    case lean
    /// ``ClientCoreLoadGenerator``: the real NexusPay client core.
    case core
}

/// One connection's worth of load: what each phase asks of it.
protocol LoadGenerator: Sendable {
    func health() async throws
    /// options → sign → verify; returns the verificationToken.
    func stepUp() async throws -> String
    func topup(token: String) async throws
    /// A top-up for a token minted ahead of a top-up phase, made ready to send while the tokens
    /// are minted (untimed): the lean client's request bytes, idempotency key included, as `wrk`
    /// sends prepared requests; the client core's token, as it builds each request itself.
    func prepareTopup(token: String) -> PreparedTopup
    func topup(_ prepared: PreparedTopup) async throws
    func close() async
}

enum PreparedTopup: Sendable {
    case token(String)
    case request(ByteBuffer)
}

extension LoadGenerator {
    func prepareTopup(token: String) -> PreparedTopup { .token(token) }

    func topup(_ prepared: PreparedTopup) async throws {
        switch prepared {
        case .token(let token): try await topup(token: token)
        case .request: throw PurseError.invalidResponse("a prepared request for a load generator that sends none")
        }
    }
}

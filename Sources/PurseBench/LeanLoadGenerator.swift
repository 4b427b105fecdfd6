import PurseFormats
import Crypto
import Foundation
import NIOCore
import NIOPosix
import NexusPay
import PurseHTTP
import Synchronization

/// The load generator `purse bench nexus` uses by default: requests written as prepared bytes, the
/// few fields it needs read straight out of the response body.
///
/// The benchmark measures the server, and on loopback the load generator shares the server's
/// cores: everything it spends is taken from the server. Like `wrk`, it should cost as little
/// as it can. It still does the cryptography a phone does — a fresh P-256 signature over
/// `authenticatorData ‖ SHA-256(clientDataJSON)` for every challenge — and sends the same
/// WebAuthn JSON; `--client core` runs the real `NexusPay` client core instead.
final class LeanLoadGenerator: Sendable {
    let connection: RawHTTPConnection
    private let optionsRequest: ByteBuffer
    private let healthRequest: ByteBuffer
    private let authorization: String
    private let host: String
    private let signer: AssertionSigner
    private let topupBody: TopupBody

    init(connection: RawHTTPConnection, host: String, sessionToken: String, signer: AssertionSigner, order: TopupOrder) throws {
        self.connection = connection
        self.host = host
        self.authorization = "Bearer \(sessionToken)"
        self.signer = signer
        self.topupBody = try TopupBody(order)
        self.healthRequest = RawHTTPRequest.make("GET", "/health", host: host)
        self.optionsRequest = RawHTTPRequest.make("GET", "/biometric/auth/options", host: host, authorization: authorization)
    }

    func health() async throws {
        try await connection.send(healthRequest).requireStatus(200)
    }

    /// options → sign → verify; returns the verificationToken.
    func stepUp() async throws -> String {
        let options = try await connection.send(optionsRequest)
        try options.requireStatus(200)
        guard let challenge = options.stringValue(of: "challenge") else { throw PurseError.invalidResponse("options without a challenge") }
        let verified = try await connection.send(RawHTTPRequest.make(
            "POST", "/biometric/auth/verify", host: host, authorization: authorization, body: try signer.assertion(for: challenge)
        ))
        try verified.requireStatus(200)
        guard let token = verified.stringValue(of: "verificationToken") else { throw PurseError.invalidResponse("verify without a token") }
        return token
    }

    func topup(token: String) async throws {
        try await connection.send(topupRequest(token: token)).requireStatus(200)
    }

    func prepareTopup(token: String) -> PreparedTopup { .request(topupRequest(token: token)) }

    func topup(_ prepared: PreparedTopup) async throws {
        switch prepared {
        case .request(let request): try await connection.send(request).requireStatus(200)
        case .token(let token): try await topup(token: token)
        }
    }

    /// The top-up request for `token` with a fresh idempotency key, as bytes.
    private func topupRequest(token: String) -> ByteBuffer {
        RawHTTPRequest.make(
            "POST", "/user/topup", host: host, authorization: authorization, idempotencyKey: IdempotencyKey.make(), body: topupBody.with(token: token)
        )
    }
}

/// A top-up request body: the order encoded once, each token appended.
struct TopupBody: Sendable {
    /// The order's JSON without its closing brace.
    private let prefix: String

    init(_ order: TopupOrder) throws {
        prefix = String(String(decoding: try JSONEncoder().encode(order), as: UTF8.self).dropLast())
    }

    /// The body for one top-up; `token` is a JWT (base64url and dots), so it needs no escaping.
    func with(token: String) -> String { prefix + #","verificationToken":"\#(token)"}"# }
}

extension LeanLoadGenerator: LoadGenerator {
    func close() async { await connection.close() }
}

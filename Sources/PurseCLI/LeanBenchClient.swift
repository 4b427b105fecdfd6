import Crypto
import Foundation
import NIOCore
import NIOPosix
import NexusPay
import PurseKit
import Synchronization

/// The load generator `purse bench nexus` uses by default: requests written as prepared bytes, the
/// few fields it needs read straight out of the response body.
///
/// The benchmark measures the server, and on this machine the load generator shares the server's
/// two cores: everything it spends is taken from the server. Like `wrk`, it should cost as little
/// as it can. It still does the cryptography a phone does — a fresh P-256 signature over
/// `authenticatorData ‖ SHA-256(clientDataJSON)` for every challenge — and sends the same
/// WebAuthn JSON; `--client core` runs the real `NexusPay` client core instead.
final class LeanBenchClient: Sendable {
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

/// A platform authenticator's assertions, written straight as `AuthenticationResponseJSON`: the
/// same fields `DeviceAuthenticator.makeAssertion` produces, with the counter kept in memory.
final class AssertionSigner: Sendable {
    private let key: P256.Signing.PrivateKey
    private let credentialID: String
    private let origin: String
    private let rpIDHash: [UInt8]
    private let counter: Atomic<UInt32>

    /// - Parameter signCount: The credential's last sign count; the next assertion counts from it.
    init(key: P256.Signing.PrivateKey, credentialID: String, origin: String, rpID: String, signCount: UInt32) {
        self.key = key
        self.credentialID = credentialID
        self.origin = origin
        self.rpIDHash = Array(SHA256.hash(data: Data(rpID.utf8)))
        self.counter = Atomic(signCount)
    }

    func assertion(for challenge: String) throws -> String {
        let clientData = Data(#"{"type":"webauthn.get","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
        let count = counter.add(1, ordering: .relaxed).newValue
        var authenticatorData = rpIDHash
        authenticatorData.append(0x05)  // UP | UV
        authenticatorData += [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
        let signature = try key.signature(for: authenticatorData + Array(SHA256.hash(data: clientData))).derRepresentation
        return #"{"id":"\#(credentialID)","rawId":"\#(credentialID)","type":"public-key","response":{"#
            + #""clientDataJSON":"\#(NexusPay.Base64URL.encode(clientData))","authenticatorData":"\#(NexusPay.Base64URL.encode(authenticatorData))","#
            + #""signature":"\#(NexusPay.Base64URL.encode(signature))"}}"#
    }
}

/// An HTTP/1.1 request as the bytes on the wire.
enum RawHTTPRequest {
    static func make(
        _ method: String, _ path: String, host: String, authorization: String? = nil, idempotencyKey: String? = nil, body: String? = nil
    ) -> ByteBuffer {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
        if let authorization { head += "Authorization: \(authorization)\r\n" }
        if let idempotencyKey { head += "Idempotency-Key: \(idempotencyKey)\r\n" }
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)" } else { head += "\r\n" }
        return ByteBuffer(string: head)
    }
}

/// A response read by ``RawResponseParser``.
struct RawHTTPResponse: Sendable {
    var status: Int
    var body: ByteBuffer

    func requireStatus(_ expected: Int) throws {
        guard status == expected else {
            throw PurseError.invalidResponse("HTTP \(status): \(String(buffer: body).prefix(200))")
        }
    }

    /// The value of the first `"name":"value"` pair in the body, as the server writes it (compact
    /// JSON); nil when it is not there or holds an escape. Enough for base64url and JWT values.
    func stringValue(of name: String) -> String? {
        body.withUnsafeReadableBytes { bytes in
            guard let found = ByteSearch.firstIndex(of: Array(#""\#(name)":""#.utf8), in: bytes) else { return nil }
            let start = found.upperBound
            guard let end = bytes[start...].firstIndex(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }),
                  bytes[end] == UInt8(ascii: "\"") else { return nil }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
        }
    }
}

/// A plain forward search for a short byte pattern (`Collection.firstRange(of:)` on a buffer's
/// bytes goes through unspecialised generic code and cost a quarter of the load generator's CPU).
enum ByteSearch {
    static func firstIndex(of pattern: [UInt8], in bytes: UnsafeRawBufferPointer) -> Range<Int>? {
        guard let first = pattern.first, bytes.count >= pattern.count else { return nil }
        var index = 0
        let last = bytes.count - pattern.count
        while index <= last {
            if bytes[index] == first {
                var matched = 1
                while matched < pattern.count, bytes[index + matched] == pattern[matched] { matched += 1 }
                if matched == pattern.count { return index..<(index + pattern.count) }
            }
            index += 1
        }
        return nil
    }
}

/// One keep-alive connection, one request at a time: prepared request bytes out, status and
/// body back.
struct RawHTTPConnection: Sendable {
    private let link: BenchChannel<RawResponseParser>

    static func connect(host: String, port: Int) async throws -> RawHTTPConnection {
        RawHTTPConnection(link: try await BenchChannel.connect(host: host, port: port) { pipeline in
            let parser = RawResponseParser()
            try pipeline.addHandler(parser)
            return parser
        })
    }

    func send(_ request: ByteBuffer) async throws -> RawHTTPResponse {
        try await link.send { channel in channel.writeAndFlush(request, promise: nil) }
    }

    func close() async {
        await link.close()
    }
}

/// Reads HTTP/1.1 responses framed by `Content-Length` (what the server sends for every JSON
/// response) and answers the pending request with each.
final class RawResponseParser: PendingResponseHandler {
    typealias InboundIn = ByteBuffer

    var pending: EventLoopPromise<RawHTTPResponse>?
    private var buffer = ByteBuffer()
    private static let headEnd = Array("\r\n\r\n".utf8)
    private static let contentLength = Array("content-length:".utf8)

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        buffer.writeBuffer(&chunk)
        do {
            while let response = try Self.parse(&buffer) { succeedPending(response) }
        } catch {
            failPending(error)
            context.close(promise: nil)
        }
    }

    /// Takes one complete response off the front of `buffer`, or nil when more bytes are needed.
    static func parse(_ buffer: inout ByteBuffer) throws -> RawHTTPResponse? {
        let framing = try buffer.withUnsafeReadableBytes { bytes -> (status: Int, headLength: Int, length: Int)? in
            guard let end = ByteSearch.firstIndex(of: headEnd, in: bytes) else { return nil }
            let head = UnsafeRawBufferPointer(rebasing: bytes[..<end.lowerBound])
            // "HTTP/1.1 200 OK"
            guard head.count >= 12, head.starts(with: "HTTP/1.".utf8) else { throw PurseError.invalidResponse("not an HTTP/1.x response") }
            var status = 0
            for byte in head[9..<12] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { throw PurseError.invalidResponse("bad status line") }
                status = status * 10 + Int(byte - UInt8(ascii: "0"))
            }
            // Every response this server sends has a length; chunked bodies are not expected here.
            guard let length = contentLength(in: head) else { throw PurseError.invalidResponse("response without Content-Length") }
            return (status, end.upperBound, length)
        }
        guard let framing, buffer.readableBytes >= framing.headLength + framing.length else { return nil }
        buffer.moveReaderIndex(forwardBy: framing.headLength)
        let body = buffer.readSlice(length: framing.length)!
        if buffer.readableBytes == 0 { buffer.clear() }
        return RawHTTPResponse(status: framing.status, body: body)
    }

    /// The value of the `Content-Length` header (its name in any case) in a response head.
    static func contentLength(in head: UnsafeRawBufferPointer) -> Int? {
        var lineStart = 0
        while lineStart < head.count {
            var lineEnd = lineStart
            while lineEnd < head.count, head[lineEnd] != UInt8(ascii: "\n") { lineEnd += 1 }
            if lineEnd - lineStart > contentLength.count,
               (0..<contentLength.count).allSatisfy({ head[lineStart + $0] | 0x20 == contentLength[$0] }) {
                var value = 0, digits = 0
                for byte in head[(lineStart + contentLength.count)..<lineEnd] where byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\r") {
                    guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), digits < 12 else { return nil }
                    value = value * 10 + Int(byte - UInt8(ascii: "0"))
                    digits += 1
                }
                return digits > 0 ? value : nil
            }
            lineStart = lineEnd + 1
        }
        return nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        failPending(PurseError.offline("connection closed by the server"))
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failPending(PurseError.offline("connection failed: \(error)"))
        context.close(promise: nil)
    }
}

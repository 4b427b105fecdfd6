import PurseFormats
import Crypto
import Foundation
import NIOCore
import NIOPosix
import NexusPay
import Synchronization

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
            + #""clientDataJSON":"\#(Base64URL.encode(clientData))","authenticatorData":"\#(Base64URL.encode(authenticatorData))","#
            + #""signature":"\#(Base64URL.encode(signature))"}}"#
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

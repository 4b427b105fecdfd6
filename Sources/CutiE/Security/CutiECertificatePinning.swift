import Crypto
import Foundation
import SwiftASN1
import X509

/// Certificate pinning for the SDK's connections: after the platform has validated the server's
/// chain as usual, one certificate of it must carry a pinned key. Pins are base64 SHA-256 hashes
/// of DER SubjectPublicKeyInfo (the form HPKP and OkHttp use); by default the roots Cuti-E's
/// hosting chains to, Google Trust Services R1–R4 and the GlobalSign root that cross-signs R1.
///
/// Pinning applies to the hosts it names (``hosts``; by default the hosted service's, as the
/// Cuti-E SDK pins only its own), so a self-hosted backend with another CA is validated as usual.
///
/// On Apple platforms ``URLSessionPinningDelegate`` applies it to a `URLSession`; on Linux
/// `PinnedTLSTransport` (PurseHTTPNIO) takes ``accepts(chain:)``.
public struct CutiECertificatePinning: Sendable, Equatable {
    public var pins: Set<String>
    /// The hosts pinned, each with its subdomains.
    public var hosts: Set<String>

    /// The hosted service's hosts.
    public static let cutieHosts: Set<String> = ["api.cuti-e.com", "cutie-worker-sandbox.invotekas.workers.dev", "invotekas.workers.dev"]

    /// SHA-256 of the SubjectPublicKeyInfo of GTS Root R1, R2, R3, R4 and GlobalSign Root CA.
    public static let googleTrustServices: Set<String> = [
        "hxqRlPTu1bMS/0DITB1SSu0vd4u/8l8TjPgfaAp63Gc=",  // GTS Root R1
        "Vfd95BwDeSQo+NUYxVEEIlvkOlWY2SalKK1lPhzOx78=",  // GTS Root R2
        "QXnt2YHvdHR3tJYmQIr0Paosp6t/nggsEGD4QJZ3Q0g=",  // GTS Root R3
        "mEflZT5enoR1FuXLgYYGqnVEoZvmf9c2bVBpiOjYQ0c=",  // GTS Root R4
        "K87oWBWM9UZfyddvDfoxL+8lpNyoUB2ptGtn0fv6G2Q=",  // GlobalSign Root CA (cross-signs GTS Root R1)
    ]

    public init(pins: Set<String> = CutiECertificatePinning.googleTrustServices, hosts: Set<String> = CutiECertificatePinning.cutieHosts) {
        self.pins = pins
        self.hosts = Set(hosts.map { $0.lowercased() })
    }

    /// Whether connections to `host` are pinned: one of ``hosts`` or a subdomain of one.
    public func applies(to host: String) -> Bool {
        let host = host.lowercased()
        return hosts.contains(host) || hosts.contains { host.hasSuffix("." + $0) }
    }

    /// The pin of a certificate: base64 SHA-256 of its DER SubjectPublicKeyInfo.
    public static func pin(ofCertificate der: [UInt8]) throws -> String {
        let certificate = try Certificate(derEncoded: der)
        var serializer = DER.Serializer()
        try serializer.serialize(certificate.publicKey)
        return Data(SHA256.hash(data: serializer.serializedBytes)).base64EncodedString()
    }

    /// Whether any certificate of a validated chain (DER) carries a pinned key.
    public func accepts(chain: [[UInt8]]) -> Bool {
        chain.contains { (try? Self.pin(ofCertificate: $0)).map(pins.contains) ?? false }
    }
}

#if canImport(Security) && canImport(Darwin)
import Security

/// A `URLSession` delegate that evaluates the server trust as the system does, then the pins;
/// a chain without a pinned key cancels the challenge, so the request is never sent.
public final class URLSessionPinningDelegate: NSObject, URLSessionDelegate, Sendable {
    let pinning: CutiECertificatePinning

    public init(pinning: CutiECertificatePinning) { self.pinning = pinning }

    public func urlSession(_ session: URLSession, didReceive challenge: URLAuthenticationChallenge) async
        -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
              let trust = challenge.protectionSpace.serverTrust, pinning.applies(to: challenge.protectionSpace.host) else { return (.performDefaultHandling, nil) }
        guard SecTrustEvaluateWithError(trust, nil) else { return (.cancelAuthenticationChallenge, nil) }
        let chain = (SecTrustCopyCertificateChain(trust) as? [SecCertificate] ?? []).map { [UInt8](SecCertificateCopyData($0) as Data) }
        guard pinning.accepts(chain: chain) else { return (.cancelAuthenticationChallenge, nil) }
        return (.useCredential, URLCredential(trust: trust))
    }
}
#endif

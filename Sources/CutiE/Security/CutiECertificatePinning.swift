import Crypto
import Foundation
import SwiftASN1
import X509

/// Certificate pinning for the SDK's connections: after the platform has validated the server's
/// chain as usual, one certificate of it must carry a pinned key. Pins are base64 SHA-256 hashes
/// of DER SubjectPublicKeyInfo (the form HPKP and OkHttp use); by default the roots Cuti-E's
/// hosting chains to, Google Trust Services R1–R4 and the GlobalSign root that cross-signs R1.
///
/// On Apple platforms ``URLSessionPinningDelegate`` applies it to a `URLSession`; on Linux
/// `PinnedTLSTransport` (PurseKitAHC) takes ``accepts(chain:)``.
public struct CutiECertificatePinning: Sendable, Equatable {
    public var pins: Set<String>

    /// SHA-256 of the SubjectPublicKeyInfo of GTS Root R1, R2, R3, R4 and GlobalSign Root CA.
    public static let googleTrustServices: Set<String> = [
        "hxqRlPTu1bMS/0DITB1SSu0vd4u/8l8TjPgfaAp63Gc=",  // GTS Root R1
        "Vfd95BwDeSQo+NUYxVEEIlvkOlWY2SalKK1lPhzOx78=",  // GTS Root R2
        "QXnt2YHvdHR3tJYmQIr0Paosp6t/nggsEGD4QJZ3Q0g=",  // GTS Root R3
        "mEflZT5enoR1FuXLgYYGqnVEoZvmf9c2bVBpiOjYQ0c=",  // GTS Root R4
        "K87oWBWM9UZfyddvDfoxL+8lpNyoUB2ptGtn0fv6G2Q=",  // GlobalSign Root CA (cross-signs GTS Root R1)
    ]

    public init(pins: Set<String> = CutiECertificatePinning.googleTrustServices) {
        self.pins = pins
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
              let trust = challenge.protectionSpace.serverTrust else { return (.performDefaultHandling, nil) }
        guard SecTrustEvaluateWithError(trust, nil) else { return (.cancelAuthenticationChallenge, nil) }
        let chain = (SecTrustCopyCertificateChain(trust) as? [SecCertificate] ?? []).map { [UInt8](SecCertificateCopyData($0) as Data) }
        guard pinning.accepts(chain: chain) else { return (.cancelAuthenticationChallenge, nil) }
        return (.useCredential, URLCredential(trust: trust))
    }
}
#endif

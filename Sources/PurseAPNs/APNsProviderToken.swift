import Crypto
import Foundation
import PurseFormats
import Synchronization

/// The signing key of APNs token-based authentication: a P-256 key (the `.p8` file from the
/// developer account), its key id and the team id.
public struct APNsCredentials: Sendable {
    public var keyID: String
    public var teamID: String
    public var privateKey: P256.Signing.PrivateKey

    public init(keyID: String, teamID: String, privateKey: P256.Signing.PrivateKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.privateKey = privateKey
    }

    /// Reads a `.p8` file (a PKCS #8 PEM of a P-256 key).
    public init(keyID: String, teamID: String, p8 pem: String) throws {
        self.init(keyID: keyID, teamID: teamID, privateKey: try P256.Signing.PrivateKey(pemRepresentation: pem))
    }
}

/// The provider authentication token APNs expects in `authorization: bearer …`: a JWT signed with
/// ES256, header `{alg, kid}`, claims `{iss: team id, iat}`.
///
/// Apple refuses a token older than one hour (`ExpiredProviderToken`) and one replaced more often
/// than every 20 minutes (`TooManyProviderTokenUpdates`), so one token is reused for
/// ``lifetime`` (50 minutes) and then replaced.
public final class APNsProviderToken: Sendable {
    public let credentials: APNsCredentials
    /// How long one token is used: refreshed before Apple's 60-minute limit, not before 20.
    public static let lifetime: TimeInterval = 50 * 60
    private let current = Mutex<(token: String, issuedAt: Date)?>(nil)

    public init(credentials: APNsCredentials) { self.credentials = credentials }

    /// The token to send at `now`: the current one while it is younger than ``lifetime``.
    public func token(now: Date) throws -> String {
        try current.withLock { current in
            if let current, now.timeIntervalSince(current.issuedAt) < Self.lifetime, now >= current.issuedAt { return current.token }
            let token = try Self.sign(credentials, issuedAt: now)
            current = (token, now)
            return token
        }
    }

    /// Forgets the current token (after APNs answered `ExpiredProviderToken`), so the next call signs a new one.
    public func invalidate() { current.withLock { $0 = nil } }

    /// A token issued at `issuedAt`.
    public static func sign(_ credentials: APNsCredentials, issuedAt: Date) throws -> String {
        let header = #"{"alg":"ES256","kid":"\#(credentials.keyID)"}"#
        let claims = #"{"iss":"\#(credentials.teamID)","iat":\#(Int64(issuedAt.timeIntervalSince1970))}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try credentials.privateKey.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
    }

    /// What a provider token says, once its ES256 signature checked out against `publicKey`.
    public struct Claims: Sendable, Equatable {
        public var keyID: String
        public var teamID: String
        public var issuedAt: Date

        public init(keyID: String, teamID: String, issuedAt: Date) {
            self.keyID = keyID
            self.teamID = teamID
            self.issuedAt = issuedAt
        }
    }

    /// Checks a token as APNs does: its form, `alg` ES256, the signature with `publicKey`.
    /// Returns nil when any of it is wrong (APNs' `InvalidProviderToken`).
    public static func verify(_ token: String, publicKey: P256.Signing.PublicKey) -> Claims? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 4096,
              let headerBytes = Base64URL.decode(String(parts[0])), let claimBytes = Base64URL.decode(String(parts[1])),
              let signatureBytes = Base64URL.decode(String(parts[2])),
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
              publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)),
              let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)), header.alg == "ES256",
              let claims = try? JSONDecoder().decode(ClaimBody.self, from: Data(claimBytes)) else {
            return nil
        }
        return Claims(keyID: header.kid, teamID: claims.iss, issuedAt: Date(timeIntervalSince1970: TimeInterval(claims.iat)))
    }

    private struct Header: Decodable { var alg: String; var kid: String }
    private struct ClaimBody: Decodable { var iss: String; var iat: Int64 }
}

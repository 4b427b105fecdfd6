import Crypto
import Foundation
import PurseFormats

/// How a bearer secret is stored and looked up: a session id, an API key's secret, a link or
/// ticket token becomes the hex SHA-256 of its UTF-8, so a copy of the database holds no secret
/// that works. The secrets are random and long, so no salt or stretching is needed (passwords
/// go through `PasswordHasher`).
public enum SecretDigest {
    public static func hex(_ secret: String) -> String {
        Hex.encode(SHA256.hash(data: Data(secret.utf8)))
    }
}

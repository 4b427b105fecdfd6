import Foundation

/// Exposes the soft lock's PBKDF2 for conformance tests against published vectors.
public enum PBKDF2Probe {
    /// PBKDF2-HMAC-SHA256 of UTF-8 `password` and `salt`, as lowercase hex.
    public static func derive(password: String, salt: String, iterations: Int, length: Int) -> String {
        PBKDF2.sha256(password: Data(password.utf8), salt: Data(salt.utf8), iterations: iterations, length: length)
            .map { String(format: "%02x", $0) }.joined()
    }
}

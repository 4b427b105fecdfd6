import Foundation
import PurseFormats

/// Checks of a compact JWS's protected header that jwt-kit does not make.
public enum JWTHeader {
    /// Whether the token's header is a JSON object without `crit`. RFC 7515 §4.1.11: a recipient
    /// that does not understand every extension `crit` lists must reject the token, and Purse
    /// understands none; a header that is not base64url JSON is refused as well.
    public static func isAcceptable(_ token: String) -> Bool {
        guard let dot = token.utf8.firstIndex(of: UInt8(ascii: ".")),
              let bytes = Base64URL.decode(String(token[..<dot])),
              case .object(let members)? = try? StrictJSON.parse(bytes) else { return false }
        return members["crit"] == nil
    }
}

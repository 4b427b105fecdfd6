import Foundation

/// A value percent-encoded for a URI's query as JavaScript's `encodeURIComponent` does: everything
/// but ASCII letters, digits and `-_.!~*'()` becomes `%XX` of its UTF-8 bytes. MyCHIPs' links
/// (invitations, payments, signkey backups) are made this way by its JavaScript reference
/// clients, and both ends here make them the same.
public enum URIComponent {
    public static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    private static let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()")
}

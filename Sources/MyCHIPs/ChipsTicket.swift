import Foundation
import PurseFormats

/// A connection ticket: a one-time token a provider issues for a user, with where to connect.
/// Read from its JSON `{"ticket": {token, expires, host, port, user}}` (a bare ticket object is
/// accepted too) or from its link `https://mychips.org/ticket?host=…&port=…&user=…&token=…`;
/// either may arrive by QR or as a deep link.
public struct ChipsTicket: Sendable, Equatable, Codable {
    public var token: String
    /// When the token stops working; links do not carry it.
    public var expires: Date?
    public var host: String
    public var port: Int
    /// Who the ticket is for; when absent the app asks.
    public var user: String?

    public init(token: String, expires: Date?, host: String, port: Int, user: String?) {
        self.token = token
        self.expires = expires
        self.host = host
        self.port = port
        self.user = user
    }

    public func isExpired(at now: Date) -> Bool {
        guard let expires else { return false }
        return expires <= now
    }

    /// The JSON form.
    public var json: String {
        var members: [String: JSONValue] = ["token": .string(token), "host": .string(host), "port": .int(Int64(port))]
        if let expires { members["expires"] = .string(JavaScriptDate.string(expires)) }
        if let user { members["user"] = .string(user) }
        return JavaScriptJSON.stringify(.object(["ticket": .object(members)]))
    }

    /// The link form.
    public var link: String {
        var components = URLComponents(string: "https://mychips.org/ticket")!
        components.queryItems = [URLQueryItem(name: "host", value: host), URLQueryItem(name: "port", value: String(port))]
            + (user.map { [URLQueryItem(name: "user", value: $0)] } ?? []) + [URLQueryItem(name: "token", value: token)]
        return components.string!
    }

    /// A ticket from its JSON text or its link.
    public static func parse(_ text: String) throws(ChipsError) -> ChipsTicket {
        guard case .ticket(let ticket) = try ChipsLink.parse(text) else { throw .invalidTicket("this is not a connection ticket") }
        return ticket
    }

    static func fromJSON(_ value: JSONValue) throws(ChipsError) -> ChipsTicket {
        let body = value["ticket"] ?? value
        guard case .string(let token)? = body["token"], !token.isEmpty else { throw .invalidTicket("the ticket has no token") }
        guard case .string(let host)? = body["host"], !host.isEmpty else { throw .invalidTicket("the ticket has no host") }
        let port: Int
        switch body["port"] {
        case .int(let number)?: port = Int(number)
        case .string(let text)?: port = Int(text) ?? 0
        default: throw .invalidTicket("the ticket has no port")
        }
        guard (1...65535).contains(port) else { throw .invalidTicket("the ticket's port is not a TCP port") }
        var expires: Date?
        if let value = body["expires"], !value.isNull {
            guard case .string(let text) = value, let date = JavaScriptDate.parse(text) else { throw .invalidTicket("the ticket's expiry is not a date") }
            expires = date
        }
        let user = body["user"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        return ChipsTicket(token: token, expires: expires, host: host, port: port, user: user)
    }
}

/// What a scanned QR code or an opened link holds. The scanner and the deep-link handler both
/// read through this one parser.
public enum ChipsLink: Sendable, Equatable {
    case ticket(ChipsTicket)

    /// Reads a connection ticket's JSON or any `https://mychips.org/…` link this app handles
    /// (also as `mychips://…`, the app's own scheme).
    public static func parse(_ text: String) throws(ChipsError) -> ChipsLink {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") {
            guard let value = try? StrictJSON.parse(Array(trimmed.utf8)) else { throw .invalidTicket("the ticket is not valid JSON") }
            return .ticket(try ChipsTicket.fromJSON(value))
        }
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased() else {
            throw .invalidTicket("not a MyCHIPs link or ticket")
        }
        let kind: String
        switch scheme {
        case "https" where components.host?.lowercased() == "mychips.org": kind = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        case "mychips": kind = components.host ?? components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        default: throw .invalidTicket("not a MyCHIPs link or ticket")
        }
        var query: [String: JSONValue] = [:]
        for item in components.queryItems ?? [] where query[item.name] == nil { query[item.name] = item.value.map(JSONValue.string) ?? .null }
        switch kind {
        case "ticket": return .ticket(try ChipsTicket.fromJSON(.object(query)))
        default: throw .invalidTicket("MyCHIPs links of kind \"\(kind)\" are not handled")
        }
    }
}

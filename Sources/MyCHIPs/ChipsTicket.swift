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
        let link: ChipsLink
        do {
            link = try ChipsLink.parse(text)
        } catch {
            throw .invalidTicket(error.message)
        }
        guard case .ticket(let ticket) = link else { throw .invalidTicket("this is a \(link.kind) link, not a connection ticket") }
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

/// A tally invitation: a one-time token from the inviting user, and where that user is.
public struct TallyInvite: Sendable, Equatable {
    public var token: String
    public var chad: ChipsAddress
    public var expires: Date?

    public init(token: String, chad: ChipsAddress, expires: Date? = nil) {
        self.token = token
        self.chad = chad
        self.expires = expires
    }

    /// `https://mychips.org/invite?token=…&chad=…` (`chad` the JSON of `{cuid, agent, host, port}`).
    public var link: String {
        var link = "https://mychips.org/invite?token=\(URIComponent.encode(token))&chad=\(URIComponent.encode(JavaScriptJSON.stringify(chad.json)))"
        if let expires { link += "&expires=\(URIComponent.encode(JavaScriptDate.string(expires)))" }
        return link
    }
}

/// A payment address, or an invoice when it names an amount: pay `units` milliCHIPs to `chad`.
public struct PaymentRequest: Sendable, Equatable {
    public var chad: ChipsAddress
    /// milliCHIPs (1 CHIP = 1,000); nil lets the payer choose.
    public var units: Int64?
    public var reference: String?
    public var memo: String?

    public init(chad: ChipsAddress, units: Int64? = nil, reference: String? = nil, memo: String? = nil) {
        self.chad = chad
        self.units = units
        self.reference = reference
        self.memo = memo
    }

    /// `https://mychips.org/pay?chad=cuid:agent&units=…&ref=…&memo=…` (`chad` in its JSON form
    /// when `cuid:agent` would not read back as the same address).
    public var link: String {
        var link = "https://mychips.org/pay?chad=\(URIComponent.encode(chad.linkValue))"
        if let units { link += "&units=\(units)" }
        if let reference { link += "&ref=\(URIComponent.encode(reference))" }
        if let memo { link += "&memo=\(URIComponent.encode(memo))" }
        return link
    }
}

/// A signed chit passed from hand to hand: the payer's device shows it as a QR code or sends it
/// as a link; the payee's app hands it to its provider — at once, or when it is next connected
/// (``ChipsOutbox``). The provider takes it only if the signature is the payer's, by the key on
/// their shared tally, and only once.
public struct SignedChit: Sendable, Equatable {
    public var core: ChitCore
    public var signature: String

    public init(core: ChitCore, signature: String) {
        self.core = core
        self.signature = signature
    }

    /// The core with `signed`: what the link carries.
    public var json: JSONValue {
        guard case .object(var members) = core.json else { return core.json }
        members["signed"] = .string(signature)
        return .object(members)
    }

    public init(json: JSONValue) throws(ChipsError) {
        guard case .string(let tally)? = json["tally"], let by = json["by"]?.stringValue.flatMap(TallySide.init(rawValue:)),
              let type = json["type"]?.stringValue.flatMap(ChitType.init(rawValue:)), type == .tran,
              case .string(let uuid)? = json["uuid"], UUID(uuidString: uuid) != nil,
              case .string(let dateText)? = json["date"], let date = JavaScriptDate.epochMillis(dateText),
              let units = json["units"]?.int64Value, units > 0, case .string(let signature)? = json["signed"] else {
            throw .invalidLink("a chit link needs its tally, issuer, id, date, units and signature")
        }
        self.init(core: ChitCore(tally: TallyID(tally), by: by, type: type, uuid: ChitID(uuid), date: date, units: units, reference: json["ref"],
                                 memo: json["memo"]?.stringValue), signature: signature)
    }

    /// `https://mychips.org/chit?c=…` (base64url of the signed chit's JSON).
    public var link: String { "https://mychips.org/chit?c=" + Base64URL.encode(Data(JavaScriptJSON.stringify(json).utf8)) }
}

/// What a scanned QR code or an opened link holds. The scanner and the deep-link handler both
/// read through this one parser, which knows the four forms MyCHIPs uses: a connection ticket,
/// a tally invitation, a payment address or invoice, and a signing key backup — and a signed chit
/// handed over — each as a `https://mychips.org/KIND?…` link (or the app's `mychips://KIND?…`), and the ticket and the
/// signing key also as their JSON.
public enum ChipsLink: Sendable, Equatable {
    case ticket(ChipsTicket)
    case invite(TallyInvite)
    case pay(PaymentRequest)
    case signkey(SigningKeyBackup)
    case chit(SignedChit)
    /// A connection key and its provider, sealed (``ConnectionKeyBackup``).
    case connectKey(ConnectionKeyBackup)

    public var kind: String {
        switch self {
        case .ticket: "ticket"
        case .invite: "invite"
        case .pay: "pay"
        case .signkey: "signkey"
        case .chit: "chit"
        case .connectKey: "connect"
        }
    }

    public var link: String {
        switch self {
        case .ticket(let ticket): ticket.link
        case .invite(let invite): invite.link
        case .pay(let request): request.link
        case .signkey(let backup): backup.link
        case .chit(let chit): chit.link
        case .connectKey(let backup): backup.link
        }
    }

    public static func parse(_ text: String) throws(ChipsError) -> ChipsLink {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") {
            guard let value = try? StrictJSON.parse(Array(trimmed.utf8)) else { throw .invalidLink("the code is not valid JSON") }
            if value["signkey"] != nil { return .signkey(try SigningKeyBackup(fields: value)) }
            if value["connect"] != nil { return .connectKey(try ConnectionKeyBackup(fields: value)) }
            return .ticket(try ChipsTicket.fromJSON(value))
        }
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased() else {
            throw .invalidLink("not a MyCHIPs link or ticket")
        }
        let kind: String
        switch scheme {
        case "https" where components.host?.lowercased() == "mychips.org": kind = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        case "mychips": kind = components.host ?? components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        default: throw .invalidLink("not a MyCHIPs link or ticket")
        }
        var query: [String: JSONValue] = [:]
        for item in components.queryItems ?? [] where query[item.name] == nil { query[item.name] = item.value.map(JSONValue.string) ?? .null }
        switch kind {
        case "ticket":
            return .ticket(try ChipsTicket.fromJSON(.object(query)))
        case "invite":
            guard let token = query["token"]?.stringValue, !token.isEmpty else { throw .invalidLink("a tally invitation needs a token") }
            guard let chadText = query["chad"]?.stringValue, let chad = ChipsAddress(linkValue: chadText) else {
                throw .invalidLink("a tally invitation needs the inviter's CHIP address (chad)")
            }
            var expires: Date?
            if let text = query["expires"]?.stringValue {
                guard let date = JavaScriptDate.parse(text) else { throw .invalidLink("the invitation's expiry is not a date") }
                expires = date
            }
            return .invite(TallyInvite(token: token, chad: chad, expires: expires))
        case "pay":
            guard let chadText = query["chad"]?.stringValue, let chad = ChipsAddress(linkValue: chadText) else {
                throw .invalidLink("a payment link needs a CHIP address (chad=cuid:agent)")
            }
            var units: Int64?
            if let text = query["units"]?.stringValue {
                guard let value = Int64(text), value > 0 else { throw .invalidLink("units must be a whole number of milliCHIPs above zero") }
                units = value
            }
            return .pay(PaymentRequest(chad: chad, units: units, reference: query["ref"]?.stringValue, memo: query["memo"]?.stringValue))
        case "connect":
            return .connectKey(try ConnectionKeyBackup(fields: .object(query)))
        case "signkey":
            return .signkey(try SigningKeyBackup(fields: .object(query)))
        case "chit":
            guard let text = query["c"]?.stringValue, let data = Base64URL.decode(text), data.count <= 8192,
                  let value = try? StrictJSON.parse(Array(data)) else {
                throw .invalidLink("a chit link carries the signed chit (c=…)")
            }
            return .chit(try SignedChit(json: value))
        default:
            throw .invalidLink("MyCHIPs links of kind \"\(kind)\" are not handled")
        }
    }
}

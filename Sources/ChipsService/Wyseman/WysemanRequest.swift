import Foundation
import PurseFormats

/// One request frame: `{id, view, action, …}`. What a request may carry beyond those depends on
/// its action: `fields`, `where`, `order`, `limit`, `table` and `params` for `tuple` and
/// `select`; `fields` and `where` for `update`; `fields` for `insert`; `where` for `delete`;
/// `language` for `lang`; `name` and `data: {keys, options}` for a view's named actions
/// (`action: "action"`).
struct WysemanRequest: Sendable {
    var id: JSONValue
    var view: String
    var action: String
    var frame: [String: JSONValue]

    subscript(_ member: String) -> JSONValue? { frame[member] }

    /// Parses a frame. A frame that is not a JSON object, or has no `view` or `action`, is refused
    /// with the `id` it carried (null where it had none) so the client can match the refusal.
    enum Parsed {
        case success(WysemanRequest)
        case failure((id: JSONValue, error: WysemanError))
    }

    static func parse(_ bytes: some Collection<UInt8>) -> Parsed {
        let value: JSONValue
        do {
            value = try StrictJSON.parse(bytes)
        } catch {
            return .failure((JSONValue.null, WysemanError.request("bad JSON in request: \(error)", "badJSON")))
        }
        guard case .object(let frame) = value else {
            return .failure((JSONValue.null, WysemanError.request("a request must be a JSON object", "badRequest")))
        }
        let id = frame["id"] ?? .null
        switch id {
        case .int, .uint, .string: break
        case .null: return .failure((JSONValue.null, WysemanError.request("a request needs an id", "badID")))
        default: return .failure((JSONValue.null, WysemanError.request("a request's id must be a number or a string", "badID")))
        }
        guard case .string(let view)? = frame["view"], !view.isEmpty else {
            return .failure((id, WysemanError.request("a request needs a view", "badView")))
        }
        guard case .string(let action)? = frame["action"], !action.isEmpty else {
            return .failure((id, WysemanError.request("a request needs an action", "badAction")))
        }
        return .success(WysemanRequest(id: id, view: view, action: action, frame: frame))
    }
}

/// A response frame: the request's `id`, `view` and `action` echoed, with `data` or `error`, as
/// the UTF-8 a text frame carries.
enum WysemanResponse {
    static func data(_ data: JSONValue, to request: WysemanRequest) -> [UInt8] {
        var members: [(key: String, value: JSONValue)] = [("id", request.id), ("view", .string(request.view)), ("action", .string(request.action))]
        if request.action == "action", let name = request["name"] { members.append(("name", name)) }
        members.append(("data", data))
        return JavaScriptJSON.objectBytes(members)
    }

    static func error(_ error: WysemanError, id: JSONValue, view: String? = nil, action: String? = nil) -> [UInt8] {
        var members: [(key: String, value: JSONValue)] = [("id", id)]
        if let view { members.append(("view", .string(view))) }
        if let action { members.append(("action", .string(action))) }
        members.append(("error", error.json))
        return JavaScriptJSON.objectBytes(members)
    }

    /// A push: `{action: "notify", channel, data}`.
    static func notify(channel: String, data: JSONValue) -> [UInt8] {
        JavaScriptJSON.objectBytes([("action", "notify"), ("channel", .string(channel)), ("data", data)])
    }
}

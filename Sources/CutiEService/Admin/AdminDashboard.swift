import CutiEVocabulary
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PurseAPNs
import PurseDatabase
import PurseFormats
import PurseServer

/// The admin dashboard: server-rendered pages at `/cutie/admin` where support staff sign in,
/// find conversations (filters and search), read a thread, answer (with canned responses),
/// change status, priority and category, assign, tag, and see the pushes sent. Plain forms
/// with a CSRF token each; no script is needed.
struct AdminDashboard: Sendable {
    let accounts: AdminAccounts
    let desk: AdminDesk
    var environment: ServerEnvironment { desk.environment }

    struct LoginForm: Decodable { var email: String; var password: String }
    struct ReplyForm: Decodable { var csrf_token: String; var message: String?; var canned_id: String?; var is_internal_note: String? }
    struct UpdateForm: Decodable {
        var csrf_token: String
        var status: ConversationStatus?
        var priority: ConversationPriority?
        var category: ConversationCategory?
        var assigned_admin_id: String?
    }
    struct TagForm: Decodable { var csrf_token: String; var tag: String }
    struct LogoutForm: Decodable { var csrf_token: String }

    static func redirect(_ location: String, cookie: String? = nil) -> Response {
        var headers: HTTPFields = [.location: location]
        if let cookie { headers[.setCookie] = cookie }
        return Response(status: .seeOther, headers: headers)
    }

    func form<T: Decodable>(_ type: T.Type, _ request: inout Request, _ context: PurseRequestContext) async throws -> T {
        let body = try await request.collectLimitedBody(context: context)
        do {
            return try URLEncodedFormDecoder().decode(T.self, from: String(buffer: body))
        } catch DecodingError.dataCorrupted(let context) where context.underlyingError is UnknownChoice {
            throw APIError.badRequest(context.debugDescription)
        } catch {
            throw APIError.badRequest("The form is incomplete")
        }
    }

    /// A page's refusals are pages too: the error's status and its message.
    func rendered(_ handler: @escaping @Sendable (Request, PurseRequestContext) async throws -> Response) -> @Sendable (Request, PurseRequestContext) async throws -> Response {
        { request, context in
            do {
                return try await handler(request, context)
            } catch let error as APIError {
                let message = error.message ?? "The request was refused"
                return Response.html(page("Refused", signedIn: nil, body: "<p class=\"error\" id=\"error\">\(e(message))</p><p><a href=\"/cutie/admin\">Back to the conversations</a></p>"),
                                     status: error.status)
            }
        }
    }

    func mount(on router: Router<PurseRequestContext>) {
        let pages = router.group("cutie/admin")
        pages.get("login") { _, _ in Response.html(page("Sign in", signedIn: nil, body: loginForm(error: nil))) }
        pages.post("login", use: rendered { request, context in
            var request = request
            try AdminAccounts.checkOrigin(request)
            let input = try await form(LoginForm.self, &request, context)
            do {
                let (id, _, device) = try await accounts.login(email: input.email, password: input.password, request: request, context: context)
                var response = Self.redirect("/cutie/admin", cookie: accounts.setCookie(id))
                response.headers.append(HTTPField(name: .setCookie, value: device))
                return response
            } catch let error as APIError {
                return Response.html(page("Sign in", signedIn: nil, body: loginForm(error: error.message ?? "Sign-in failed")), status: error.status)
            }
        })
        pages.post("logout", use: rendered { request, context in
            var request = request
            _ = try await accounts.require(request)
            let input = try await form(LogoutForm.self, &request, context)
            _ = try await accounts.requireForChange(request, csrf: input.csrf_token)
            try await accounts.logout(request)
            return Self.redirect("/cutie/admin/login", cookie: AdminAccounts.clearCookie)
        })
        pages.get(use: rendered { request, _ in
            guard let session = try await accounts.session(request) else { return Self.redirect("/cutie/admin/login") }
            try request.requireOnlyQuery(AdminDesk.Filters.names)
            let query = request.uri.queryParameters
            let filters = try AdminDesk.Filters.parse { query.get($0) }
            let listed = try await desk.list(filters, admin: session.admin)
            let apps = try await environment.database.read { db in try await CutiEApp.all(in: db) }
            let admins = try await desk.admins()
            return Response.html(page("Conversations", signedIn: session, body: inbox(listed, filters: filters, query: { query.get($0) }, apps: apps, admins: admins)))
        })
        pages.get("conversations/{id}", use: rendered { request, context in
            guard let session = try await accounts.session(request) else { return Self.redirect("/cutie/admin/login") }
            let thread = try await desk.open(try context.parameters.require("id", as: ConversationID.self), markRead: true)
            let canned = try await desk.cannedResponses()
            let admins = try await desk.admins()
            return Response.html(page(thread.conversation.title ?? "Conversation", signedIn: session,
                                      body: threadPage(thread, session: session, canned: canned, admins: admins)))
        })
        pages.post("conversations/{id}/reply", use: rendered { request, context in
            var request = request
            _ = try await accounts.require(request)
            let input = try await form(ReplyForm.self, &request, context)
            let session = try await accounts.requireForChange(request, csrf: input.csrf_token)
            let id = try context.parameters.require("id", as: ConversationID.self)
            var text = input.message ?? ""
            if text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, let cannedID = input.canned_id, !cannedID.isEmpty {
                text = try await desk.cannedResponses().first { $0.canned_id == cannedID }?.body ?? ""
            }
            _ = try await desk.reply(id, text: text, note: input.is_internal_note != nil, admin: session.admin)
            return Self.redirect("/cutie/admin/conversations/\(id)")
        })
        pages.post("conversations/{id}/update", use: rendered { request, context in
            var request = request
            _ = try await accounts.require(request)
            let input = try await form(UpdateForm.self, &request, context)
            let session = try await accounts.requireForChange(request, csrf: input.csrf_token)
            let id = try context.parameters.require("id", as: ConversationID.self)
            _ = try await desk.update(id, change: AdminDesk.Change(status: input.status, priority: input.priority, category: input.category,
                                                                  assigned_admin_id: input.assigned_admin_id), admin: session.admin)
            return Self.redirect("/cutie/admin/conversations/\(id)")
        })
        pages.post("conversations/{id}/tags", use: rendered { request, context in
            var request = request
            _ = try await accounts.require(request)
            let input = try await form(TagForm.self, &request, context)
            let session = try await accounts.requireForChange(request, csrf: input.csrf_token)
            let id = try context.parameters.require("id", as: ConversationID.self)
            _ = try await desk.tag(id, add: input.tag, remove: nil, admin: session.admin)
            return Self.redirect("/cutie/admin/conversations/\(id)")
        })
        pages.post("conversations/{id}/tags/remove", use: rendered { request, context in
            var request = request
            _ = try await accounts.require(request)
            let input = try await form(TagForm.self, &request, context)
            let session = try await accounts.requireForChange(request, csrf: input.csrf_token)
            let id = try context.parameters.require("id", as: ConversationID.self)
            _ = try await desk.tag(id, add: nil, remove: input.tag, admin: session.admin)
            return Self.redirect("/cutie/admin/conversations/\(id)")
        })
        pages.get("pushes", use: rendered { request, _ in
            guard let session = try await accounts.session(request) else { return Self.redirect("/cutie/admin/login") }
            let (pushes, deliveries) = try await environment.database.read { db in
                (try await AdminStore().pushes(conversation: nil, limit: 200, in: db), try await APNsSandbox.deliveries(in: CutiEModule.apnsSandboxTables, deviceToken: nil, limit: 100, on: db))
            }
            return Response.html(page("Pushes", signedIn: session, body: pushesPage(pushes, deliveries: deliveries)))
        })
    }

    // MARK: Pages

    func e(_ text: String?) -> String { HTML.escape(text ?? "") }

    static func time(_ millis: Int64) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(millis) / 1000))
    }

    func page(_ title: String, signedIn session: AdminSession?, body: String) -> String {
        let nav = session.map { session in
            """
            <nav><a href="/cutie/admin">Conversations</a> · <a href="/cutie/admin/pushes">Pushes</a>
            <span class="who">\(e(session.admin.name)) (\(e(session.admin.role)))</span>
            <form method="post" action="/cutie/admin/logout" class="inline"><input type="hidden" name="csrf_token" value="\(e(session.csrfToken))">
            <button type="submit">Sign out</button></form></nav>
            """
        } ?? ""
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(e(title)) · Cuti-E admin</title>
            <style>
            body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:960px;padding:1rem;color:#222}
            nav{display:flex;gap:.6rem;align-items:center;border-bottom:1px solid #ddd;padding-bottom:.5rem;margin-bottom:1rem}
            .who{margin-left:auto;color:#666}.inline{display:inline}
            table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #eee;padding:.35rem;text-align:left;vertical-align:top}
            .badge{background:#d33;color:#fff;border-radius:9px;padding:0 .45rem;font-size:.8rem}
            .msg{border:1px solid #e3e3e3;border-radius:8px;padding:.5rem .7rem;margin:.4rem 0}
            .admin{background:#eef5ff}.note{background:#fff8dc}.system{background:#f3f3f3}
            .meta{color:#777;font-size:.8rem}.error{color:#b00}
            textarea{width:100%;min-height:6rem}fieldset{border:1px solid #ddd;margin:.6rem 0}
            </style></head><body>
            \(nav)<h1>\(e(title))</h1>
            \(body)
            </body></html>
            """
    }

    func loginForm(error: String?) -> String {
        """
        \(error.map { "<p class=\"error\" id=\"error\">\(e($0))</p>" } ?? "")
        <form method="post" action="/cutie/admin/login" id="login">
        <p><label>E-mail <input type="email" name="email" id="email" required autocomplete="username"></label></p>
        <p><label>Password <input type="password" name="password" id="password" required autocomplete="current-password"></label></p>
        <p><button type="submit" id="submit">Sign in</button></p></form>
        """
    }

    func options<Choice: WireChoice>(_ type: Choice.Type, selected: Choice?, any: String? = "any") -> String {
        (any.map { ["<option value=\"\">\($0)</option>"] } ?? []).joined()
            + Choice.rawValues.map { "<option value=\"\(e($0))\"\($0 == selected?.rawValue ? " selected" : "")>\(e($0))</option>" }.joined()
    }

    func inbox(_ listed: AdminDesk.Listed, filters: AdminDesk.Filters, query: (String) -> String?, apps: [CutiEApp], admins: [Admin]) -> String {
        let appOptions = "<option value=\"\">any</option>" + apps.map { "<option value=\"\(e($0.id))\"\($0.id == filters.app ? " selected" : "")>\(e($0.name))</option>" }.joined()
        let assigneeOptions = "<option value=\"\">anyone</option><option value=\"me\"\(filters.assignee == "me" ? " selected" : "")>me</option>"
            + "<option value=\"none\"\(filters.assignee == "none" ? " selected" : "")>nobody</option>"
            + admins.map { "<option value=\"\(e($0.id))\"\($0.id == filters.assignee ? " selected" : "")>\(e($0.name))</option>" }.joined()
        let rows = listed.conversations.map { c in
            """
            <tr class="conversation" data-id="\(e(c.conversation_id.rawValue))"><td><a href="/cutie/admin/conversations/\(e(c.conversation_id.rawValue))">\(e(c.title ?? "(no title)"))</a>
            \(c.unread_count > 0 ? "<span class=\"badge\">\(c.unread_count)</span>" : "")<div class="meta">\(e(c.last_message))</div></td>
            <td>\(e(c.user_name ?? c.user_id ?? c.device_id))</td><td>\(e(c.app_id))</td><td>\(e(c.category.rawValue))</td><td>\(e(c.status.rawValue))</td><td>\(e(c.priority.rawValue))</td>
            <td>\(e((c.tags ?? []).map(\.tag_name).joined(separator: ", ")))</td><td>\(Self.time(c.updated_at))</td></tr>
            """
        }.joined()
        let warnings = apps.flatMap { app in app.warnings.map { "<p class=\"warning\">\(e(app.name)): \(e($0))</p>" } }.joined()
        return warnings + """
            <form method="get" action="/cutie/admin" id="filters">
            <label>App <select name="app_id">\(appOptions)</select></label>
            <label>Status <select name="status">\(options(ConversationStatus.self, selected: filters.status))</select></label>
            <label>Category <select name="category">\(options(ConversationCategory.self, selected: filters.category))</select></label>
            <label>Priority <select name="priority">\(options(ConversationPriority.self, selected: filters.priority))</select></label>
            <label>Assignee <select name="assignee">\(assigneeOptions)</select></label>
            <label>Tag <input name="tag" size="8" value="\(e(filters.tag))"></label>
            <label><input type="checkbox" name="unread" value="true"\(filters.unreadOnly ? " checked" : "")> unread</label>
            <label>Search <input type="search" name="q" value="\(e(filters.search))"></label>
            <button type="submit">Filter</button></form>
            <p>\(listed.total_unread) unread message\(listed.total_unread == 1 ? "" : "s") from users.</p>
            <table id="conversations"><thead><tr><th>Conversation</th><th>User</th><th>App</th><th>Category</th><th>Status</th><th>Priority</th><th>Tags</th><th>Updated</th></tr></thead>
            <tbody>\(rows.isEmpty ? "<tr><td colspan=\"8\">No conversations match.</td></tr>" : rows)</tbody></table>
            """
    }

    func threadPage(_ thread: AdminDesk.Thread, session: AdminSession, canned: [AdminDesk.Canned], admins: [Admin]) -> String {
        let c = thread.conversation
        let csrf = "<input type=\"hidden\" name=\"csrf_token\" value=\"\(e(session.csrfToken))\">"
        let id = e(c.conversation_id.rawValue)
        let messages = (c.messages ?? []).map { m in
            let kind = m.is_internal_note ? "note" : m.sender_type.rawValue
            let who = m.sender_type == .user ? (m.sender_name ?? c.user_name ?? "User") : (m.sender_name ?? m.sender_type.rawValue.capitalized)
            return """
                <div class="msg \(e(kind))" data-sender="\(e(m.sender_type.rawValue))"><div class="meta">\(e(who))\(m.is_internal_note ? " · internal note" : "") · \(Self.time(m.created_at))</div>
                \(e(m.message).replacingOccurrences(of: "\n", with: "<br>"))\(m.attachment_url.map { "<div><a href=\"\(e($0))\" rel=\"noopener noreferrer\">attachment</a></div>" } ?? "")</div>
                """
        }.joined()
        let tags = (c.tags ?? []).map { tag in
            """
            <form method="post" action="/cutie/admin/conversations/\(id)/tags/remove" class="inline">\(csrf)<input type="hidden" name="tag" value="\(e(tag.tag_name))">
            <button type="submit" title="Remove">\(e(tag.tag_name)) ×</button></form>
            """
        }.joined(separator: " ")
        let cannedOptions = "<option value=\"\">(none)</option>" + canned.map { "<option value=\"\(e($0.canned_id))\">\(e($0.title))</option>" }.joined()
        let assignees = "<option value=\"\">nobody</option>" + admins.map { "<option value=\"\(e($0.id))\"\($0.id == c.assigned_admin_id ? " selected" : "")>\(e($0.name))</option>" }.joined()
        let pushes = thread.pushes.map { p in
            "<tr class=\"push\"><td>\(e(p.device_id))</td><td>\(e(p.status.rawValue))</td><td>\(e(p.apns_id))</td><td>\(e(p.reason))</td><td>\(Self.time(p.updated_at))</td></tr>"
        }.joined()
        let canAnswer = session.admin.canAnswer
        return """
            <p class="meta">\(e(c.conversation_id.rawValue)) · app \(e(c.app_id)) · \(e(c.user_name ?? c.user_id ?? c.device_id)) · \(e(c.device_model)) \(e(c.os_version)) · app \(e(c.app_version))</p>
            <p>Status <b id="status">\(e(c.status.rawValue))</b> · priority <b id="priority">\(e(c.priority.rawValue))</b> · category <b id="category">\(e(c.category.rawValue))</b></p>
            <div id="messages">\(messages)</div>
            \(canAnswer ? """
            <form method="post" action="/cutie/admin/conversations/\(id)/reply" id="reply">\(csrf)
            <p><textarea name="message" id="message" placeholder="Your answer"></textarea></p>
            <p><label>Canned response <select name="canned_id" id="canned">\(cannedOptions)</select></label>
            <label><input type="checkbox" name="is_internal_note" value="on"> internal note (not sent to the user)</label>
            <button type="submit" id="send">Send</button></p></form>
            <form method="post" action="/cutie/admin/conversations/\(id)/update" id="update">\(csrf)<fieldset><legend>Change</legend>
            <label>Status <select name="status">\(options(ConversationStatus.self, selected: c.status, any: nil))</select></label>
            <label>Priority <select name="priority">\(options(ConversationPriority.self, selected: c.priority, any: nil))</select></label>
            <label>Category <select name="category">\(options(ConversationCategory.self, selected: c.category, any: nil))</select></label>
            <label>Assignee <select name="assigned_admin_id">\(assignees)</select></label>
            <button type="submit">Save</button></fieldset></form>
            <form method="post" action="/cutie/admin/conversations/\(id)/tags" id="tag">\(csrf)<label>Tag <input name="tag" size="12" required></label>
            <button type="submit">Add</button></form>
            """ : "<p class=\"meta\">Viewers read only.</p>")
            <p>Tags: \(tags.isEmpty ? "none" : tags)</p>
            <h2>Pushes</h2><table id="pushes"><thead><tr><th>Device</th><th>Status</th><th>apns-id</th><th>Reason</th><th>When</th></tr></thead>
            <tbody>\(pushes.isEmpty ? "<tr><td colspan=\"5\">None yet.</td></tr>" : pushes)</tbody></table>
            """
    }

    func pushesPage(_ pushes: [AdminDesk.PushRecord], deliveries: [APNsSandbox.Delivery]) -> String {
        let rows = pushes.map { p in
            """
            <tr class="push"><td><a href="/cutie/admin/conversations/\(e(p.conversation_id.rawValue))">\(e(p.conversation_id.rawValue))</a></td><td>\(e(p.device_id))</td>
            <td>\(e(p.status.rawValue))</td><td>\(p.attempts)</td><td>\(e(p.reason))</td><td>\(Self.time(p.updated_at))</td></tr>
            """
        }.joined()
        let received = deliveries.map { d in
            "<tr class=\"delivery\"><td>\(e(d.apns_id))</td><td>\(e(String(d.device_token.prefix(12))))…</td><td>\(e(d.topic))</td><td><code>\(e(d.payload))</code></td><td>\(Self.time(d.received_at))</td></tr>"
        }.joined()
        return """
            <table id="push-log"><thead><tr><th>Conversation</th><th>Device</th><th>Status</th><th>Tries</th><th>Reason</th><th>When</th></tr></thead>
            <tbody>\(rows.isEmpty ? "<tr><td colspan=\"6\">No pushes yet.</td></tr>" : rows)</tbody></table>
            <h2>Received by the APNs sandbox</h2>
            <table id="apns-sandbox"><thead><tr><th>apns-id</th><th>Device token</th><th>Topic</th><th>Payload</th><th>When</th></tr></thead>
            <tbody>\(received.isEmpty ? "<tr><td colspan=\"5\">Nothing received.</td></tr>" : received)</tbody></table>
            """
    }
}

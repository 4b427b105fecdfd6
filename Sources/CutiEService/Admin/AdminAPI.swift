import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import PurseDatabase
import PurseFormats
import PurseServer

/// The admin dashboard's JSON API under `/v1/admin`: sign in (a session cookie and a CSRF
/// token), then conversations, replies, changes, tags, canned responses, pushes and apps.
/// Every state-changing call needs `X-CSRF-Token`.
struct AdminAPI: Sendable {
    let accounts: AdminAccounts
    let desk: AdminDesk
    var environment: ServerEnvironment { desk.environment }

    struct Login: Decodable { var email: String; var password: String }
    struct SignedIn: Encodable { var admin: Admin; var csrf_token: String }
    struct ReplyBody: Decodable { var message: String; var is_internal_note: Bool?; var client_id: String? }
    struct TagChange: Decodable { var tag: String }
    struct CannedBody: Decodable { var title: String; var body: String }
    struct AppBody: Decodable {
        var app_id: String?
        var name: String
        var bundle_id: String
        var apns_environment: String?
        var team_id: String?
        var require_app_attest: Bool?
        var require_signed_requests: Bool?
    }

    /// App Attest settings; a field left out keeps its value (`team_id: null` clears it).
    struct AppSettings: Decodable {
        var team_id: String??
        var require_app_attest: Bool?
        var attest_environment: String?
        var require_signed_requests: Bool?

        enum CodingKeys: String, CodingKey { case team_id, require_app_attest, attest_environment, require_signed_requests }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            team_id = container.contains(.team_id) ? .some(try container.decodeIfPresent(String.self, forKey: .team_id)) : nil
            require_app_attest = try container.decodeIfPresent(Bool.self, forKey: .require_app_attest)
            attest_environment = try container.decodeIfPresent(String.self, forKey: .attest_environment)
            require_signed_requests = try container.decodeIfPresent(Bool.self, forKey: .require_signed_requests)
        }
    }

    func mount(on router: Router<PurseRequestContext>) {
        let admin = router.group("v1/admin")
        admin.post("login") { request, context in
            var request = request
            try AdminAccounts.checkOrigin(request)
            let body = try await request.decodeJSON(as: Login.self, context: context)
            let (id, session, device) = try await accounts.login(email: body.email, password: body.password, request: request, context: context)
            var headers: HTTPFields = [.setCookie: accounts.setCookie(id)]
            headers.append(HTTPField(name: .setCookie, value: device))
            return try Response.json(SignedIn(admin: session.admin, csrf_token: session.csrfToken), headers: headers)
        }
        admin.post("logout") { request, _ in
            _ = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            try await accounts.logout(request)
            return try Response.json(SDKRoutes.Success(success: true), headers: [.setCookie: AdminAccounts.clearCookie])
        }
        admin.get("me") { request, _ in
            let session = try await accounts.require(request)
            return try Response.json(SignedIn(admin: session.admin, csrf_token: session.csrfToken))
        }
        admin.get("conversations") { request, _ in
            let session = try await accounts.require(request)
            try request.requireOnlyQuery(AdminDesk.Filters.names)
            let query = request.uri.queryParameters
            let filters = try AdminDesk.Filters.parse { query.get($0) }
            return try Response.json(try await desk.list(filters, admin: session.admin))
        }
        admin.get("conversations/{id}") { request, context in
            _ = try await accounts.require(request)
            return try Response.json(try await desk.open(try context.parameters.require("id", as: ConversationID.self), markRead: true))
        }
        admin.post("conversations/{id}/messages") { request, context in
            var request = request
            let session = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            let body = try await request.decodeJSON(as: ReplyBody.self, context: context)
            let reply = try await desk.reply(try context.parameters.require("id", as: ConversationID.self), text: body.message, note: body.is_internal_note ?? false,
                                             admin: session.admin, clientID: body.client_id)
            return try Response.json(reply, status: .created)
        }
        admin.patch("conversations/{id}") { request, context in
            var request = request
            let session = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            let change = try await request.decodeJSON(as: AdminDesk.Change.self, context: context)
            return try Response.json(try await desk.update(try context.parameters.require("id", as: ConversationID.self), change: change, admin: session.admin))
        }
        admin.post("conversations/{id}/tags") { request, context in
            var request = request
            let session = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            let body = try await request.decodeJSON(as: TagChange.self, context: context)
            return try Response.json(TagList(tags: try await desk.tag(try context.parameters.require("id", as: ConversationID.self), add: body.tag, remove: nil, admin: session.admin)))
        }
        admin.delete("conversations/{id}/tags/{tag}") { request, context in
            let session = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            return try Response.json(TagList(tags: try await desk.tag(try context.parameters.require("id", as: ConversationID.self), add: nil,
                                                                      remove: try context.parameters.require("tag"), admin: session.admin)))
        }
        admin.get("canned-responses") { request, _ in
            _ = try await accounts.require(request)
            return try Response.json(CannedList(canned_responses: try await desk.cannedResponses()))
        }
        admin.post("canned-responses") { request, context in
            var request = request
            let session = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            let body = try await request.decodeJSON(as: CannedBody.self, context: context)
            return try Response.json(try await desk.addCanned(title: body.title, body: body.body, admin: session.admin), status: .created)
        }
        admin.get("pushes") { request, _ in
            _ = try await accounts.require(request)
            try request.requireOnlyQuery(["conversation_id"])
            let conversation = request.uri.queryParameters.get("conversation_id").map(ConversationID.init(rawValue:))
            let pushes = try await environment.database.read { db in try await AdminStore().pushes(conversation: conversation, limit: 200, in: db) }
            return try Response.json(PushList(pushes: pushes))
        }
        admin.get("admins") { request, _ in
            _ = try await accounts.require(request)
            return try Response.json(AdminList(admins: try await desk.admins()))
        }
        admin.get("apps") { request, _ in
            _ = try await accounts.require(request)
            return try Response.json(AppList(apps: try await environment.database.read { db in try await CutiEApp.all(in: db) }))
        }
        admin.post("apps") { request, context in
            var request = request
            let session = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            guard session.admin.isOwner else { throw APIError.forbidden("Only owners create apps") }
            let body = try await request.decodeJSON(as: AppBody.self, context: context)
            let app = try await environment.database.transaction { db in
                try await CutiEApp.create(id: body.app_id, name: body.name, bundleID: body.bundle_id, apnsEnvironment: body.apns_environment ?? "production",
                                          teamID: body.team_id, requireAppAttest: body.require_app_attest ?? false,
                                          requireSignedRequests: body.require_signed_requests ?? false, now: environment.now(), in: db)
            }
            return try Response.json(app, status: .created)
        }
        admin.patch("apps/{id}") { request, context in
            var request = request
            let session = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            guard session.admin.isOwner else { throw APIError.forbidden("Only owners change apps") }
            let id = try context.parameters.require("id")
            let body = try await request.decodeJSON(as: AppSettings.self, context: context)
            let app = try await environment.database.transaction { db in
                try await CutiEApp.updateAttest(id, teamID: body.team_id, requireAppAttest: body.require_app_attest, attestEnvironment: body.attest_environment,
                                                requireSignedRequests: body.require_signed_requests, in: db)
            }
            return try Response.json(app)
        }
        mountQuota(on: admin)
    }

    /// The month's quota: who spent it, blocks, quota given back (``AdminQuota``). Everyone
    /// signed in sees it; only owners change it.
    func mountQuota(on admin: RouterGroup<PurseRequestContext>) {
        let quota = AdminQuota(environment: desk.environment, configuration: desk.configuration)
        admin.get("apps/{id}/usage") { request, context in
            _ = try await accounts.require(request)
            return try Response.json(try await quota.usage(app: try context.parameters.require("id")))
        }
        admin.post("apps/{id}/blocks") { request, context in
            var request = request
            let session = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            guard session.admin.isOwner else { throw APIError.forbidden("Only owners block devices and networks") }
            let body = try await request.decodeJSON(as: AdminQuota.BlockBody.self, context: context)
            return try Response.json(try await quota.block(app: try context.parameters.require("id"), body, admin: session.admin), status: .created)
        }
        admin.delete("apps/{id}/blocks/{kind}/{value}") { request, context in
            let session = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            guard session.admin.isOwner else { throw APIError.forbidden("Only owners lift blocks") }
            try await quota.unblock(app: try context.parameters.require("id"), kind: try context.parameters.require("kind"), id: try context.parameters.require("value"))
            return try Response.json(SDKRoutes.Success(success: true))
        }
        admin.post("apps/{id}/usage/give-back") { request, context in
            var request = request
            let session = try await accounts.requireForChange(request, csrf: request.headers[.csrfToken])
            guard session.admin.isOwner else { throw APIError.forbidden("Only owners give quota back") }
            let body = try await request.decodeJSON(as: AdminQuota.GiveBack.self, context: context)
            return try Response.json(try await quota.giveBack(app: try context.parameters.require("id"), conversations: body.conversations))
        }
    }

    struct TagList: Encodable { var tags: [TagBody] }
    struct CannedList: Encodable { var canned_responses: [AdminDesk.Canned] }
    struct PushList: Encodable { var pushes: [AdminDesk.PushRecord] }
    struct AdminList: Encodable { var admins: [Admin] }
    struct AppList: Encodable { var apps: [CutiEApp] }
}

import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// A support staff member. Roles: `owner` (everything, including apps and canned responses),
/// `agent` (answers and manages conversations), `viewer` (reads).
struct Admin: Sendable, Codable {
    var id: String
    var email: String
    var name: String
    var role: String

    enum CodingKeys: String, CodingKey { case id = "admin_id", email, name, role }

    static let roles = ["owner", "agent", "viewer"]

    var canAnswer: Bool { role == "owner" || role == "agent" }
    var isOwner: Bool { role == "owner" }
}

/// A signed-in admin and the session's CSRF token.
struct AdminSession: Sendable {
    var admin: Admin
    var csrfToken: String
}

extension HTTPField.Name {
    /// The admin session's CSRF token, echoed on every state-changing request.
    public static let csrfToken = HTTPField.Name("X-CSRF-Token")!
}

/// Admin accounts (bcrypt passwords) and their sessions: a random id in an `HttpOnly`,
/// `Secure`, `SameSite=Strict` cookie, kept in the database only as its SHA-256, with a CSRF
/// token every state-changing request must echo (`X-CSRF-Token`, or the form's `csrf_token`).
struct AdminAccounts: Sendable {
    let environment: ServerEnvironment
    let sessionHours: Double
    /// The sign-in back-off (``SignInLimiter``): a browser that has signed in before keeps a
    /// ``deviceCookieName`` cookie and is not held by guesses from elsewhere.
    let signIns: SignInLimiter
    /// A bcrypt hash of a random password, checked against when the e-mail is unknown.
    let decoyHash: String

    static let cookieName = "cutie_admin"
    static let deviceCookieName = "cutie_admin_device"
    static let unauthorized = APIError(.unauthorized, "Sign in to the admin dashboard")


    /// Creates an admin (`purse cutie admin create`).
    func create(email: String, name: String, role: String, password: String) async throws -> Admin {
        let email = email.trimmingCharacters(in: .whitespaces).lowercased()
        guard email.utf8.count <= 254, email.range(of: #"^[^@\s]+@[^@\s]+\.[^@\s]+$"#, options: .regularExpression) != nil else {
            throw APIError.badRequest("email must be an e-mail address")
        }
        try Limits.text(name, field: "name", max: 100)
        guard Admin.roles.contains(role) else { throw APIError.badRequest("role must be owner, agent or viewer") }
        guard password.utf8.count >= 10, password.utf8.count <= 72 else { throw APIError.badRequest("password must be 10 to 72 bytes") }
        let hash = try await environment.passwords.hash(password)
        let admin = Admin(id: RandomID.make("adm"), email: email, name: name, role: role)
        let now = environment.now().epochMillis
        try await environment.database.transaction { db in
            guard try await AdminStore().createAdmin(admin, passwordHash: hash, now: now, in: db) else {
                throw APIError.conflict("An admin with e-mail \(email) exists")
            }
        }
        return admin
    }

    /// Checks the password and opens a session: (session id for the cookie, session, the
    /// sign-in device cookie to set).
    func login(email: String, password: String, request: Request, context: PurseRequestContext) async throws -> (id: String, session: AdminSession, deviceCookie: String) {
        let email = email.trimmingCharacters(in: .whitespaces).lowercased()
        guard email.utf8.count <= 254, password.utf8.count <= 72 else { throw APIError(.unauthorized, "Wrong e-mail or password") }
        let account = try await environment.database.read { db in try await AdminStore().account(email: email, in: db) }
        try await signIns.admit(account: account.map { "admin:" + $0.admin.id } ?? "email:" + email,
                                address: environment.clientAddress(of: request, context: context),
                                device: request.cookie(Self.deviceCookieName), now: environment.now())
        // A missing account costs a hash as well, so timing does not tell which e-mails exist.
        let matches = (try? await environment.passwords.verify(password, hash: account?.passwordHash ?? decoyHash)) ?? false
        guard let account, matches, !account.disabled else { throw APIError(.unauthorized, "Wrong e-mail or password") }
        let admin = account.admin
        let id = Base64URL.encode(RandomID.bytes(32))
        let csrf = Base64URL.encode(RandomID.bytes(24))
        let now = environment.now().epochMillis
        let expires = now + Int64(sessionHours * 3_600_000)
        try await environment.database.transaction { db in
            try await AdminStore().startSession(idHash: SecretDigest.hex(id), admin: admin.id, csrfToken: csrf, now: now, expires: expires, in: db)
        }
        let device = try signIns.deviceCredential(for: "admin:" + admin.id)
        return (id, AdminSession(admin: admin, csrfToken: csrf),
                "\(Self.deviceCookieName)=\(device); Path=/; Max-Age=31536000; HttpOnly; Secure; SameSite=Strict")
    }

    func logout(_ request: Request) async throws {
        guard let id = Self.cookie(request) else { return }
        try await environment.database.transaction { db in try await AdminStore().endSession(idHash: SecretDigest.hex(id), in: db) }
    }

    /// The session of the request's cookie, or nil.
    func session(_ request: Request) async throws -> AdminSession? {
        guard let id = Self.cookie(request), id.utf8.count <= 100 else { return nil }
        let now = environment.now().epochMillis
        guard let found = try await environment.database.read({ db in try await AdminStore().session(idHash: SecretDigest.hex(id), now: now, in: db) }) else {
            return nil
        }
        return AdminSession(admin: found.admin, csrfToken: found.csrfToken)
    }

    /// The session, or 401.
    func require(_ request: Request) async throws -> AdminSession {
        guard let session = try await session(request) else { throw Self.unauthorized }
        return session
    }

    /// The session of a state-changing request: signed in, the CSRF token echoed, and (when
    /// the browser says where the request comes from) from this server's own pages.
    func requireForChange(_ request: Request, csrf: String?) async throws -> AdminSession {
        let session = try await require(request)
        guard let csrf, ConstantTime.equal(Array(csrf.utf8), Array(session.csrfToken.utf8)) else {
            throw APIError.forbidden("Missing or wrong CSRF token")
        }
        try Self.checkOrigin(request)
        return session
    }

    /// A browser's `Origin` (when it sends one) must be this server's, and `Sec-Fetch-Site` must
    /// not say another site: a cross-site form cannot act for a signed-in admin.
    static func checkOrigin(_ request: Request) throws {
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site == "cross-site" {
            throw APIError.forbidden("Cross-site request refused")
        }
        if let origin = request.headers[.origin], origin != "null", let host = request.head.authority {
            guard let url = URL(string: origin), let originHost = url.host else { throw APIError.forbidden("Cross-site request refused") }
            let originAuthority = url.port.map { "\(originHost):\($0)" } ?? originHost
            guard originAuthority.lowercased() == host.lowercased() else { throw APIError.forbidden("Cross-site request refused") }
        }
    }

    static func cookie(_ request: Request) -> String? { request.cookie(cookieName) }

    func setCookie(_ id: String) -> String {
        "\(Self.cookieName)=\(id); Path=/; Max-Age=\(Int(sessionHours * 3600)); HttpOnly; Secure; SameSite=Strict"
    }

    static let clearCookie = "\(cookieName)=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Strict"
}

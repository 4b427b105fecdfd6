import HTTPTypes
import Foundation
import Hummingbird
import PurseDatabase
import ServiceLifecycle

/// `/auth/register`, `/auth/login`, `/auth/me`: accounts every system signs in with.
public struct AccountsModule: PurseModule {
    public let id = "accounts"
    public let title = "Accounts"
    public let summary = "Register, sign in and read the signed-in user (JWT bearer sessions)."

    public init() {}

    public var links: [ModuleLink] { [ModuleLink("Who am I (JSON, needs a bearer token)", "/auth/me")] }

    struct RegisterRequest: Decodable {
        var email: String?
        var phone: String?
        var password: String
        var name: String?
    }

    struct LoginRequest: Decodable {
        var email: String?
        var phone: String?
        var password: String
        /// The sign-in device credential from this client's last good sign-in (``SignInLimiter``).
        var device_credential: String?
    }

    /// A good sign-in: the session, and the credential that marks this client as one that has
    /// signed in before (also set as the ``deviceCookie`` cookie, for browsers).
    struct SignedIn: Encodable {
        var token: String
        var user: User
        var device_credential: String
    }

    /// The cookie a browser keeps the sign-in device credential in: sent only to `/auth`.
    static let deviceCookie = "purse_signin_device"

    struct AuthResponse: Encodable {
        var token: String
        var user: User
    }

    struct MeResponse: Encodable {
        var user: User
    }

    public func mount(on router: Router<PurseRequestContext>, environment env: ServerEnvironment) async throws -> [any Service] {
        // Fixed at start so a login for an unknown user costs as much as one for a known user.
        let decoyHash = try await env.passwords.hash(RandomID.hex(bytes: 16))
        let signIns = SignInLimiter(name: "accounts.login", database: env.database, sealer: env.sealer)
        let auth = router.group("auth")

        auth.post("register") { request, context -> Response in
            var request = request
            let body = try await request.decodeJSON(as: RegisterRequest.self, context: context)
            let email = try body.email.map(Self.normalizedEmail)
            let phone = try body.phone.map(Self.normalizedPhone)
            guard email != nil || phone != nil else { throw APIError.badRequest("Either 'email' or 'phone' is required") }
            try Self.validatePassword(body.password)
            if let name = body.name, name.unicodeScalars.count > 100 { throw APIError.badRequest("Field 'name' must be at most 100 characters") }
            let name = body.name?.trimmingCharacters(in: .whitespacesAndNewlines)
            let hash = try await env.passwords.hash(body.password)
            let user: User
            do {
                user = try await env.accounts.create(
                    email: email, phone: phone, name: name?.isEmpty == true ? nil : name, passwordHash: hash, now: env.now()
                )
            } catch AccountStoreError.duplicate(let field) {
                throw APIError.conflict("An account with this \(field) already exists")
            }
            let token = try await env.tokens.issue(for: user.id, purpose: TokenService.sessionPurpose, lifetime: env.configuration.sessionLifetime).token
            return try .json(AuthResponse(token: token, user: user), status: .created)
        }

        auth.post("login") { request, context -> Response in
            var request = request
            let body = try await request.decodeJSON(as: LoginRequest.self, context: context)
            let identifier: LoginIdentifier
            if let email = body.email {
                identifier = .email(email.trimmingCharacters(in: .whitespacesAndNewlines).lowercased())
            } else if let phone = body.phone {
                identifier = .phone((try? Self.normalizedPhone(phone)) ?? phone)
            } else {
                throw APIError.badRequest("Either 'email' or 'phone' is required")
            }
            // One account, one set of buckets, whichever identifier names it.
            let found = try await env.accounts.credentials(for: identifier)
            let account = found.map { "user:" + $0.0.id.rawValue } ?? identifier.limiterKey
            let device = body.device_credential ?? request.cookie(Self.deviceCookie)
            try await signIns.admit(account: account, address: env.clientAddress(of: request, context: context), device: device, now: env.now())
            let matches = try await env.passwords.verify(body.password, hash: found?.passwordHash ?? decoyHash)
            guard let found, matches else { throw APIError(.unauthorized, "Invalid credentials") }
            let token = try await env.tokens.issue(for: found.0.id, purpose: TokenService.sessionPurpose, lifetime: env.configuration.sessionLifetime).token
            let credential = try signIns.deviceCredential(for: account)
            return try .json(SignedIn(token: token, user: found.0, device_credential: credential), headers: [
                .setCookie: "\(Self.deviceCookie)=\(credential); Path=/auth; Max-Age=31536000; HttpOnly; Secure; SameSite=Strict",
            ])
        }

        auth.get("me") { _, context -> Response in
            let user = try context.requireUser()
            guard let found = try await env.accounts.find(id: user.id) else { throw APIError.authenticationRequired }
            return try .json(MeResponse(user: found))
        }
        return []
    }

    /// Lower-cased and trimmed; refuses what cannot be an address.
    static func normalizedEmail(_ raw: String) throws -> String {
        let email = raw.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.utf8.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
              !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
              !email.contains(where: { $0.isWhitespace }) else {
            throw APIError.badRequest("Field 'email' is not a valid email address")
        }
        return email
    }

    /// Digits with an optional leading `+`; spaces, dashes, dots and brackets are dropped.
    static func normalizedPhone(_ raw: String) throws -> String {
        let kept = raw.filter { !" -.()".contains($0) }
        let digits = kept.hasPrefix("+") ? kept.dropFirst() : Substring(kept)
        guard (7...15).contains(digits.count), digits.allSatisfy(\.isASCII), digits.allSatisfy(\.isNumber) else {
            throw APIError.badRequest("Field 'phone' is not a valid phone number")
        }
        return kept
    }

    static func validatePassword(_ password: String) throws {
        guard password.unicodeScalars.count >= 8 else { throw APIError.badRequest("Field 'password' must be at least 8 characters") }
        guard password.utf8.count <= 72 else { throw APIError.badRequest("Field 'password' must be at most 72 bytes") }
    }

    /// `normalizedEmail`'s rule: one `@` between a non-empty local part and a domain with an
    /// inner dot, no whitespace inside, at most 254 bytes.
    static let emailSchema: YAMLValue = [
        "type": "string", "maxLength": 254,
        "pattern": .string("^\(Schema.whitespace)*[^@\(Schema.whitespaceClass)]+@[^@.\(Schema.whitespaceClass)][^@\(Schema.whitespaceClass)]*\\.[^@\(Schema.whitespaceClass)]*[^@.\(Schema.whitespaceClass)]\(Schema.whitespace)*$"),
    ]
    /// `normalizedPhone`'s rule: 7 to 15 digits, an optional `+` first, spaces, dashes, dots and brackets anywhere.
    static let phoneSchema: YAMLValue = Schema.pattern("^[ ().-]*\\+?(?:[ ().-]*[0-9]){7,15}[ ().-]*$")
    /// 8 to 72 characters (at most 72 bytes; bcrypt reads no further).
    static let passwordSchema: YAMLValue = ["type": "string", "minLength": 8, "maxLength": 72]

    public var openAPI: OpenAPIFragment {
        OpenAPIFragment(
            operations: [
                OpenAPIOperation(.post, "/auth/register", summary: "Create an account", tag: "accounts",
                                 request: Schema.ref("RegisterRequest"),
                                 responses: [(201, "Registered and signed in", Schema.ref("AuthResponse")),
                                             (400, "Invalid input", Schema.error), (409, "Email or phone taken", Schema.error)]),
                OpenAPIOperation(.post, "/auth/login", summary: "Sign in", tag: "accounts",
                                 request: Schema.ref("LoginRequest"),
                                 responses: [(200, "Signed in", Schema.ref("AuthResponse")),
                                             (400, "Invalid input", Schema.error), (401, "Invalid credentials", Schema.error),
                                             (429, "Too many sign-in attempts for this account or from this address; Retry-After says when to try again", Schema.error)]),
                OpenAPIOperation(.get, "/auth/me", summary: "The signed-in user", tag: "accounts", requiresAuth: true,
                                 responses: [(200, "The user", Schema.object([("user", Schema.ref("User"))], required: ["user"])),
                                             (401, "Authentication required", Schema.error)]),
            ],
            schemas: [
                ("User", Schema.object([("id", Schema.string), ("email", Schema.string), ("phone", Schema.string),
                                        ("name", Schema.string), ("createdAt", ["type": "string", "format": "date-time"])],
                                       required: ["id", "createdAt"])),
                // An optional field may also be null; at least one of email and phone must be a string.
                ("RegisterRequest", [
                    "type": "object",
                    "properties": [
                        "email": ["anyOf": [Self.emailSchema, ["type": "null"]]], "phone": ["anyOf": [Self.phoneSchema, ["type": "null"]]],
                        "password": Self.passwordSchema, "name": ["type": ["string", "null"], "maxLength": 100],
                    ],
                    "required": ["password"],
                    "anyOf": [["properties": ["email": Self.emailSchema], "required": ["email"]],
                              ["properties": ["phone": Self.phoneSchema], "required": ["phone"]]],
                ]),
                ("LoginRequest", [
                    "type": "object",
                    "properties": ["email": Schema.nullableString, "phone": Schema.nullableString, "password": Schema.string],
                    "required": ["password"],
                    "anyOf": [["properties": ["email": Schema.string], "required": ["email"]],
                              ["properties": ["phone": Schema.string], "required": ["phone"]]],
                ]),
                ("AuthResponse", Schema.object([("token", Schema.string), ("user", Schema.ref("User"))], required: ["token", "user"])),
            ]
        )
    }
}

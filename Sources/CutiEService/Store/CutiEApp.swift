import Foundation
import PurseDatabase
import PurseServer
import SQLKit

/// An app the SDK is configured with.
struct CutiEApp: Sendable, Encodable {
    var id: String
    var name: String
    var bundleID: String
    var apnsEnvironment: String
    var createdAt: Int64
    /// The Apple team id: App Attest's app id is team id "." bundle id.
    var teamID: String?
    /// The App Attest environment whose AAGUID attestations must carry.
    var attestEnvironment: String
    /// Whether every signed request must also carry an App Attest assertion, and a request
    /// with its device token alone must come from an attested device.
    var requireAppAttest: Bool
    /// Whether a request must be signed (`X-Timestamp`, `X-Signature`): the Purse SDK signs every
    /// request; the Cuti-E SDK sends its device token alone, which apps accept unless they set this.
    var requireSignedRequests: Bool = false

    enum CodingKeys: String, CodingKey {
        case id = "app_id", name, bundleID = "bundle_id", apnsEnvironment = "apns_environment", createdAt = "created_at"
        case teamID = "team_id", attestEnvironment = "attest_environment", requireAppAttest = "require_app_attest"
        case requireSignedRequests = "require_signed_requests", warnings
    }

    /// App Attest's app id, when the team id is known.
    var attestAppID: String? { teamID.map { "\($0).\(bundleID)" } }

    /// What an owner should know about the app's settings, said wherever they are shown (the
    /// admin API's answers, the dashboard, the CLI).
    var warnings: [String] {
        requireSignedRequests ? [Self.signedRequestsWarning] : []
    }

    static let signedRequestsWarning = "require_signed_requests is on: only the Purse SDK signs its requests, "
        + "so every device running the Cuti-E SDK is refused (401) until it is turned off"

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(bundleID, forKey: .bundleID)
        try container.encode(apnsEnvironment, forKey: .apnsEnvironment)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(teamID, forKey: .teamID)
        try container.encode(attestEnvironment, forKey: .attestEnvironment)
        try container.encode(requireAppAttest, forKey: .requireAppAttest)
        try container.encode(requireSignedRequests, forKey: .requireSignedRequests)
        try container.encode(warnings, forKey: .warnings)
    }

    static func load(_ id: String, in db: any DatabaseSession) async throws -> CutiEApp? {
        guard let row = try await db.raw("SELECT * FROM cutie_apps WHERE id = \(bind: id)").first() else { return nil }
        return try decode(row)
    }

    static func all(in db: any DatabaseSession) async throws -> [CutiEApp] {
        try await db.raw("SELECT * FROM cutie_apps ORDER BY created_at, id").all().map(decode)
    }

    static func decode(_ row: any SQLRow) throws -> CutiEApp {
        CutiEApp(id: try row.decode(column: "id", as: String.self), name: try row.decode(column: "name", as: String.self),
                 bundleID: try row.decode(column: "bundle_id", as: String.self), apnsEnvironment: try row.decode(column: "apns_environment", as: String.self),
                 createdAt: try row.decode(column: "created_at", as: Int64.self), teamID: try row.decode(column: "team_id", as: String?.self),
                 attestEnvironment: try row.decode(column: "attest_environment", as: String.self),
                 requireAppAttest: try row.decode(column: "require_app_attest", as: Bool.self),
                 requireSignedRequests: try row.decode(column: "require_signed_requests", as: Bool.self))
    }

    static func checkTeamID(_ teamID: String?) throws {
        if let teamID, teamID.utf8.count != 10 || teamID.range(of: #"^[A-Z0-9]{10}$"#, options: .regularExpression) == nil {
            throw APIError.badRequest("team_id must be the ten-character Apple team id (capital letters and digits)")
        }
    }

    /// Creates an app; `id` nil makes one (`app_…`). The App Attest environment follows the APNs
    /// one (development builds push through the APNs sandbox and attest in development).
    static func create(id: String?, name: String, bundleID: String, apnsEnvironment: String, teamID: String? = nil, requireAppAttest: Bool = false,
                       requireSignedRequests: Bool = false, now: Date, in db: any DatabaseSession) async throws -> CutiEApp {
        try Limits.text(name, field: "name", max: 100)
        guard bundleID.utf8.count <= 155, bundleID.range(of: #"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$"#, options: .regularExpression) != nil else {
            throw APIError.badRequest("bundle_id must be a reverse-DNS bundle identifier such as com.example.app")
        }
        guard ["sandbox", "production"].contains(apnsEnvironment) else { throw APIError.badRequest("apns_environment must be sandbox or production") }
        try checkTeamID(teamID)
        if requireAppAttest, teamID == nil { throw APIError.badRequest("require_app_attest needs team_id (App Attest's app id is team id and bundle id)") }
        let id = id ?? RandomID.make("app")
        guard id.utf8.count <= 64, id.range(of: #"^[A-Za-z0-9_-]+$"#, options: .regularExpression) != nil else {
            throw APIError.badRequest("app_id must be letters, digits, _ and -")
        }
        let app = CutiEApp(id: id, name: name, bundleID: bundleID, apnsEnvironment: apnsEnvironment, createdAt: now.epochMillis,
                           teamID: teamID, attestEnvironment: apnsEnvironment == "sandbox" ? "development" : "production", requireAppAttest: requireAppAttest,
                           requireSignedRequests: requireSignedRequests)
        let inserted = try await db.raw("""
            INSERT INTO cutie_apps (id, name, bundle_id, apns_environment, created_at, team_id, attest_environment, require_app_attest, require_signed_requests)
            VALUES (\(bind: app.id), \(bind: app.name), \(bind: app.bundleID), \(bind: app.apnsEnvironment), \(bind: app.createdAt),
                    \(bind: app.teamID), \(bind: app.attestEnvironment), \(bind: app.requireAppAttest), \(bind: app.requireSignedRequests))
            ON CONFLICT (id) DO NOTHING RETURNING id
            """).first()
        guard inserted != nil else { throw APIError.conflict("An app with id \(id) exists") }
        return app
    }

    /// Changes an app's App Attest settings (the admin API's `PATCH /v1/admin/apps/{id}`).
    static func updateAttest(_ id: String, teamID: String??, requireAppAttest: Bool?, attestEnvironment: String?, requireSignedRequests: Bool? = nil,
                             in db: any DatabaseSession) async throws -> CutiEApp {
        guard var app = try await load(id, in: db) else { throw APIError.notFound("App not found") }
        if let teamID {
            try checkTeamID(teamID)
            app.teamID = teamID
        }
        if let attestEnvironment {
            guard ["development", "production"].contains(attestEnvironment) else { throw APIError.badRequest("attest_environment must be development or production") }
            app.attestEnvironment = attestEnvironment
        }
        if let requireAppAttest { app.requireAppAttest = requireAppAttest }
        if let requireSignedRequests { app.requireSignedRequests = requireSignedRequests }
        if app.requireAppAttest, app.teamID == nil { throw APIError.badRequest("require_app_attest needs team_id (App Attest's app id is team id and bundle id)") }
        try await db.raw("""
            UPDATE cutie_apps SET team_id = \(bind: app.teamID), attest_environment = \(bind: app.attestEnvironment), require_app_attest = \(bind: app.requireAppAttest),
                require_signed_requests = \(bind: app.requireSignedRequests)
            WHERE id = \(bind: id)
            """).run()
        return app
    }
}

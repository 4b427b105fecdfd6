import Foundation
import PurseDatabase
import SQLKit

/// A user's id, distinct from every other id type.
public struct UserID: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// A registered user as the API shows it (never with the password hash).
public struct User: Sendable, Codable, Equatable {
    public var id: UserID
    public var email: String?
    public var phone: String?
    public var name: String?
    public var createdAt: Date
}

/// How a user is found at login: by email or by phone.
public enum LoginIdentifier: Sendable, Equatable {
    case email(String)
    case phone(String)

    /// The sign-in limiter's key: the identifier as typed after normalising, bounded in length
    /// (no account's identifier is longer).
    var limiterKey: String {
        switch self {
        case .email(let email): "email:" + email.prefix(256)
        case .phone(let phone): "phone:" + phone.prefix(64)
        }
    }
}

public enum AccountStoreError: Error, Equatable {
    case duplicate(field: String)
}

/// Users and their password hashes.
public struct AccountStore: Sendable {
    let database: Database

    public init(database: Database) { self.database = database }

    /// Inserts a user; `email` and `phone` must already be normalised.
    /// - Throws: ``AccountStoreError/duplicate(field:)`` when the email or phone is taken.
    public func create(email: String?, phone: String?, name: String?, passwordHash: String, now: Date) async throws -> User {
        let user = User(id: UserID(RandomID.make("usr")), email: email, phone: phone, name: name, createdAt: now)
        // ON CONFLICT DO NOTHING makes concurrent registrations of one email safe on both engines:
        // the loser sees no returned row instead of a constraint error.
        let duplicate = try await database.transaction { db -> String? in
            let row = try await db.raw("""
                INSERT INTO users (id, email, phone, name, password_hash, created_at)
                VALUES (\(bind: user.id.rawValue), \(bind: email), \(bind: phone), \(bind: name), \(bind: passwordHash), \(bind: now.epochMillis))
                ON CONFLICT DO NOTHING RETURNING id
                """).first()
            if row != nil { return nil }
            if let email, try await db.raw("SELECT id FROM users WHERE email = \(bind: email)").first() != nil {
                return "email"
            }
            return "phone"
        }
        if let field = duplicate { throw AccountStoreError.duplicate(field: field) }
        return user
    }

    public func find(id: UserID) async throws -> User? {
        try await database.read { db in try await find(id: id, in: db) }
    }

    /// The user with `id`, read in the caller's session (inside its transaction).
    public func find(id: UserID, in db: any DatabaseSession) async throws -> User? {
        try await db.rows(FindByID.self, [.text(id.rawValue)]).first
    }

    /// Every signed-in write looks its user up (``KnownUsers``): kept prepared on PostgreSQL.
    enum FindByID: PreparedDatabaseQuery {
        static let statement = DatabaseStatement("SELECT id, email, phone, name, created_at FROM users WHERE id = $1")
        static let parameterTypes: [SQLValueType] = [.text]
        static let columnTypes: [SQLValueType] = [.text, .text, .text, .text, .integer]
        static func row(_ columns: DatabaseColumns) throws -> User {
            User(
                id: UserID(try columns.text(0)), email: try columns.optionalText(1), phone: try columns.optionalText(2),
                name: try columns.optionalText(3), createdAt: Date(epochMillis: try columns.integer(4))
            )
        }
    }

    /// The user and stored password hash for a login identifier.
    public func credentials(for identifier: LoginIdentifier) async throws -> (User, passwordHash: String)? {
        try await database.read { db in
            let row: (any SQLRow)?
            switch identifier {
            case .email(let email):
                row = try await db.raw("SELECT id, email, phone, name, created_at, password_hash FROM users WHERE email = \(bind: email)").first()
            case .phone(let phone):
                row = try await db.raw("SELECT id, email, phone, name, created_at, password_hash FROM users WHERE phone = \(bind: phone)").first()
            }
            guard let row else { return nil }
            return (try Self.user(from: row), try row.decode(column: "password_hash", as: String.self))
        }
    }

    static func user(from row: any SQLRow) throws -> User {
        User(
            id: UserID(try row.decode(column: "id", as: String.self)),
            email: try row.decode(column: "email", as: String?.self),
            phone: try row.decode(column: "phone", as: String?.self),
            name: try row.decode(column: "name", as: String?.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self))
        )
    }
}

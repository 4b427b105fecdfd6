import Foundation
import PurseDatabase
import PurseServer
import SQLKit

/// App Attest's rows: the challenges a device is given, and the key each device attested with
/// its assertion counter. Each method runs in the session it is given.
struct AttestStore: Sendable {
    /// A device's attested key.
    struct AttestedKey: Sendable {
        var keyID: String
        /// The P-256 public key, X9.63, base64.
        var publicKey: String
        var signCount: Int64
        var environment: String
        var attestedAt: Int64
        var lastAssertionAt: Int64?
    }

    /// Opens a challenge for a device, dropping its expired and used ones (a device keeps at most
    /// a few open).
    func openChallenge(_ challenge: String, app: String, device: String, now: Int64, expires: Int64, in db: any DatabaseSession) async throws {
        try await db.raw("""
            DELETE FROM cutie_attest_challenges WHERE app_id = \(bind: app) AND device_id = \(bind: device)
            AND (expires_at <= \(bind: now) OR used_at IS NOT NULL)
            """).run()
        try await db.raw("""
            INSERT INTO cutie_attest_challenges (challenge, app_id, device_id, created_at, expires_at)
            VALUES (\(bind: challenge), \(bind: app), \(bind: device), \(bind: now), \(bind: expires))
            """).run()
    }

    /// A device's open challenges, newest first (at most five).
    func openChallenges(app: String, device: String, now: Int64, in db: any DatabaseSession) async throws -> [String] {
        try await db.raw("""
            SELECT challenge FROM cutie_attest_challenges
            WHERE app_id = \(bind: app) AND device_id = \(bind: device) AND used_at IS NULL AND expires_at > \(bind: now)
            ORDER BY created_at DESC LIMIT 5
            """).all().map { try $0.decode(column: "challenge", as: String.self) }
    }

    /// Spends a challenge by one conditional update: of any number of attestations racing with
    /// it, on any replica, one finds it open. False when it was spent already.
    func spendChallenge(_ challenge: String, app: String, device: String, now: Int64, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            UPDATE cutie_attest_challenges SET used_at = \(bind: now)
            WHERE challenge = \(bind: challenge) AND app_id = \(bind: app) AND device_id = \(bind: device) AND used_at IS NULL
            RETURNING challenge
            """).first() != nil
    }

    /// The device a key is attested for, if any.
    func owner(ofKey keyID: String, in db: any DatabaseSession) async throws -> (app: String, device: String)? {
        guard let row = try await db.raw("SELECT app_id, device_id FROM cutie_attested_keys WHERE key_id = \(bind: keyID)").first() else { return nil }
        return (try row.decode(column: "app_id", as: String.self), try row.decode(column: "device_id", as: String.self))
    }

    /// Records a device's attested key, replacing any earlier one; its counter starts at zero.
    func storeKey(app: String, device: String, keyID: String, publicKey: String, environment: String, receiptBytes: Int, now: Int64,
                  in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO cutie_attested_keys (app_id, device_id, key_id, public_key, sign_count, environment, receipt_bytes, attested_at)
            VALUES (\(bind: app), \(bind: device), \(bind: keyID), \(bind: publicKey), 0, \(bind: environment), \(bind: receiptBytes), \(bind: now))
            ON CONFLICT (app_id, device_id) DO UPDATE SET key_id = excluded.key_id, public_key = excluded.public_key, sign_count = 0,
                environment = excluded.environment, receipt_bytes = excluded.receipt_bytes, attested_at = excluded.attested_at, last_assertion_at = NULL
            """).run()
    }

    func attestedKey(app: String, device: String, in db: any DatabaseSession) async throws -> AttestedKey? {
        guard let row = try await db.raw("""
            SELECT key_id, public_key, sign_count, environment, attested_at, last_assertion_at FROM cutie_attested_keys
            WHERE app_id = \(bind: app) AND device_id = \(bind: device)
            """).first() else { return nil }
        return AttestedKey(keyID: try row.decode(column: "key_id", as: String.self), publicKey: try row.decode(column: "public_key", as: String.self),
                           signCount: try row.decode(column: "sign_count", as: Int64.self), environment: try row.decode(column: "environment", as: String.self),
                           attestedAt: try row.decode(column: "attested_at", as: Int64.self),
                           lastAssertionAt: try row.decode(column: "last_assertion_at", as: Int64?.self))
    }

    func forgetKey(app: String, device: String, in db: any DatabaseSession) async throws {
        try await db.raw("DELETE FROM cutie_attested_keys WHERE app_id = \(bind: app) AND device_id = \(bind: device)").run()
    }

    /// Stores an assertion's counter when it is above the stored one; false for a replayed or
    /// reordered assertion, whichever replica stored the counter.
    func storeCounter(_ counter: Int64, app: String, device: String, now: Int64, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            UPDATE cutie_attested_keys SET sign_count = \(bind: counter), last_assertion_at = \(bind: now)
            WHERE app_id = \(bind: app) AND device_id = \(bind: device) AND sign_count < \(bind: counter)
            RETURNING sign_count
            """).first() != nil
    }
}

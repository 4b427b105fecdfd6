import Foundation
import NexusVocabulary
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

/// Nexus's storage: credentials, challenges, spent tokens, products, PINs, transactions.
struct NexusStore: Sendable {
    struct StoredCredential {
        var id: String
        var userID: UserID
        var publicKey: Data
        var signCount: UInt32
        var transports: [String]
        var attestationFormat: String
        var name: String?
        var createdAt: Date
        var lastUsedAt: Date?

        var wire: NexusWire.Credential {
            NexusWire.Credential(id: id, name: name, transports: transports, attestationFormat: attestationFormat, createdAt: createdAt, lastUsedAt: lastUsedAt)
        }
    }

    struct Challenge {
        var userID: UserID
        var ceremony: Ceremony
        var intent: ChallengeIntent
        var userVerification: String
        var expiresAt: Date
        var usedAt: Date?
    }

    // MARK: Credentials

    func credentials(of user: UserID, in db: any DatabaseSession) async throws -> [StoredCredential] {
        try await db.raw("SELECT * FROM nexus_credentials WHERE user_id = \(bind: user.rawValue) ORDER BY created_at, id").all().map(Self.credential)
    }

    func credential(id: String, in db: any DatabaseSession) async throws -> StoredCredential? {
        try await db.raw("SELECT * FROM nexus_credentials WHERE id = \(bind: id)").first().map(Self.credential)
    }

    func insertCredential(_ credential: StoredCredential, in db: any DatabaseSession) async throws -> Bool {
        let transports = String(decoding: try JSONEncoder().encode(credential.transports), as: UTF8.self)
        let row = try await db.raw("""
            INSERT INTO nexus_credentials (id, user_id, public_key, sign_count, transports, aaguid, attestation_format, name, created_at)
            VALUES (\(bind: credential.id), \(bind: credential.userID.rawValue), \(bind: Base64URL.encode(credential.publicKey)),
                    \(bind: Int64(credential.signCount)), \(bind: transports), '', \(bind: credential.attestationFormat),
                    \(bind: credential.name), \(bind: credential.createdAt.epochMillis))
            ON CONFLICT DO NOTHING RETURNING id
            """).first()
        return row != nil
    }

    /// Stores the new counter; fails (returns false) if another request moved it first.
    func advanceSignCount(credentialID: String, from old: UInt32, to new: UInt32, now: Date, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            UPDATE nexus_credentials SET sign_count = \(bind: Int64(new)), last_used_at = \(bind: now.epochMillis)
            WHERE id = \(bind: credentialID) AND sign_count = \(bind: Int64(old)) RETURNING id
            """).first() != nil
    }

    func deleteCredential(id: String, user: UserID, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("DELETE FROM nexus_credentials WHERE id = \(bind: id) AND user_id = \(bind: user.rawValue) RETURNING id").first() != nil
    }

    static func credential(_ row: any SQLRow) throws -> StoredCredential {
        let transports = try JSONDecoder().decode([String].self, from: Data(try row.decode(column: "transports", as: String.self).utf8))
        return StoredCredential(
            id: try row.decode(column: "id", as: String.self),
            userID: UserID(try row.decode(column: "user_id", as: String.self)),
            publicKey: Base64URL.decode(try row.decode(column: "public_key", as: String.self)) ?? Data(),
            signCount: UInt32(clamping: try row.decode(column: "sign_count", as: Int64.self)),
            transports: transports,
            attestationFormat: try row.decode(column: "attestation_format", as: String.self),
            name: try row.decode(column: "name", as: String?.self),
            createdAt: Date(epochMillis: try row.decode(column: "created_at", as: Int64.self)),
            lastUsedAt: try row.decode(column: "last_used_at", as: Int64?.self).map { Date(epochMillis: $0) }
        )
    }

    // MARK: Challenges

    func insertChallenge(_ challenge: String, user: UserID, ceremony: Ceremony, intent: ChallengeIntent, userVerification: String, expiresAt: Date, now: Date, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO nexus_challenges (challenge, user_id, ceremony, intent, user_verification, expires_at, created_at)
            VALUES (\(bind: challenge), \(bind: user.rawValue), \(bind: ceremony.rawValue), \(bind: intent.rawValue), \(bind: userVerification), \(bind: expiresAt.epochMillis), \(bind: now.epochMillis))
            """).run()
    }

    /// Deletes challenges that expired more than a day before `now` (``ChallengePruner`` calls it
    /// in the background, so options requests do not). Returns how many went.
    @discardableResult
    func pruneChallenges(now: Date, in db: any DatabaseSession) async throws -> Int {
        try await db.raw("DELETE FROM nexus_challenges WHERE expires_at < \(bind: now.epochMillis - 86_400_000) RETURNING challenge").all().count
    }

    /// A challenge as stored (used or not), without changing it.
    func challenge(_ challenge: String, in db: any DatabaseSession) async throws -> Challenge? {
        guard let row = try await db.raw("SELECT * FROM nexus_challenges WHERE challenge = \(bind: challenge)").first() else { return nil }
        return try Self.challenge(row, usedAt: try row.decode(column: "used_at", as: Int64?.self).map { Date(epochMillis: $0) })
    }

    /// Marks a challenge used and returns it as it was before (so the caller can tell why it is
    /// unusable). One statement when the challenge is fresh; the explanation is read only when not.
    func consumeChallenge(_ challenge: String, now: Date, in db: any DatabaseSession) async throws -> Challenge? {
        if let row = try await db.raw("""
            UPDATE nexus_challenges SET used_at = \(bind: now.epochMillis) WHERE challenge = \(bind: challenge) AND used_at IS NULL
            RETURNING user_id, ceremony, intent, user_verification, expires_at
            """).first() {
            return try Self.challenge(row, usedAt: nil)
        }
        return try await self.challenge(challenge, in: db)
    }

    static func challenge(_ row: any SQLRow, usedAt: Date?) throws -> Challenge {
        Challenge(
            userID: UserID(try row.decode(column: "user_id", as: String.self)),
            ceremony: try row.decode(column: "ceremony", as: Ceremony.self, of: "nexus_challenges"),
            intent: try row.decode(column: "intent", as: ChallengeIntent.self, of: "nexus_challenges"),
            userVerification: try row.decode(column: "user_verification", as: String.self),
            expiresAt: Date(epochMillis: try row.decode(column: "expires_at", as: Int64.self)),
            usedAt: usedAt
        )
    }

    // MARK: Tokens

    /// Records a step-up token as spent. False when it was spent before.
    func spendToken(jti: String, user: UserID, now: Date, in db: any DatabaseSession) async throws -> Bool {
        try await db.insertedRows(SpendToken.self, [.text(jti), .text(user.rawValue), .integer(now.epochMillis)]) == 1
    }

    // The top-up's statements are kept prepared on PostgreSQL: every top-up runs them.

    enum SpendToken: PreparedDatabaseStatement {
        static let statement = DatabaseStatement("INSERT INTO nexus_used_tokens (jti, user_id, used_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING")
        static let parameterTypes: [SQLValueType] = [.text, .text, .integer]
    }

    // MARK: Products

    func products(in db: any DatabaseSession) async throws -> [NexusWire.Product] {
        try await db.raw("SELECT * FROM nexus_products WHERE active ORDER BY category, network, min_amount").all().map(Self.product)
    }

    static func product(_ row: any SQLRow) throws -> NexusWire.Product {
        NexusWire.Product(
            code: try row.decode(column: "code", as: String.self),
            supplierSlug: try row.decode(column: "supplier_slug", as: String.self),
            network: try row.decode(column: "network", as: String.self),
            category: try row.decode(column: "category", as: String.self),
            name: try row.decode(column: "name", as: String.self),
            minAmount: Int(try row.decode(column: "min_amount", as: Int64.self)),
            maxAmount: Int(try row.decode(column: "max_amount", as: Int64.self)),
            supplierServiceID: try row.decode(column: "supplier_service_id", as: String?.self),
            supplierVariationCode: try row.decode(column: "supplier_variation_code", as: String?.self)
        )
    }

    // MARK: PINs

    struct PinState {
        var hash: String
        var lockedUntil: Date?
    }

    func pin(of user: UserID, in db: any DatabaseSession) async throws -> PinState? {
        guard let row = try await db.raw("SELECT * FROM nexus_pins WHERE user_id = \(bind: user.rawValue)").first() else { return nil }
        return PinState(
            hash: try row.decode(column: "pin_hash", as: String.self),
            lockedUntil: try row.decode(column: "locked_until", as: Int64?.self).map { Date(epochMillis: $0) }
        )
    }

    func setPin(hash: String, user: UserID, now: Date, in db: any DatabaseSession) async throws {
        try await db.raw("""
            INSERT INTO nexus_pins (user_id, pin_hash, failed_attempts, locked_until, updated_at)
            VALUES (\(bind: user.rawValue), \(bind: hash), 0, NULL, \(bind: now.epochMillis))
            ON CONFLICT (user_id) DO UPDATE SET pin_hash = excluded.pin_hash, failed_attempts = 0, locked_until = NULL, updated_at = excluded.updated_at
            """).run()
    }

    /// What ``reservePinAttempt(user:maxAttempts:lockout:now:in:)`` found.
    enum PinAttempt: Equatable {
        case notSet
        case locked(until: Date)
        /// As many attempts as the PIN allows are being compared right now: try again shortly.
        case busy
        /// The attempt is counted: compare `hash`; it is attempt `number` since the last success
        /// or lockout.
        case reserved(hash: String, number: Int)
    }

    /// Counts an attempt before the PIN is compared, in one statement — so that however many
    /// requests come at once, at most `maxAttempts` of them are compared. A lockout that has
    /// passed starts the count again. The caller resets the count when the PIN matches, and calls
    /// ``failedPinAttempt(user:maxAttempts:lockout:now:in:)`` when it does not: only wrong PINs
    /// lock, so a burst of top-ups with the right PIN is never locked out (past the limit it is
    /// asked to retry). Attempts still counted a minute later belong to requests that never
    /// finished (a crash between the count and the answer); they count as wrong.
    func reservePinAttempt(user: UserID, maxAttempts: Int, lockout: TimeInterval, now: Date, in db: any DatabaseSession) async throws -> PinAttempt {
        let millis = now.epochMillis
        if let row = try await db.query(Self.reservePinAttempt, [.text(user.rawValue), .integer(millis), .integer(Int64(maxAttempts))]).first {
            return .reserved(hash: try row.decode(column: "pin_hash", as: String.self), number: try row.decode(column: "failed_attempts", as: Int.self))
        }
        guard let row = try await db.raw("SELECT locked_until, updated_at FROM nexus_pins WHERE user_id = \(bind: user.rawValue)").first() else { return .notSet }
        if let until = try row.decode(column: "locked_until", as: Int64?.self), until > millis { return .locked(until: Date(epochMillis: until)) }
        if try row.decode(column: "updated_at", as: Int64.self) < millis - 60_000 {
            let until = now.addingTimeInterval(lockout)
            try await db.raw("UPDATE nexus_pins SET locked_until = \(bind: until.epochMillis), updated_at = \(bind: millis) WHERE user_id = \(bind: user.rawValue)").run()
            return .locked(until: until)
        }
        return .busy
    }

    /// Values: user, now, the limit.
    static let reservePinAttempt = DatabaseStatement("""
        UPDATE nexus_pins SET
            failed_attempts = CASE WHEN locked_until IS NULL THEN failed_attempts + 1 ELSE 1 END,
            locked_until = NULL,
            updated_at = $2
        WHERE user_id = $1 AND (locked_until IS NULL OR locked_until <= $2)
          AND (locked_until IS NOT NULL OR failed_attempts < $3)
        RETURNING pin_hash, failed_attempts
        """)

    /// A compared PIN was wrong: the attempt stays counted, and the count reaching the limit
    /// starts the lockout.
    func failedPinAttempt(user: UserID, maxAttempts: Int, lockout: TimeInterval, now: Date, in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE nexus_pins SET locked_until = \(bind: now.addingTimeInterval(lockout).epochMillis), updated_at = \(bind: now.epochMillis)
            WHERE user_id = \(bind: user.rawValue) AND locked_until IS NULL AND failed_attempts >= \(bind: maxAttempts)
            """).run()
    }

    func resetPinFailures(user: UserID, in db: any DatabaseSession) async throws {
        try await db.raw("UPDATE nexus_pins SET failed_attempts = 0, locked_until = NULL WHERE user_id = \(bind: user.rawValue)").run()
    }

    // MARK: Transactions

    func insertTransaction(
        id: TransactionID, user: UserID, kind: TransactionKind, productCode: String?, phone: String?, amount: Int, cashbackUsed: Int,
        cashbackEarned: Int, method: TopupMethod?, status: TransactionStatus = .completed, ledgerTransaction: LedgerTransactionID, now: Date,
        in db: any DatabaseSession
    ) async throws {
        try await db.run(InsertTransaction.self, [
            .text(id.rawValue), .text(user.rawValue), .text(kind.rawValue), .text(productCode), .text(phone), .integer(amount), .integer(cashbackUsed),
            .integer(cashbackEarned), .text(method?.rawValue), .text(status.rawValue), .text(ledgerTransaction.rawValue), .integer(now.epochMillis),
        ])
    }

    enum InsertTransaction: PreparedDatabaseStatement {
        static let statement = DatabaseStatement("""
            INSERT INTO nexus_transactions (id, user_id, kind, product_code, recipient_phone, amount, cashback_used, cashback_earned, method, status, ledger_transaction_id, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
            """)
        static let parameterTypes: [SQLValueType] = [.text, .text, .text, .text, .text, .integer, .integer, .integer, .text, .text, .text, .integer]
    }

    // MARK: Deliveries

    /// A top-up's delivery through the supplier.
    struct Delivery: Sendable {
        var transactionID: TransactionID
        var requestID: String
        var serviceID: String
        var variationCode: String?
        var phone: String
        var amount: Int
        var attempts: Int
        var jobID: String?
        /// The transaction's status: `pending` while the delivery is open.
        var status: TransactionStatus
        var order: SupplierOrder {
            SupplierOrder(requestID: requestID, serviceID: serviceID, variationCode: variationCode, phone: phone, amount: amount)
        }
    }

    func insertDelivery(_ delivery: Delivery, supplier: String, now: Date, in db: any DatabaseSession) async throws {
        try await db.run(InsertDelivery.self, [
            .text(delivery.transactionID.rawValue), .text(supplier), .text(delivery.requestID), .text(delivery.serviceID), .text(delivery.variationCode),
            .text(delivery.phone), .integer(delivery.amount), .text(delivery.jobID), .integer(now.epochMillis),
        ])
    }

    enum InsertDelivery: PreparedDatabaseStatement {
        static let statement = DatabaseStatement("""
            INSERT INTO nexus_deliveries (transaction_id, supplier, request_id, service_id, variation_code, phone, amount, job_id, attempts, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $9, $9)
            """)
        static let parameterTypes: [SQLValueType] = [.text, .text, .text, .text, .text, .text, .integer, .text, .integer]
    }

    func delivery(of transactionID: TransactionID, in db: any DatabaseSession) async throws -> Delivery? {
        guard let row = try await db.raw("""
            SELECT d.*, t.status FROM nexus_deliveries d JOIN nexus_transactions t ON t.id = d.transaction_id
            WHERE d.transaction_id = \(bind: transactionID.rawValue)
            """).first() else { return nil }
        return Delivery(
            transactionID: transactionID, requestID: try row.decode(column: "request_id", as: String.self),
            serviceID: try row.decode(column: "service_id", as: String.self), variationCode: try row.decode(column: "variation_code", as: String?.self),
            phone: try row.decode(column: "phone", as: String.self), amount: Int(try row.decode(column: "amount", as: Int64.self)),
            attempts: try row.decode(column: "attempts", as: Int.self), jobID: try row.decode(column: "job_id", as: String?.self),
            status: try row.decode(column: "status", as: TransactionStatus.self, of: "nexus_transactions")
        )
    }

    /// Records an attempt that left the delivery open.
    func recordAttempt(_ transactionID: TransactionID, answer: String, now: Date, in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE nexus_deliveries SET attempts = attempts + 1, last_answer = \(bind: String(answer.prefix(500))), updated_at = \(bind: now.epochMillis)
            WHERE transaction_id = \(bind: transactionID.rawValue)
            """).run()
    }

    /// What a settled top-up moved: enough to post its completion or refund.
    struct SettledTopup {
        var user: UserID
        var amount: Int
        var cashbackUsed: Int
        var cashbackEarned: Int
    }

    /// Moves a pending top-up to `status`, once: of any number of concurrent callers (replicas
    /// included), exactly one gets the row back; the others find it settled.
    func settle(_ transactionID: TransactionID, status: TransactionStatus, failureReason: String?, in db: any DatabaseSession) async throws -> SettledTopup? {
        try await db.rows(Settle.self, [.text(status.rawValue), .text(failureReason), .text(transactionID.rawValue)]).first
    }

    /// Values: status, failure reason, transaction.
    enum Settle: PreparedDatabaseQuery {
        static let statement = DatabaseStatement("""
            UPDATE nexus_transactions SET status = $1, failure_reason = $2 WHERE id = $3 AND status = 'pending'
            RETURNING user_id, amount, cashback_used, cashback_earned
            """)
        static let parameterTypes: [SQLValueType] = [.text, .text, .text]
        static let columnTypes: [SQLValueType] = [.text, .integer, .integer, .integer]
        static func row(_ columns: DatabaseColumns) throws -> SettledTopup {
            // Amounts are whole naira, checked against the catalogue's bounds when written.
            guard let amount = Int(exactly: try columns.integer(1)), let used = Int(exactly: try columns.integer(2)),
                  let earned = Int(exactly: try columns.integer(3)) else { throw UnreadableColumn("nexus_transactions", "amount") }
            return SettledTopup(user: UserID(try columns.text(0)), amount: amount, cashbackUsed: used, cashbackEarned: earned)
        }
    }

    /// Records the verdict; returns the delivery's job, which is no longer needed.
    func finishDelivery(_ transactionID: TransactionID, reference: String?, answer: String, now: Date, in db: any DatabaseSession) async throws -> String? {
        try await db.rows(FinishDelivery.self, [.text(reference), .text(String(answer.prefix(500))), .integer(now.epochMillis), .text(transactionID.rawValue)])
            .first ?? nil
    }

    /// Values: supplier reference, last answer, time, transaction.
    enum FinishDelivery: PreparedDatabaseQuery {
        static let statement = DatabaseStatement("""
            UPDATE nexus_deliveries SET attempts = attempts + 1, supplier_reference = $1, last_answer = $2, updated_at = $3
            WHERE transaction_id = $4 RETURNING job_id
            """)
        static let parameterTypes: [SQLValueType] = [.text, .text, .integer, .text]
        static let columnTypes: [SQLValueType] = [.text]
        static func row(_ columns: DatabaseColumns) throws -> String? { try columns.optionalText(0) }
    }

    /// Newest first; `cursor` is the last item's `created_at:id` of the previous page.
    func transactions(of user: UserID, limit: Int, cursor: (Int64, String)?, in db: any DatabaseSession) async throws -> [NexusWire.Transaction] {
        let rows: [any SQLRow]
        if let (millis, id) = cursor {
            rows = try await db.raw("""
                SELECT * FROM nexus_transactions WHERE user_id = \(bind: user.rawValue)
                AND (created_at < \(bind: millis) OR (created_at = \(bind: millis) AND id < \(bind: id)))
                ORDER BY created_at DESC, id DESC LIMIT \(bind: limit)
                """).all()
        } else {
            rows = try await db.raw("""
                SELECT * FROM nexus_transactions WHERE user_id = \(bind: user.rawValue) ORDER BY created_at DESC, id DESC LIMIT \(bind: limit)
                """).all()
        }
        return try rows.map(Self.transaction)
    }

    static func transaction(_ row: any SQLRow) throws -> NexusWire.Transaction {
        NexusWire.Transaction(
            transactionId: try row.decode(column: "id", as: TransactionID.self, of: "nexus_transactions"),
            kind: try row.decode(column: "kind", as: TransactionKind.self, of: "nexus_transactions"),
            productCode: try row.decode(column: "product_code", as: String?.self),
            recipientPhone: try row.decode(column: "recipient_phone", as: String?.self),
            amount: Int(try row.decode(column: "amount", as: Int64.self)),
            cashbackUsed: Int(try row.decode(column: "cashback_used", as: Int64.self)),
            cashbackEarned: Int(try row.decode(column: "cashback_earned", as: Int64.self)),
            method: try row.decode(column: "method", as: TopupMethod?.self, of: "nexus_transactions"),
            status: try row.decode(column: "status", as: TransactionStatus.self, of: "nexus_transactions"),
            timestamp: Timestamp.iso(Date(epochMillis: try row.decode(column: "created_at", as: Int64.self))),
            failureReason: try row.decode(column: "failure_reason", as: String?.self)
        )
    }

    func transaction(_ id: TransactionID, of user: UserID, in db: any DatabaseSession) async throws -> NexusWire.Transaction? {
        try await db.raw("SELECT * FROM nexus_transactions WHERE id = \(bind: id.rawValue) AND user_id = \(bind: user.rawValue)").all().map(Self.transaction).first
    }

    func createdAt(ofTransaction id: TransactionID, in db: any DatabaseSession) async throws -> Int64? {
        try await db.raw("SELECT created_at FROM nexus_transactions WHERE id = \(bind: id.rawValue)").first()?.decode(column: "created_at", as: Int64.self)
    }
}

import ChippiPayVocabulary
import Foundation
import PurseDatabase
import PurseServer
import SQLKit

/// The provider's gasless wallets and the accounts linked to pay for them. Every method runs in
/// the session it is given, so a route decides what one transaction holds.
struct WalletStore: Sendable {
    /// Where a wallet stands: its id reserved for an app user, or saved with its key.
    typealias Status = WalletStatus

    struct Wallet: Sendable {
        var id: WalletID
        var externalUserID: String
        var publicKey: String?
        var address: String?
        var encryptedPrivateKey: String?
        var status: Status
        var deployTransactionHash: String?
        var createdAt: Int64
        /// What the app sent when preparing the wallet, as JSON text.
        var metadata: String?
    }

    static let columns: SQLQueryString =
        "id, external_user_id, public_key, address, encrypted_private_key, status, deploy_transaction_hash, created_at, metadata"

    /// A merchant's wallet by id.
    func wallet(_ id: WalletID, merchant: String, in db: any DatabaseSession) async throws -> Wallet? {
        try await db.raw("SELECT \(Self.columns) FROM chippi_wallets WHERE id = \(bind: id.rawValue) AND merchant_id = \(bind: merchant)").first().map(Self.wallet)
    }

    /// A merchant's wallet for one of its app users.
    func wallet(ofUser externalUserID: String, merchant: String, in db: any DatabaseSession) async throws -> Wallet? {
        try await db.raw("""
            SELECT \(Self.columns) FROM chippi_wallets WHERE merchant_id = \(bind: merchant) AND external_user_id = \(bind: externalUserID)
            """).first().map(Self.wallet)
    }

    /// Reserves a wallet id for an app user.
    func prepare(id: WalletID, merchant: String, externalUserID: String, metadata: String, now: Date, in db: any DatabaseSession) async throws {
        let millis = now.epochMillis
        try await db.raw("""
            INSERT INTO chippi_wallets (id, merchant_id, external_user_id, status, metadata, created_at, updated_at)
            VALUES (\(bind: id.rawValue), \(bind: merchant), \(bind: externalUserID), \(bind: Status.prepared.rawValue), \(bind: metadata), \(bind: millis), \(bind: millis))
            """).run()
    }

    /// Saves a prepared wallet's key and account address: it is active from then on.
    func activate(_ id: WalletID, publicKey: String, encryptedPrivateKey: String, address: String, now: Date, in db: any DatabaseSession) async throws {
        try await db.raw("""
            UPDATE chippi_wallets SET public_key = \(bind: publicKey), encrypted_private_key = \(bind: encryptedPrivateKey),
                address = \(bind: address), status = \(bind: Status.active.rawValue), updated_at = \(bind: now.epochMillis) WHERE id = \(bind: id.rawValue)
            """).run()
    }

    func recordDeploy(of wallet: WalletID, transactionHash: String, in db: any DatabaseSession) async throws {
        try await db.raw("UPDATE chippi_wallets SET deploy_transaction_hash = \(bind: transactionHash) WHERE id = \(bind: wallet.rawValue)").run()
    }

    /// Links an account that may pay for the wallet's purchases; false when it was linked before.
    func linkPayer(_ address: String, to wallet: WalletID, now: Date, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            INSERT INTO chippi_wallet_payers (wallet_id, address, created_at) VALUES (\(bind: wallet.rawValue), \(bind: address), \(bind: now.epochMillis))
            ON CONFLICT DO NOTHING RETURNING address
            """).first() != nil
    }

    func isLinkedPayer(_ address: String, of wallet: WalletID, in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("SELECT address FROM chippi_wallet_payers WHERE wallet_id = \(bind: wallet.rawValue) AND address = \(bind: address)").first() != nil
    }

    static func wallet(_ row: any SQLRow) throws -> Wallet {
        let typed = try row.decode(column: "status", as: Status.self, of: "chippi_wallets")
        return Wallet(
            id: try row.decode(column: "id", as: WalletID.self, of: "chippi_wallets"), externalUserID: try row.decode(column: "external_user_id", as: String.self),
            publicKey: try row.decode(column: "public_key", as: String?.self), address: try row.decode(column: "address", as: String?.self),
            encryptedPrivateKey: try row.decode(column: "encrypted_private_key", as: String?.self), status: typed,
            deployTransactionHash: try row.decode(column: "deploy_transaction_hash", as: String?.self),
            createdAt: try row.decode(column: "created_at", as: Int64.self), metadata: try row.decode(column: "metadata", as: String?.self)
        )
    }
}

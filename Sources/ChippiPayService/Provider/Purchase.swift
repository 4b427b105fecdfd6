import ChippiPayVocabulary
import Foundation
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit
import Starknet

/// A service purchase: paid by a vault withdrawal, then fulfilled (or failed and refunded).
struct Purchase: Sendable {
    typealias Status = PurchaseStatus

    var id: PurchaseID
    var merchantID: String
    var walletID: WalletID
    var skuID: String
    var reference: String
    var centavos: Int64
    /// STRK the price needed, in fri.
    var strk: UInt256
    /// STRK the vault transaction paid, in fri (at least `strk`).
    var paid: UInt256
    /// The account that paid, where a refund goes.
    var payer: Felt
    var vaultHash: Felt
    var status: Status
    var failureReason: String?
    var refundHash: Felt?
    var metadata: String
    var created: Int64
    var updated: Int64
    /// Why the payment was refused when the purchase was asked for (short, from an account not
    /// linked to the wallet): such a purchase is never delivered; it fails with its whole payment
    /// refunded.
    var refusal: String? = nil

    /// The wire form (`GET /v1/sku-transactions/{id}` and the webhooks' `data`).
    struct Body: Codable, Sendable, Equatable {
        var transaction_id: PurchaseID
        var status: Status
        var sku_id: String
        var reference: String
        var amount: String
        var currency: String
        var strk_amount: String
        var wallet_id: WalletID
        var vault_transaction_hash: String
        var failure_reason: String?
        var refund_transaction_hash: String?
        var metadata: JSONValue
        /// Unix milliseconds.
        var created_at: Int64
        var updated_at: Int64
    }

    var body: Body {
        Body(transaction_id: id, status: status, sku_id: skuID, reference: reference, amount: Money.pesos(centavos), currency: SKU.currency,
             strk_amount: STRKAmount.format(strk), wallet_id: walletID, vault_transaction_hash: vaultHash.description,
             failure_reason: failureReason, refund_transaction_hash: refundHash?.description,
             metadata: (try? JSONDecoder().decode(JSONValue.self, from: Data(metadata.utf8))) ?? .object([:]),
             created_at: created, updated_at: updated)
    }

    /// Inserts the purchase; false when its vault transaction already paid for one.
    func insert(in db: any DatabaseSession) async throws -> Bool {
        try await db.raw("""
            INSERT INTO chippi_sku_transactions (id, merchant_id, wallet_id, sku_id, reference, amount_centavos, currency, strk_fri, paid_fri,
                payer, vault_transaction_hash, status, metadata, created_at, updated_at, refusal)
            VALUES (\(bind: id.rawValue), \(bind: merchantID), \(bind: walletID.rawValue), \(bind: skuID), \(bind: reference), \(bind: centavos), \(bind: SKU.currency),
                \(bind: strk.description), \(bind: paid.description), \(bind: payer.description), \(bind: vaultHash.description),
                \(bind: status.rawValue), \(bind: metadata), \(bind: created), \(bind: updated), \(bind: refusal))
            ON CONFLICT DO NOTHING RETURNING id
            """).first() != nil
    }

    static let columns = """
        id, merchant_id, wallet_id, sku_id, reference, amount_centavos, strk_fri, paid_fri, payer, vault_transaction_hash, status,
        failure_reason, refund_transaction_hash, metadata, created_at, updated_at, refusal
        """

    init(id: PurchaseID, merchantID: String, walletID: WalletID, skuID: String, reference: String, centavos: Int64, strk: UInt256, paid: UInt256,
         payer: Felt, vaultHash: Felt, status: Status, failureReason: String?, refundHash: Felt?, metadata: String, created: Int64, updated: Int64) {
        self.id = id
        self.merchantID = merchantID
        self.walletID = walletID
        self.skuID = skuID
        self.reference = reference
        self.centavos = centavos
        self.strk = strk
        self.paid = paid
        self.payer = payer
        self.vaultHash = vaultHash
        self.status = status
        self.failureReason = failureReason
        self.refundHash = refundHash
        self.metadata = metadata
        self.created = created
        self.updated = updated
    }

    init(row: any SQLRow) throws {
        func felt(_ column: String) throws -> Felt {
            guard let felt = Felt(try row.decode(column: column, as: String.self)) else { throw UnreadableColumn("chippi_sku_transactions", column) }
            return felt
        }
        func amount(_ column: String) throws -> UInt256 {
            guard let value = UInt256(try row.decode(column: column, as: String.self)) else { throw UnreadableColumn("chippi_sku_transactions", column) }
            return value
        }
        let table = "chippi_sku_transactions"
        let status = try row.decode(column: "status", as: Status.self, of: table)
        self.init(id: try row.decode(column: "id", as: PurchaseID.self, of: table), merchantID: try row.decode(column: "merchant_id", as: String.self),
                  walletID: try row.decode(column: "wallet_id", as: WalletID.self, of: table), skuID: try row.decode(column: "sku_id", as: String.self),
                  reference: try row.decode(column: "reference", as: String.self), centavos: try row.decode(column: "amount_centavos", as: Int64.self),
                  strk: try amount("strk_fri"), paid: try amount("paid_fri"), payer: try felt("payer"), vaultHash: try felt("vault_transaction_hash"),
                  status: status, failureReason: try row.decode(column: "failure_reason", as: String?.self),
                  refundHash: try row.decode(column: "refund_transaction_hash", as: String?.self).flatMap { Felt($0) },
                  metadata: try row.decode(column: "metadata", as: String.self),
                  created: try row.decode(column: "created_at", as: Int64.self), updated: try row.decode(column: "updated_at", as: Int64.self))
        refusal = try row.decode(column: "refusal", as: String?.self)
    }

    static func load(_ id: PurchaseID, merchant: String? = nil, in db: any DatabaseSession) async throws -> Purchase? {
        var query = SQLQueryString("SELECT \(unsafeRaw: columns) FROM chippi_sku_transactions WHERE id = \(bind: id.rawValue)")
        if let merchant { query.appendInterpolation(unsafeRaw: " AND merchant_id = "); query.appendInterpolation(bind: merchant) }
        return try await db.raw(query).first().map(Purchase.init(row:))
    }

    /// A merchant's purchases, newest first (optionally one wallet's), after the purchase `after`
    /// in that order.
    static func list(merchant: String, wallet: WalletID?, after: Purchase?, limit: Int, in db: any DatabaseSession) async throws -> [Purchase] {
        var query = SQLQueryString("SELECT \(unsafeRaw: columns) FROM chippi_sku_transactions WHERE merchant_id = \(bind: merchant)")
        if let wallet { query.appendInterpolation(unsafeRaw: " AND wallet_id = "); query.appendInterpolation(bind: wallet.rawValue) }
        if let after {
            query.appendInterpolation(unsafeRaw: " AND (created_at < "); query.appendInterpolation(bind: after.created)
            query.appendInterpolation(unsafeRaw: " OR (created_at = "); query.appendInterpolation(bind: after.created)
            query.appendInterpolation(unsafeRaw: " AND id < "); query.appendInterpolation(bind: after.id.rawValue)
            query.appendInterpolation(unsafeRaw: "))")
        }
        query.appendInterpolation(unsafeRaw: " ORDER BY created_at DESC, id DESC LIMIT \(limit)")
        return try await db.raw(query).all().map(Purchase.init(row:))
    }
}

import ChippiPayVocabulary
import Foundation
import HTTPTypes
import Logging
import PurseDatabase
import PurseFormats
import PurseHTTP
import PurseHTTPNIO
import PurseServer
import SQLKit
import Starknet

/// Delivers purchases through the sandbox supplier and tells the merchant.
///
/// The supplier completes every purchase after `CHIPPI_SANDBOX_FULFILMENT_SECONDS`, except
/// references that end in `0000` (refused: the purchase fails and its STRK goes back to the
/// payer on chain). Each status change is a signed webhook to the merchant's URL.
struct Fulfilment: Sendable {
    let environment: ServerEnvironment
    let payments: VaultPayments

    var logger: Logger { environment.logger }

    /// Why the sandbox supplier refuses a reference, or nil when it delivers.
    static func supplierRefusal(reference: String) -> String? {
        reference.hasSuffix("0000") ? "The supplier refused reference \(reference) (references ending in 0000 fail in the sandbox)" : nil
    }

    /// The fulfilment job: settles a pending purchase once. A failure refunds first, then records
    /// the refund's hash with the failure — so a crash between the two re-runs the job, and the
    /// refund is not sent again because the job looks for it on chain first (see `refundOnce`).
    func fulfil(_ job: Job) async throws {
        let payload = try job.decode(FulfilmentJob.self)
        guard let purchase = try await environment.database.read({ db in try await Purchase.load(payload.transactionID, in: db) }),
              purchase.status == .pending else { return }
        let now = environment.now().epochMillis
        if let refusal = purchase.refusal ?? Self.supplierRefusal(reference: purchase.reference) {
            let refund = try await refundOnce(purchase, amount: purchase.paid)
            try await settle(purchase, status: .failed, reason: refusal + "; \(STRKAmount.format(purchase.paid)) STRK refunded", refund: refund, now: now)
        } else if let excess = purchase.paid.subtracting(purchase.strk), excess > .zero {
            // Paid more than the quote: the excess goes back to the payer, as a failed
            // purchase's whole payment does, and the purchase records that refund.
            let refund = try await refundOnce(purchase, amount: excess)
            try await settle(purchase, status: .completed, reason: nil, refund: refund, now: now)
        } else {
            try await settle(purchase, status: .completed, reason: nil, refund: nil, now: now)
        }
    }

    /// The refund of `amount` for `purchase`, back where it was paid from (the payer's vault
    /// balance, or account).
    func refundOnce(_ purchase: Purchase, amount: UInt256) async throws -> Felt {
        try await refundOnce(paidBy: purchase.vaultHash, payer: purchase.payer, amount: amount)
    }

    /// The refund of `amount` of the payment `hash` to `payer`: the one already on chain when the
    /// provider's account has sent it (found by its deposit or transfer event for the payer
    /// carrying that amount after the payment, and recorded as no purchase's or returned
    /// payment's refund), else a new one.
    func refundOnce(paidBy hash: Felt, payer: Felt, amount: UInt256) async throws -> Felt {
        let paid = try await payments.provider.transactionReceipt(hash)
        let paidIn = paid.blockNumber
        let intoVault = payments.refundsIntoVault && payments.paidFromVault(paid)
        let (source, key) = intoVault ? (payments.vaultAddress, VaultPayments.depositKey) : (payments.tokenAddress, VaultPayments.transferKey)
        var token: String?
        for _ in 0..<20 {
            let page = try await payments.provider.events(address: source, keys: [[key], [payments.paymentAddress], [payer]],
                                                          from: paidIn.map { .number($0) }, chunkSize: 1000, continuationToken: token)
            for event in page.events where event.data == amount.felts {
                let refund = event.transactionHash.description
                let claimed = try await environment.database.read { db in
                    if try await db.raw("SELECT id FROM chippi_sku_transactions WHERE refund_transaction_hash = \(bind: refund)").first() != nil { return true }
                    return try await db.raw("SELECT transaction_hash FROM chippi_incoming_payments WHERE refund_transaction_hash = \(bind: refund)").first() != nil
                }
                if !claimed { return event.transactionHash }
            }
            guard let next = page.continuationToken else { break }
            token = next
        }
        return try await payments.refund(amount, to: payer, intoVault: intoVault)
    }

    /// Moves a pending purchase to its final state and queues the webhook, in one transaction.
    func settle(_ purchase: Purchase, status: Purchase.Status, reason: String?, refund: Felt?, now: Int64) async throws {
        try await environment.database.transaction { db in
            let changed = try await db.raw("""
                UPDATE chippi_sku_transactions SET status = \(bind: status.rawValue), failure_reason = \(bind: reason),
                    refund_transaction_hash = \(bind: refund?.description), updated_at = \(bind: now)
                WHERE id = \(bind: purchase.id.rawValue) AND status = 'pending' RETURNING id
                """).first() != nil
            guard changed, let settled = try await Purchase.load(purchase.id, in: db) else { return }
            try await Webhooks.enqueue(event: "sku_transaction.\(status.rawValue)", purchase: settled, environment: environment, in: db)
        }
        environment.jobs.wakeup.signal()
    }
}

/// The merchant's webhooks: `POST` to its URL with `Chipi-Signature: t=…,v1=…` (HMAC-SHA256 of
/// `"{t}.{body}"` with the merchant's webhook secret), retried with backoff by the job queue;
/// every attempt recorded under `GET /v1/webhook-deliveries`.
enum Webhooks {
    struct Payload: Codable {
        var id: String
        var type: String
        var created: Int64
        var data: Purchase.Body
    }

    struct DeliveryJob: Codable { var deliveryID: String }

    static func enqueue(event: String, purchase: Purchase, environment: ServerEnvironment, in db: any DatabaseSession) async throws {
        guard let row = try await db.raw("SELECT webhook_url FROM chippi_merchants WHERE id = \(bind: purchase.merchantID)").first(),
              let url = try row.decode(column: "webhook_url", as: String?.self) else { return }
        let now = environment.now()
        let id = RandomID.make("whd")
        let payload = Payload(id: RandomID.make("evt"), type: event, created: now.epochMillis / 1000, data: purchase.body)
        let text = String(decoding: try JSONEncoder.chippi.encode(payload), as: UTF8.self)
        try await db.raw("""
            INSERT INTO chippi_webhook_deliveries (id, merchant_id, event, transaction_id, url, payload, status, created_at, updated_at)
            VALUES (\(bind: id), \(bind: purchase.merchantID), \(bind: event), \(bind: purchase.id.rawValue), \(bind: url), \(bind: text), \(bind: WebhookDelivery.Status.pending.rawValue),
                \(bind: now.epochMillis), \(bind: now.epochMillis))
            """).run()
        try await environment.jobs.enqueue(kind: ProviderRoutes.webhookJob, payload: DeliveryJob(deliveryID: id), runAt: now, maxAttempts: 10, in: db)
    }

    /// One delivery attempt; throws (so the queue retries) unless the merchant answered 2xx.
    static func deliver(_ job: Job, environment: ServerEnvironment, transport: any HTTPTransport) async throws {
        let delivery = try job.decode(DeliveryJob.self)
        guard let row = try await environment.database.read({ db in
            try await db.raw("""
                SELECT d.url, d.payload, d.status, m.webhook_secret, m.previous_webhook_secret, m.previous_webhook_secret_until FROM chippi_webhook_deliveries d
                JOIN chippi_merchants m ON m.id = d.merchant_id WHERE d.id = \(bind: delivery.deliveryID)
                """).first()
        }), try row.decode(column: "status", as: WebhookDelivery.Status.self, of: "chippi_webhook_deliveries") != .delivered else { return }
        let payload = Data(try row.decode(column: "payload", as: String.self).utf8)
        // During a secret's roll, a signature with each secret (the merchant's receiver knows one).
        let secrets = try MerchantKeys.webhookSecrets(row, sealer: environment.sealer, now: environment.now()).signing(at: environment.now())
        var statusCode: Int?
        var failure: String?
        if let url = URL(string: try row.decode(column: "url", as: String.self)) {
            do {
                let response = try await transport.send(TransportRequest(
                    method: .post, url: url,
                    headerFields: [.contentType: "application/json", .userAgent: "ChipiPay-Webhooks/1.0",
                              .chipiSignature: WebhookSignature.header(payload: payload, secrets: secrets, timestamp: Int(environment.now().timeIntervalSince1970))],
                    body: payload, timeout: .seconds(10)))
                statusCode = response.status.code
                if response.status.kind != .successful { failure = "HTTP \(response.status.code)" }
            } catch {
                failure = String(describing: error).prefix(300).description
            }
        } else {
            failure = "The webhook URL is not a URL"
        }
        let final: WebhookDelivery.Status = failure == nil ? .delivered : (job.attempts + 1 >= job.maxAttempts ? .failed : .pending)
        let (code, error) = (statusCode, failure)
        try await environment.database.transaction { db in
            try await db.raw("""
                UPDATE chippi_webhook_deliveries SET status = \(bind: final.rawValue), attempts = attempts + 1, last_status_code = \(bind: code),
                    last_error = \(bind: error), updated_at = \(bind: environment.now().epochMillis) WHERE id = \(bind: delivery.deliveryID)
                """).run()
        }
        if let failure { throw WebhookDeliveryError(reason: failure) }
    }

    struct WebhookDeliveryError: Error, CustomStringConvertible {
        var reason: String
        var description: String { "webhook delivery failed: \(reason)" }
    }
}

/// A delivery as `GET /v1/webhook-deliveries` lists it.
struct WebhookDelivery: Codable, Sendable {
    /// Where a webhook delivery stands.
    enum Status: String, WireChoice {
        /// Waiting for its (next) attempt.
        case pending
        /// The merchant answered 2xx.
        case delivered
        /// Every attempt failed.
        case failed
    }

    var id: String
    var event: String
    var transaction_id: PurchaseID
    var url: String
    var status: Status
    var attempts: Int
    var last_status_code: Int?
    var last_error: String?
    var created_at: Int64
    var updated_at: Int64

    static func list(merchant: String, limit: Int, in db: any DatabaseSession) async throws -> [WebhookDelivery] {
        try await db.raw("""
            SELECT id, event, transaction_id, url, status, attempts, last_status_code, last_error, created_at, updated_at
            FROM chippi_webhook_deliveries WHERE merchant_id = \(bind: merchant) ORDER BY created_at DESC, id DESC LIMIT \(unsafeRaw: String(limit))
            """).all().map { row in
            WebhookDelivery(id: try row.decode(column: "id", as: String.self), event: try row.decode(column: "event", as: String.self),
                            transaction_id: try row.decode(column: "transaction_id", as: PurchaseID.self, of: "chippi_webhook_deliveries"),
                            url: try row.decode(column: "url", as: String.self),
                            status: try row.decode(column: "status", as: Status.self, of: "chippi_webhook_deliveries"), attempts: try row.decode(column: "attempts", as: Int.self),
                            last_status_code: try row.decode(column: "last_status_code", as: Int?.self),
                            last_error: try row.decode(column: "last_error", as: String?.self),
                            created_at: try row.decode(column: "created_at", as: Int64.self), updated_at: try row.decode(column: "updated_at", as: Int64.self))
        }
    }
}

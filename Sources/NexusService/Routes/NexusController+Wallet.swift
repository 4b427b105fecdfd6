import Foundation
import HTTPTypes
import Hummingbird
import NexusVocabulary
import PurseDatabase
import PurseFormats
import PurseServer
import SQLKit

// MARK: - Wallet routes: products, top-ups, balance, history, PIN, sandbox funding

extension NexusController {
    static let walletKind = "nexus_wallet"
    static let cashbackKind = "nexus_cashback"

    func mountWallet(on router: Router<PurseRequestContext>) {
        router.get("products") { _, _ -> Response in
            let products = try await catalogue.products()
            struct List: Encodable { var products: [NexusWire.Product] }
            return try .json(List(products: products))
        }

        let user = router.group("user").add(middleware: NexusErrorShape()).add(middleware: RequireAuthentication())
        user.post("topup") { request, context -> Response in
            let userID = try context.requireUser().id
            var request = request
            let buffer = try await request.collectJSONBody(context: context)
            let body = try NexusFailure.decoding { try JSONBody.decode(NexusWire.TopupRequest.self, from: buffer) }
            return try await topup(body, request: request, buffer: buffer, user: userID)
        }
        user.get("balance") { _, context -> Response in
            let userID = try context.requireUser().id
            let balance = try await environment.database.read { db in try await balances(of: userID, in: db) }
            return try .json(balance)
        }
        user.get("transactions") { request, context -> Response in
            let userID = try context.requireUser().id
            return try await transactions(of: userID, query: request.uri.queryParameters)
        }
        user.get("transactions/{id}") { _, context -> Response in
            let userID = try context.requireUser().id
            let id = try context.parameters.require("id")
            guard let transaction = try await environment.database.read({ db in try await store.transaction(TransactionID(id), of: userID, in: db) }) else {
                throw NexusFailure.error(.notFound, "transaction_not_found", "No such transaction")
            }
            return try .json(NexusWire.TransactionAnswer(data: transaction))
        }
        user.put("pin") { request, context -> Response in
            let userID = try context.requireUser().id
            var request = request
            let buffer = try await request.collectJSONBody(context: context)
            let body = try NexusFailure.decoding { try JSONBody.decode(NexusWire.PinRequest.self, from: buffer) }
            return try await setPin(body, user: userID)
        }

        guard configuration.sandboxFunding else { return }
        router.group("sandbox/nexus").add(middleware: NexusErrorShape()).add(middleware: RequireAuthentication()).post("fund") { request, context -> Response in
            let userID = try context.requireUser().id
            var request = request
            let buffer = try await request.collectJSONBody(context: context)
            let body = try NexusFailure.decoding { try JSONBody.decode(NexusWire.FundRequest.self, from: buffer) }
            guard (1...10_000_000).contains(body.amount) else {
                throw NexusFailure.error(.badRequest, "invalid_amount", "amount must be between 1 and 10000000 naira", param: "amount")
            }
            return try await environment.idempotent(request, body: buffer, user: userID) { db in
                let now = now()
                let funding = try await environment.ledger.account(owner: nil, kind: "nexus_funding", currency: Naira.currency, allowNegative: true, now: now, in: db)
                let wallet = try await environment.ledger.account(owner: userID, kind: Self.walletKind, currency: Naira.currency, now: now, in: db)
                let ledgerID = try await environment.ledger.post(
                    kind: "nexus.funding", memo: "Sandbox wallet funding",
                    entries: [LedgerEntry(funding.id, -Naira.kobo(body.amount)), LedgerEntry(wallet.id, Naira.kobo(body.amount))], now: now, in: db
                )
                let id = TransactionID(RandomID.make("tx"))
                try await store.insertTransaction(
                    id: id, user: userID, kind: .funding, productCode: nil, phone: nil, amount: body.amount, cashbackUsed: 0,
                    cashbackEarned: 0, method: nil, ledgerTransaction: ledgerID, now: now, in: db
                )
                let balance = try await environment.ledger.balance(of: wallet.id, in: db)
                let response = NexusWire.FundResponse(data: .init(transactionId: id, amount: body.amount, balance: Naira.naira(balance), timestamp: Timestamp.iso(now)))
                return (.created, try JSONCoding.encoder.encode(response))
            }
        }
    }

    /// `0` + 10 digits, or `+234` + 10 digits (the national number without its leading 0). ASCII
    /// digits only, read as UTF-8 bytes: this runs for every top-up.
    static func isNigerianPhone(_ phone: String) -> Bool {
        var bytes = phone.utf8[...]
        if bytes.starts(with: "+234".utf8) {
            bytes = bytes.dropFirst(4)
        } else if bytes.first == UInt8(ascii: "0") {
            bytes = bytes.dropFirst()
        } else {
            return false
        }
        return bytes.count == 10 && bytes.first != UInt8(ascii: "0") && bytes.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// The recipient as typed, without its spaces (`0801 234 5678`).
    static func phoneWithoutSpaces(_ phone: String) -> String {
        guard phone.utf8.contains(UInt8(ascii: " ")) else { return phone }
        return String(decoding: phone.utf8.filter { $0 != UInt8(ascii: " ") }, as: UTF8.self)
    }

    /// `POST /user/topup`: validate, then (unless it is a retry of a finished top-up) authorise,
    /// pay and deliver.
    func topup(_ body: NexusWire.TopupRequest, request: Request, buffer: ByteBuffer, user: UserID) async throws -> Response {
        let order = try await validate(body, user: user)
        // A retry of a finished top-up is answered from its record: it spends no PIN attempt
        // and no step-up token.
        let call: IdempotentCall
        switch try await environment.begin(request, body: buffer, user: user, keyRequired: false) {
        case .replay(let answer): return answer
        case .fresh(let fresh): call = fresh
        }
        let authorisation: Authorisation
        do {
            authorisation = try await authorise(body, user: user)
        } catch let busy as APIError where busy.status == .tooManyRequests && call.key != nil {
            // Retries of one top-up sent together: the one checking the PIN answers them all
            // (pin_busy is the PIN check's only 429).
            for _ in 0..<50 {
                try await Task.sleep(for: .milliseconds(100))
                if case .replay(let answer) = try await environment.begin(call) { return answer }
            }
            throw busy
        }
        switch try await pay(order, authorisation: authorisation, call: call) {
        case .replayed(let answer): return answer
        case .fresh(let paid, let answer): return try await deliver(paid, call: call, user: user, pending: answer)
        }
    }

    /// A top-up request checked against the catalogue: what to buy, for whom, and how much.
    struct TopupOrder: Sendable {
        var product: NexusWire.Product
        var serviceID: String
        var phone: String
        var amount: Int
        var useCashback: Bool
    }

    /// How a top-up is authorised: a fresh step-up token (spent with the payment) or the PIN.
    struct Authorisation: Sendable {
        var method: TopupMethod
        var tokenID: String?
    }

    /// A paid top-up: the answer so far (pending) and the delivery it queued.
    struct PaidTopup: Sendable {
        var response: NexusWire.TopupResponse
        var delivery: NexusStore.Delivery
    }

    /// 1. The request itself: product, recipient and amount.
    func validate(_ body: NexusWire.TopupRequest, user: UserID) async throws -> TopupOrder {
        guard let product = try await catalogue.product(code: body.productCode) else {
            throw NexusFailure.error(.badRequest, "unknown_product", "Unknown product \(body.productCode)", param: "productCode")
        }
        if let slug = body.supplierSlug, slug != product.supplierSlug {
            throw NexusFailure.error(.badRequest, "supplier_mismatch", "Product \(product.code) is not sold by \(slug)", param: "supplierSlug")
        }
        let recipient: String
        if let given = body.recipientPhone {
            recipient = given
        } else if let own = try await environment.accounts.find(id: user)?.phone {
            recipient = own
        } else {
            throw NexusFailure.error(.badRequest, "recipient_required", "recipientPhone is required: your account has no phone number to top up", param: "recipientPhone")
        }
        let phone = Self.phoneWithoutSpaces(recipient)
        guard Self.isNigerianPhone(phone) else {
            throw NexusFailure.error(.badRequest, "invalid_phone", "recipientPhone must be a Nigerian number: 0 followed by 10 digits, or +234 followed by 10 digits", param: "recipientPhone")
        }
        guard body.amount >= product.minAmount, body.amount <= product.maxAmount else {
            let range = product.minAmount == product.maxAmount ? "exactly ₦\(product.minAmount)" : "between ₦\(product.minAmount) and ₦\(product.maxAmount)"
            throw NexusFailure.error(.badRequest, "invalid_amount", "amount for \(product.code) must be \(range)", param: "amount")
        }
        guard let serviceID = product.supplierServiceID else {
            throw NexusFailure.error(.badRequest, "product_unavailable", "\(product.name) cannot be bought right now", param: "productCode")
        }
        return TopupOrder(product: product, serviceID: serviceID, phone: phone, amount: body.amount, useCashback: body.useCashback == true)
    }

    /// 2. The authorisation: a fresh step-up token, or the PIN.
    func authorise(_ body: NexusWire.TopupRequest, user: UserID) async throws -> Authorisation {
        switch (body.verificationToken, body.pin) {
        case (.some, .some):
            throw NexusFailure.error(.badRequest, "ambiguous_authorisation", "Send either verificationToken or pin, not both")
        case (nil, nil):
            throw NexusFailure.error(.unauthorized, "authorisation_required", "A verificationToken or pin is required")
        case (let token?, nil):
            return Authorisation(method: .biometric, tokenID: try await checkVerificationToken(token, user: user, intent: .transaction))
        case (nil, let pin?):
            try await checkPin(pin, user: user)
            return Authorisation(method: .pin, tokenID: nil)
        }
    }

    /// 3. The payment, once per Idempotency-Key when one is sent (a verification token is spent
    ///    in the same transaction, so the biometric path is exactly-once without a key too): the
    ///    price moves to the buyer's hold and the delivery job is queued with it.
    func pay(_ order: TopupOrder, authorisation: Authorisation, call: IdempotentCall) async throws -> IdempotentOutcome<PaidTopup> {
        let user = call.user
        return try await environment.commit(call) { db in
            let now = now()
            if let tokenID = authorisation.tokenID, try await !store.spendToken(jti: tokenID, user: user, now: now, in: db) {
                throw NexusFailure.error(.unauthorized, "token_used", "Verification token already used")
            }
            let ledger = environment.ledger
            let accounts = try await ledger.accountIDs([
                LedgerAccountSpec(owner: user, kind: Self.walletKind, currency: Naira.currency),
                LedgerAccountSpec(owner: user, kind: Self.cashbackKind, currency: Naira.currency),
                LedgerAccountSpec(owner: user, kind: AirtimeDelivery.holdKind, currency: Naira.currency),
            ], now: now, in: db)
            let (wallet, cashback, hold) = (accounts[0], accounts[1], accounts[2])

            let amount = Naira.kobo(order.amount)
            let cashbackUsed = order.useCashback ? min(amount, try await ledger.balance(of: cashback, in: db)) : 0
            let earned = order.amount * configuration.cashbackPercent / 100
            // The price is held until the supplier answers; the cashback earned is credited on delivery.
            var entries = [LedgerEntry(hold, amount)]
            if amount - cashbackUsed > 0 { entries.append(LedgerEntry(wallet, -(amount - cashbackUsed))) }
            if cashbackUsed > 0 { entries.append(LedgerEntry(cashback, -cashbackUsed)) }
            let id = TransactionID(RandomID.make("tx"))
            let posting: LedgerPosting
            do {
                posting = try await ledger.posting(kind: "nexus.topup", memo: "\(order.product.name) for \(order.phone)", reference: id.rawValue, entries: entries, now: now, in: db)
            } catch LedgerError.insufficientFunds {
                throw NexusFailure.error(HTTPResponse.Status(code: 402, reasonPhrase: "Payment Required"), "insufficient_balance", "Insufficient balance", param: "amount")
            }
            try await store.insertTransaction(
                id: id, user: user, kind: .topup, productCode: order.product.code, phone: order.phone, amount: order.amount,
                cashbackUsed: Naira.naira(cashbackUsed), cashbackEarned: earned, method: authorisation.method, status: .pending,
                ledgerTransaction: posting.id, now: now, in: db
            )
            let job = try await delivery.enqueue(transactionID: id, now: now, in: db)
            let record = NexusStore.Delivery(
                transactionID: id, requestID: VTpassClient.requestID(at: now), serviceID: order.serviceID, variationCode: order.product.supplierVariationCode,
                phone: order.phone, amount: order.amount, attempts: 0, jobID: job, status: .pending
            )
            try await store.insertDelivery(record, supplier: delivery.supplier.name, now: now, in: db)
            // Paid with cashback alone, the posting left the wallet alone: read its balance.
            let balance = if let moved = posting.balances[wallet] { moved } else { try await ledger.balance(of: wallet, in: db) }
            let response = NexusWire.TopupResponse(message: "Topup is being processed", data: .init(
                transactionId: id, status: .pending, amount: order.amount, balance: Naira.naira(balance),
                timestamp: Timestamp.iso(now), cashbackUsed: Naira.naira(cashbackUsed), cashbackEarned: earned
            ))
            // Provisional: the answer becomes the delivery's verdict (or is confirmed as pending)
            // below, and a retry meanwhile waits for it, so every copy gets the first answer.
            return IdempotentEffect(PaidTopup(response: response, delivery: record), status: .ok, body: response.json, provisional: true)
        }
    }

    /// 4. The delivery, waited for as long as the supplier's first answer takes (bounded by its
    ///    timeout). A verdict's answer is stored under the key in the transaction that settles
    ///    the top-up, so a retry gets exactly this answer; the client follows a pending one with
    ///    GET /user/transactions/{id}.
    func deliver(_ paid: PaidTopup, call: IdempotentCall, user: UserID, pending: Response) async throws -> Response {
        let final: @Sendable (AirtimeDelivery.State, any DatabaseSession) async throws -> Data = { state, db in
            let body = try await answer(paid.response, after: state, user: user, in: db)
            try await environment.amend(call, status: .ok, body: body, in: db)
            return body
        }
        let attempt: AirtimeDelivery.Attempt<Data>
        do {
            attempt = try await delivery.attempt(paid.delivery, settled: final)
        } catch {
            // The paid top-up's answer stays the pending one it was stored with.
            try? await environment.settle(call)
            throw error
        }
        if let body = attempt.answer { return .jsonData(body) }
        guard attempt.state != .pending else {
            // No verdict yet: the pending answer is the first answer, and so every retry's.
            try await environment.settle(call)
            return pending
        }
        // Another settler (the job, another replica) was first: the answer follows its verdict.
        return .jsonData(try await environment.database.transaction { db in try await final(attempt.state, db) })
    }

    /// The top-up's answer once its delivery has a verdict.
    func answer(_ paid: NexusWire.TopupResponse, after state: AirtimeDelivery.State, user: UserID, in db: any DatabaseSession) async throws -> Data {
        var response = paid
        switch state {
        case .pending:
            break
        case .completed:
            response.message = "Topup successful"
            response.data.status = .completed
        case .failed(let reason):
            response.success = false
            response.message = "\(reason). ₦\(response.data.amount) is back in your wallet."
            response.data.status = .failed
            response.data.balance = try await balances(of: user, in: db).balance
        }
        return response.json
    }

    /// Verifies a step-up token's signature, expiry, owner and intent. Returns its `jti`, which the
    /// caller spends inside its transaction.
    func checkVerificationToken(_ token: String, user: UserID, intent: ChallengeIntent) async throws -> String {
        let claims: PurseTokenClaims
        do {
            claims = try await environment.tokens.verify(token, purpose: Self.verificationPurpose)
        } catch TokenError.expired {
            throw NexusFailure.error(.unauthorized, "token_expired", "Verification token expired. Verify again or use your PIN.")
        } catch {
            throw NexusFailure.error(.unauthorized, "token_invalid", "Verification token is invalid")
        }
        guard claims.userID == user else {
            throw NexusFailure.error(.unauthorized, "token_wrong_user", "Verification token belongs to another user")
        }
        guard claims.intent == intent.rawValue else {
            throw NexusFailure.error(.unauthorized, "token_wrong_intent", "Verification token was not issued for a \(intent)")
        }
        return claims.tokenID
    }

    /// Checks the transaction PIN with lockout. The attempt is counted (in its own transaction)
    /// before the PIN is compared, so concurrent guesses cannot outrun the limit, and a wrong PIN
    /// counts even though the request is refused.
    func checkPin(_ pin: String, user: UserID) async throws {
        let now = now()
        let attempt = try await environment.database.transaction { db in
            try await store.reservePinAttempt(user: user, maxAttempts: configuration.pinAttempts, lockout: configuration.pinLockout, now: now, in: db)
        }
        switch attempt {
        case .notSet:
            throw NexusFailure.error(.badRequest, "pin_not_set", "No transaction PIN is set. Set one with PUT /user/pin.")
        case .locked(let until):
            throw pinLocked(until: until, now: now)
        case .busy:
            throw NexusFailure.error(HTTPResponse.Status(code: 429, reasonPhrase: "Too Many Requests"), "pin_busy",
                                     "Other requests are checking your PIN right now. Try again in a moment.", headers: [.retryAfter: "1"])
        case .reserved(let hash, let number):
            if try await environment.passwords.verify(pin, hash: hash) {
                try await environment.database.transaction { db in try await store.resetPinFailures(user: user, in: db) }
                return
            }
            try await environment.database.transaction { db in
                try await store.failedPinAttempt(user: user, maxAttempts: configuration.pinAttempts, lockout: configuration.pinLockout, now: now, in: db)
            }
            let left = configuration.pinAttempts - number
            if left <= 0 { throw pinLocked(until: now.addingTimeInterval(configuration.pinLockout), now: now) }
            throw NexusFailure.error(.unauthorized, "incorrect_pin", "Incorrect PIN. \(left) attempt\(left == 1 ? "" : "s") left.", param: "pin")
        }
    }

    func pinLocked(until: Date, now: Date) -> APIError {
        let seconds = max(1, Int(until.timeIntervalSince(now).rounded(.up)))
        let minutes = max(1, (seconds + 59) / 60)
        return NexusFailure.error(
            HTTPResponse.Status(code: 423, reasonPhrase: "Locked"), "pin_locked",
            "Too many wrong PINs. PIN top-ups are locked for \(minutes) minute\(minutes == 1 ? "" : "s"). Use biometrics or try again later.",
            headers: [.retryAfter: String(seconds)]
        )
    }

    static func isAcceptablePin(_ pin: String) -> Bool {
        guard pin.count == 4, pin.allSatisfy({ $0.isASCII && $0.isNumber }) else { return false }
        let digits = pin.compactMap(\.wholeNumberValue)
        if Set(digits).count == 1 { return false }
        let steps = zip(digits, digits.dropFirst()).map { $1 - $0 }
        return !(steps.allSatisfy { $0 == 1 } || steps.allSatisfy { $0 == -1 })
    }

    func setPin(_ body: NexusWire.PinRequest, user: UserID) async throws -> Response {
        guard body.pin.count == 4, body.pin.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw NexusFailure.error(.badRequest, "invalid_pin", "pin must be 4 digits", param: "pin")
        }
        guard Self.isAcceptablePin(body.pin) else {
            throw NexusFailure.error(.badRequest, "weak_pin", "That PIN is too easy to guess (repeated or sequential digits)", param: "pin")
        }
        let existing = try await environment.database.read { db in try await store.pin(of: user, in: db) }
        var tokenID: String?
        if existing != nil {
            if let token = body.verificationToken {
                tokenID = try await checkVerificationToken(token, user: user, intent: .transaction)
            } else if let current = body.currentPin {
                // A malformed current PIN is a malformed request, whatever the lockout says.
                guard current.count == 4, current.allSatisfy({ $0.isASCII && $0.isNumber }) else {
                    throw NexusFailure.error(.badRequest, "invalid_pin", "currentPin must be 4 digits", param: "currentPin")
                }
                try await checkPin(current, user: user)
            } else {
                throw NexusFailure.error(.unauthorized, "authorisation_required", "Changing the PIN needs currentPin or a fresh verificationToken")
            }
        }
        let hash = try await environment.passwords.hash(body.pin)
        let now = now()
        let spend = tokenID
        try await environment.database.transaction { db in
            if let tokenID = spend, try await !store.spendToken(jti: tokenID, user: user, now: now, in: db) {
                throw NexusFailure.error(.unauthorized, "token_used", "Verification token already used")
            }
            try await store.setPin(hash: hash, user: user, now: now, in: db)
        }
        return try .json(NexusWire.Ok(message: existing == nil ? "PIN set" : "PIN changed"))
    }

    func balances(of user: UserID, in db: any DatabaseSession) async throws -> NexusWire.Balance {
        let wallet = try await environment.ledger.find(owner: user, kind: Self.walletKind, currency: Naira.currency, in: db)
        let cashback = try await environment.ledger.find(owner: user, kind: Self.cashbackKind, currency: Naira.currency, in: db)
        return NexusWire.Balance(balance: Naira.naira(wallet?.balance ?? 0), cashback: Naira.naira(cashback?.balance ?? 0))
    }

    func transactions(of user: UserID, query: Parameters) async throws -> Response {
        let limitText = query.get("limit") ?? "20"
        guard let limit = Int(limitText), (1...100).contains(limit) else {
            throw NexusFailure.error(.badRequest, "invalid_limit", "limit must be between 1 and 100", param: "limit")
        }
        var cursor: (Int64, String)?
        if let raw = query.get("cursor"), !raw.isEmpty {
            guard let data = Base64URL.decode(raw), let text = String(data: data, encoding: .utf8),
                  let colon = text.firstIndex(of: ":"), let millis = Int64(text[..<colon]) else {
                throw NexusFailure.error(.badRequest, "invalid_cursor", "cursor is not one this server issued", param: "cursor")
            }
            cursor = (millis, String(text[text.index(after: colon)...]))
        }
        let after = cursor
        let page = try await environment.database.read { db in
            let items = try await store.transactions(of: user, limit: limit + 1, cursor: after, in: db)
            var next: String?
            if items.count > limit, let last = items.prefix(limit).last,
               let millis = try await store.createdAt(ofTransaction: last.transactionId, in: db) {
                next = Base64URL.encode(Data("\(millis):\(last.transactionId)".utf8))
            }
            return NexusWire.TransactionPage(data: Array(items.prefix(limit)), hasMore: items.count > limit, nextCursor: next)
        }
        return try .json(page)
    }
}

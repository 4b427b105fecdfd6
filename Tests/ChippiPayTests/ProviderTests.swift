@testable import ChippiPayService
import ChippiPayVocabulary
@testable import StarknetDevnet
import Foundation
import HTTPTypes
import JWTKit
import HummingbirdTesting
import NIOCore
import NIOFoundationCompat
import PurseFormats
import PurseHTTP
import PurseDatabase
import PurseServer
import SQLKit
import PurseTestSupport
import Synchronization
import Testing
@testable import Starknet

/// The ChippiPay provider API (`/v1`) against the sandbox node: merchant keys, the catalogue,
/// quotes, wallets, and purchases paid by a vault withdrawal verified on chain.
@Suite("ChippiPay: the provider API")
struct ProviderTests {
    static let keys = (public: "pk_test_provider", secret: "sk_test_provider_secret")

    struct Harness: Sendable {
        let server: TestServer
        let client: any TestClientProtocol
        let provider: StarknetProvider
        let accounts: [(address: Felt, key: StarkKey)]
        let vault: Felt
        let module: ChippiPayModule

        /// One pass of the unclaimed-payment sweep, as the periodic service runs it, with a window of
        /// `window` seconds; then the jobs it queued. Returns how many returns it queued.
        @discardableResult
        func returnUnclaimed(window: TimeInterval = 0, funding: Set<Felt> = []) async throws -> Int {
            let payments = try #require(module.mounted.payments.withLock { $0 })
            server.clock.advance(by: 0.01)
            let queued = try await UnclaimedPayments(environment: server.environment, payments: payments, window: window, funding: funding).pass()
            await server.app.jobWorker.runDue()
            return queued
        }

        var strk: ERC20 { ERC20(provider: provider) }

        /// - Parameter userToken: user mode: the publishable key of `keys` and this token, as an app sends them.
        func call(_ method: HTTPRequest.Method, _ uri: String, body: String? = nil, idempotencyKey: String? = nil,
                  keys: (public: String, secret: String)? = ProviderTests.keys, userToken: String? = nil) async throws -> (HTTPResponse.Status, JSONValue, HTTPFields) {
            var headers: HTTPFields = [:]
            if let keys {
                headers[.apiKey] = keys.public
                headers[.authorization] = "Bearer \(userToken ?? keys.secret)"
            }
            if body != nil { headers[.contentType] = "application/json" }
            if let idempotencyKey { headers[.idempotencyKey] = idempotencyKey }
            let response = try await client.execute(uri: uri, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
            let json = (try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: response.body))) ?? .null
            return (response.status, json, response.headers)
        }

        /// A session of this server for `user` (the app user's auth_token), who is made a user of
        /// this server first (a session is an auth_token only while its user exists).
        func token(_ user: String) async throws -> String {
            try await server.environment.database.transaction { db in
                try await db.raw("""
                    INSERT INTO users (id, email, password_hash, created_at) VALUES (\(bind: user), \(bind: user + "@example.com"), 'x', 0)
                    ON CONFLICT (id) DO NOTHING
                    """).run()
            }
            return try await server.environment.tokens.issue(for: UserID(user), purpose: TokenService.sessionPurpose, lifetime: 3600).token
        }

        /// A wallet the provider made and deployed: its id, and its account on chain.
        struct Wallet: Sendable, CustomStringConvertible {
            var id: String
            var address: Felt
            var key: StarkKey
            var description: String { id }
        }

        /// A prepared and saved wallet for `user`, its account funded with `strk` STRK by the sandbox.
        func wallet(_ user: String, strk: String = "20") async throws -> Wallet {
            let session = try await token(user)
            let (status, prepared, _) = try await call(.post, "/v1/chipi-wallets/prepare-creation",
                                                       body: #"{"auth_token":"\#(session)","external_user_id":"\#(user)","metadata":{"source":"ios_app"}}"#)
            #expect(status == .ok)
            let id = try #require(prepared["wallet_id"]?.stringValue)
            let key = StarkKey.random()
            let (saved, body, _) = try await call(.post, "/v1/chipi-wallets",
                                                  body: #"{"wallet_id":"\#(id)","public_key":"\#(key.publicKey)","encrypted_private_key":"enc_0123456789abcdef","auth_token":"\#(session)"}"#)
            #expect(saved == .ok && body["success"] == .bool(true))
            // The provider deployed the wallet's account through the Universal Deployer, paying for it.
            let (_, shown, _) = try await call(.get, "/v1/chipi-wallets/\(id)")
            let address = try #require(Felt(shown["address"]?.stringValue ?? ""))
            let deployment = try #require(Felt(shown["deploy_transaction_hash"]?.stringValue ?? ""))
            #expect(try await provider.waitForTransaction(deployment, poller: Poller(interval: .milliseconds(10), multiplier: 1, maxAttempts: 100)).succeeded)
            #expect(try await provider.call(Call(to: address, entrypoint: "get_public_key")) == [key.publicKey])
            // Saving again is a retry: nothing new is deployed.
            let (again, _, _) = try await call(.post, "/v1/chipi-wallets",
                                               body: #"{"wallet_id":"\#(id)","public_key":"\#(key.publicKey)","encrypted_private_key":"enc_0123456789abcdef","auth_token":"\#(session)"}"#)
            #expect(again == .ok)
            let (minted, _, _) = try await call(.post, "/sandbox/starknet/mint", body: #"{"address":"\#(address)","amount":"\#(strk)"}"#,
                                                idempotencyKey: UUID().uuidString, keys: nil)
            #expect(minted == .created)
            return Wallet(id: id, address: address, key: key)
        }

        /// A wallet only prepared: no key saved, no account deployed.
        func preparedWallet(_ user: String) async throws -> String {
            let (status, prepared, _) = try await call(.post, "/v1/chipi-wallets/prepare-creation",
                                                       body: #"{"auth_token":"\#(try await token(user))","external_user_id":"\#(user)","metadata":{}}"#)
            #expect(status == .ok)
            return try #require(prepared["wallet_id"]?.stringValue)
        }

        /// `wallet`'s account puts `deposit` STRK in the vault and withdraws `pay` of it to `recipient`.
        func payFromVault(_ wallet: Wallet, deposit: String, pay: String, to recipient: Felt) async throws -> Felt {
            let account = StarknetAccount(address: wallet.address, key: wallet.key, provider: provider)
            let vaultContract = VaultContract(address: vault, token: strk)
            let poller = Poller(interval: .milliseconds(10), multiplier: 1, maxAttempts: 100)
            if deposit != "0" {
                _ = try await account.executeAndWait(vaultContract.depositCalls(try STRKAmount.parse(deposit)), poller: poller)
            }
            return try await account.executeAndWait([vaultContract.withdraw(to: recipient, try STRKAmount.parse(pay))], poller: poller).transactionHash
        }

        /// The purchase once its fulfilment job has run (here, or on the server's own worker, which
        /// may have claimed it first).
        func settled(_ id: String) async throws -> JSONValue {
            for _ in 0..<200 {
                await server.app.jobWorker.runDue()
                let (_, purchase, _) = try await call(.get, "/v1/sku-transactions/\(id)")
                if purchase["status"] != "pending" { return purchase }
                try await Task.sleep(for: .milliseconds(50))
            }
            Issue.record("purchase \(id) still pending after 10 s")
            return .null
        }

        func purchaseBody(wallet: Wallet, hash: Felt, sku: String = "telcel_50", reference: String = "5512345678", amount: String = "50.0") -> String {
            purchaseBody(wallet: wallet.id, hash: hash, sku: sku, reference: reference, amount: amount)
        }

        func purchaseBody(wallet: String, hash: Felt, sku: String = "telcel_50", reference: String = "5512345678", amount: String = "50.0") -> String {
            #"{"sku_id":"\#(sku)","reference":"\#(reference)","amount":\#(amount),"wallet_id":"\#(wallet)","vault_transaction_hash":"\#(hash)","metadata":{"order":"42"}}"#
        }
    }

    static func withProvider(engine: DatabaseEngine = .sqlite, rateLimit: Double = 1_000, issuerTransport: (any HTTPTransport)? = nil,
                             configure: (inout ChippiProviderConfiguration) -> Void = { _ in },
                             _ body: @Sendable (Harness) async throws -> Void) async throws {
        var sandbox = StarknetSandboxConfiguration()
        sandbox.accountCount = 3
        var provider = ChippiProviderConfiguration()
        provider.sandboxKeys = keys
        provider.fulfilmentSeconds = 0
        provider.rateLimit = rateLimit
        provider.keyCacheSeconds = 0
        provider.paymentScanSeconds = 0
        configure(&provider)
        let module = ChippiPayModule(configuration: ChippiPayConfiguration(sandbox: sandbox, provider: provider), issuerTransport: issuerTransport)
        let server = try await TestServer.make(engine: engine, modules: [module])
        try await server.withRouter { client in
            let transport = RouterTransport(client: client)
            let rpc = StarknetProvider(url: URL(string: "http://127.0.0.1/starknet/rpc")!, transport: transport)
            let listing = try JSONDecoder().decode(JSONValue.self, from: Data(buffer: try await client.execute(uri: "/sandbox/starknet/accounts", method: .get).body))
            let accounts = try listing["accounts"]!.arrayValue!.map { item in
                (Felt(item["address"]!.stringValue!)!, try StarkKey(privateKey: Felt(item["private_key"]!.stringValue!)!))
            }
            try await body(Harness(server: server, client: client, provider: rpc, accounts: accounts,
                                   vault: Felt(listing["vault_address"]!.stringValue!)!, module: module))
        }
    }

    /// The seed's provider checks that the account is active and has the permission: a
    /// suspended merchant, or a key used outside its areas, is 401 with the reason.
    @Test func suspendedMerchantsAndPermissions() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let environment = h.server.environment
            let keys = try await ChippiPayModule.createMerchantKeys(merchant: "mer_shop", name: "Shop", webhookURL: nil, live: false, environment: environment)
            #expect(try await h.call(.get, "/v1/skus", keys: keys).0 == .ok)
            let limited = try await ChippiPayModule.setMerchantStatus(merchant: "mer_shop", active: nil, permissions: ["catalogue"], environment: environment)
            #expect(limited.active && limited.permissions == ["catalogue"])
            #expect(try await h.call(.get, "/v1/skus", keys: keys).0 == .ok)
            let (denied, reason, _) = try await h.call(.get, "/v1/sku-transactions", keys: keys)
            #expect(denied == .unauthorized && reason["error"] == "This merchant's keys may not use purchases")
            _ = try await ChippiPayModule.setMerchantStatus(merchant: "mer_shop", active: false, permissions: nil, environment: environment)
            let (suspended, why, _) = try await h.call(.get, "/v1/skus", keys: keys)
            #expect(suspended == .unauthorized && why["error"] == "Merchant account is not active")
            let back = try await ChippiPayModule.setMerchantStatus(merchant: "mer_shop", active: true, permissions: ["catalogue", "purchases", "wallets", "paymaster"],
                                                                   environment: environment)
            #expect(back.active && back.permissions.count == 4)
            #expect(try await h.call(.get, "/v1/sku-transactions", keys: keys).0 == .ok)
            // Another merchant is untouched; an unknown area is refused.
            #expect(try await h.call(.get, "/v1/sku-transactions").0 == .ok)
            await #expect(throws: (any Error).self) {
                _ = try await ChippiPayModule.setMerchantStatus(merchant: "mer_shop", active: nil, permissions: ["everything"], environment: environment)
            }
        }
    }

    /// Records what a webhook receiver got.
    final class WebhookReceiver: HTTPTransport {
        let received = Mutex<[TransportRequest]>([])
        func send(_ request: TransportRequest) async throws -> TransportResponse {
            received.withLock { $0.append(request) }
            return TransportResponse(status: 200, headerFields: [:], body: Data())
        }
    }

    /// The merchant gets its webhook secret with its keys, verifies deliveries with it, and can
    /// rotate it: for the roll's window deliveries carry a signature with each secret, then with
    /// the new one only; a leaked secret is rotated without a window.
    @Test func theWebhookSecretComesWithTheKeysAndRotates() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let environment = h.server.environment
            _ = try await ChippiPayModule.createMerchantKeys(merchant: "mer_hooks", name: "Hooks", webhookURL: "https://merchant.example/hooks", live: false,
                                                           environment: environment)
            let first = try await ChippiPayModule.merchantWebhookSecret(merchant: "mer_hooks", environment: environment)
            #expect(first.hasPrefix("whsec_") && first.utf8.count > 30)
            let receiver = WebhookReceiver()
            func deliver(_ id: String) async throws -> TransportRequest {
                let now = environment.now().epochMillis
                try await environment.database.transaction { db in
                    try await db.raw("""
                        INSERT INTO chippi_webhook_deliveries (id, merchant_id, event, transaction_id, url, payload, status, created_at, updated_at)
                        VALUES (\(bind: id), 'mer_hooks', 'transaction.completed', 'chipi_tx_1', 'https://merchant.example/hooks', '{"id":"\(unsafeRaw: id)"}', 'pending', \(bind: now), \(bind: now))
                        """).run()
                }
                try await Webhooks.deliver(Job(id: "job_\(id)", kind: ProviderRoutes.webhookJob, payload: try JSONEncoder().encode(Webhooks.DeliveryJob(deliveryID: id)),
                                               attempts: 0, maxAttempts: 1), environment: environment, transport: receiver)
                return try #require(receiver.received.withLock { $0.last })
            }
            func verifies(_ request: TransportRequest, with secret: String) -> Bool {
                (try? WebhookSignature.verify(header: request.headerFields[.chipiSignature] ?? "", payload: request.body ?? Data(), secret: secret,
                                              now: environment.now())) != nil
            }
            let signed = try await deliver("whd_1")
            #expect(verifies(signed, with: first))
            // A routine roll: for its window, deliveries verify with the old secret and the new.
            let rolled = try await ChippiPayModule.rotateMerchantWebhookSecret(merchant: "mer_hooks", overlap: 3600, environment: environment)
            let second = rolled.current
            let stored = try await ChippiPayModule.merchantWebhookSecrets(merchant: "mer_hooks", environment: environment)
            #expect(second != first && stored == rolled && rolled.previous?.secret == first)
            let during = try await deliver("whd_2")
            #expect(verifies(during, with: second) && verifies(during, with: first))
            #expect(during.headerFields[.chipiSignature]?.components(separatedBy: "v1=").count == 3, "two v1 signatures")
            // After the window, the new one only.
            h.server.clock.advance(by: 3601)
            let after = try await deliver("whd_3")
            #expect(verifies(after, with: second) && !verifies(after, with: first))
            #expect(try await ChippiPayModule.merchantWebhookSecrets(merchant: "mer_hooks", environment: environment).previous == nil)
            // A leaked secret: no overlap, it ends at once.
            let leaked = try await ChippiPayModule.rotateMerchantWebhookSecret(merchant: "mer_hooks", overlap: 0, environment: environment)
            let now = try await deliver("whd_4")
            #expect(leaked.previous == nil && verifies(now, with: leaked.current) && !verifies(now, with: second))
            await #expect(throws: (any Error).self) { _ = try await ChippiPayModule.rotateMerchantWebhookSecret(merchant: "mer_nobody", environment: environment) }
        }
    }

    @Test func merchantKeysAreCheckedAsAPair() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            #expect(try await h.call(.get, "/v1/skus").0 == .ok)
            for keys in [nil, (public: "pk_test_provider", secret: "sk_test_wrong"), (public: "pk_test_other", secret: "sk_test_provider_secret")] {
                let (status, body, headers) = try await h.call(.get, "/v1/skus", keys: keys)
                #expect(status == .unauthorized && body["error"] == "Invalid API credentials" && headers[.wwwAuthenticate] != nil)
            }
            // A second pair for the merchant works beside the first; revoked, it is refused.
            let second = try await ChippiPayModule.createMerchantKeys(merchant: "mer_sandbox", name: "Sandbox merchant", webhookURL: nil, live: false,
                                                                      environment: h.server.environment)
            #expect(second.public.hasPrefix("pk_test_") && second.secret.hasPrefix("sk_test_"))
            #expect(try await h.call(.get, "/v1/skus", keys: second).0 == .ok)
            #expect(try await ChippiPayModule.revokeMerchantKey(second.public, environment: h.server.environment))
            #expect(try await h.call(.get, "/v1/skus", keys: second).0 == .unauthorized)
            #expect(try await h.call(.get, "/v1/skus").0 == .ok)
            #expect(try await ChippiPayModule.revokeMerchantKey(second.public, environment: h.server.environment) == false)
        }
    }

    @Test func eachKeyIsRateLimited() async throws {
        // One request per 100 s, in bursts of one: the second request is refused however slow the machine.
        try await Self.withProvider(rateLimit: 0.01) { (h: Harness) async throws in
            #expect(try await h.call(.get, "/v1/skus").0 == .ok)
            let (status, body, headers) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            #expect(status == .tooManyRequests && body["error"]?.stringValue?.hasPrefix("Too many requests") == true)
            #expect(headers[.retryAfter].flatMap(Int.init).map { (1...100).contains($0) } == true)
        }
    }

    @Test func walletsAreMadeOnlyForTheUserOfTheToken() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            // This server's session for someone else, a forged token: refused.
            let other = try await h.token("user_other")
            let (mismatch, body, _) = try await h.call(.post, "/v1/chipi-wallets/prepare-creation", body: #"{"auth_token":"\#(other)","external_user_id":"user_me"}"#)
            #expect(mismatch == .unauthorized && body["error"] == "auth_token belongs to another user than external_user_id")
            let (forged, _, _) = try await h.call(.post, "/v1/chipi-wallets/prepare-creation", body: #"{"auth_token":"eyJhbGciOiJIUzI1NiJ9.e30.x","external_user_id":"user_me"}"#)
            #expect(forged == .unauthorized)

            // A merchant whose users sign in elsewhere (an HS256 issuer such as Supabase).
            let secret = String(repeating: "s", count: 40)
            let keys = try await ChippiPayModule.createMerchantKeys(merchant: "mer_supabase", name: "Supabase app", webhookURL: nil, authHS256Secret: secret,
                                                                    live: false, environment: h.server.environment)
            let issuer = JWTKeyCollection()
            await issuer.add(hmac: HMACKey(from: Array(secret.utf8)), digestAlgorithm: .sha256)
            struct Claims: JWTPayload {
                var sub: SubjectClaim
                var exp: ExpirationClaim
                func verify(using algorithm: some JWTAlgorithm) async throws {}
            }
            let good = try await issuer.sign(Claims(sub: "user_123", exp: ExpirationClaim(value: Date().addingTimeInterval(600))))
            let expired = try await issuer.sign(Claims(sub: "user_123", exp: ExpirationClaim(value: Date().addingTimeInterval(-600))))
            let (ok, prepared, _) = try await h.call(.post, "/v1/chipi-wallets/prepare-creation", body: #"{"auth_token":"\#(good)","external_user_id":"user_123"}"#, keys: keys)
            #expect(ok == .ok && prepared["wallet_id"] != nil)
            #expect(try await h.call(.post, "/v1/chipi-wallets/prepare-creation", body: #"{"auth_token":"\#(expired)","external_user_id":"user_123"}"#, keys: keys).0 == .unauthorized)
            // This server's sessions are not that merchant's users.
            let ours = try await h.token("user_123")
            #expect(try await h.call(.post, "/v1/chipi-wallets/prepare-creation", body: #"{"auth_token":"\#(ours)","external_user_id":"user_123"}"#, keys: keys).0 == .unauthorized)
            // The issuer secret and the webhook secret are sealed at rest: a copy of the database holds neither.
            let row = try #require(try await h.server.environment.database.read { db in
                try await db.raw("SELECT webhook_secret, auth_hs256_secret FROM chippi_merchants WHERE id = 'mer_supabase'").first()
            })
            let (webhook, issuerSecret) = (try row.decode(column: "webhook_secret", as: String.self), try row.decode(column: "auth_hs256_secret", as: String.self))
            #expect(webhook.hasPrefix("sealed.v1.") && !webhook.contains("whsec_"))
            #expect(issuerSecret.hasPrefix("sealed.v1.") && !issuerSecret.contains(secret))
            #expect(try h.server.environment.sealer.open(issuerSecret, column: "chippi_merchants.auth_hs256_secret") == secret)
            #expect(throws: SecretSealer.SealError.self) { try h.server.environment.sealer.open(issuerSecret, column: "chippi_merchants.webhook_secret") }
            #expect(throws: SecretSealer.SealError.self) { try SecretSealer(key: Array(repeating: 1, count: 32)).open(issuerSecret, column: "chippi_merchants.auth_hs256_secret") }
        }
    }

    /// Serves one JWKS document and counts the fetches.
    final class JWKSServer: HTTPTransport {
        let document = Mutex("")
        let fetches = Mutex(0)

        func send(_ request: TransportRequest) async throws -> TransportResponse {
            fetches.withLock { $0 += 1 }
            return TransportResponse(status: 200, headerFields: [.contentType: "application/json"], body: Data(document.withLock { $0 }.utf8))
        }
    }

    @Test func merchantsIssuersPublishedAsJWKSAreAccepted() async throws {
        let jwks = JWKSServer()
        try await Self.withProvider(issuerTransport: jwks) { (h: Harness) async throws in
            let key = ES256PrivateKey()
            let parameters = try #require(key.publicKey.parameters)
            jwks.document.withLock { $0 = #"{"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","use":"sig","kid":"k1","x":"\#(parameters.x)","y":"\#(parameters.y)"}]}"# }
            let keys = try await ChippiPayModule.createMerchantKeys(merchant: "mer_auth0", name: "Auth0 app", webhookURL: nil,
                                                                    authJWKSURL: "https://issuer.example/.well-known/jwks.json", live: false,
                                                                    environment: h.server.environment)
            let issuer = JWTKeyCollection()
            await issuer.add(ecdsa: key, kid: "k1")
            struct Claims: JWTPayload {
                var sub: SubjectClaim
                var exp: ExpirationClaim
                func verify(using algorithm: some JWTAlgorithm) async throws {}
            }
            let token = try await issuer.sign(Claims(sub: "auth0|42", exp: ExpirationClaim(value: Date().addingTimeInterval(600))), kid: "k1")
            let (status, prepared, _) = try await h.call(.post, "/v1/chipi-wallets/prepare-creation", body: #"{"auth_token":"\#(token)","external_user_id":"auth0|42"}"#, keys: keys)
            #expect(status == .ok && prepared["wallet_id"] != nil)
            // Another key than the published ones: refused; the keys were fetched once.
            let stranger = JWTKeyCollection()
            await stranger.add(ecdsa: ES256PrivateKey(), kid: "k1")
            let forged = try await stranger.sign(Claims(sub: "auth0|42", exp: ExpirationClaim(value: Date().addingTimeInterval(600))), kid: "k1")
            #expect(try await h.call(.post, "/v1/chipi-wallets/prepare-creation", body: #"{"auth_token":"\#(forged)","external_user_id":"auth0|42"}"#, keys: keys).0 == .unauthorized)
            #expect(jwks.fetches.withLock { $0 } == 1)
        }
    }

    @Test func theCatalogueAndQuotes() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let (_, all, _) = try await h.call(.get, "/v1/skus")
            let skus = try #require(all["skus"]?.arrayValue)
            let telcel = try #require(skus.first { $0["id"] == "telcel_50" })
            #expect(telcel["name"] == "Telcel 50 MXN" && telcel["amount"] == "50" && telcel["currency"] == "MXN")
            #expect(telcel["reference"]?["pattern"] == "^[0-9]{10}$")
            let (_, bills, _) = try await h.call(.get, "/v1/skus?category=bill")
            #expect(bills["skus"]?.arrayValue?.allSatisfy { $0["category"] == "bill" && $0["min_amount"] != nil } == true)
            #expect(try await h.call(.get, "/v1/skus?category=food").0 == .badRequest)

            let (status, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            #expect(status == .ok && quote["strk_amount"] == "2.5" && quote["strk_amount_fri"] == "2500000000000000000" && quote["gas_fee"] == "0")
            let (_, bill, _) = try await h.call(.get, "/v1/quote?sku_id=cfe_electricity&amount=123.45")
            #expect(bill["strk_amount"] == "6.1725")
            #expect(try await h.call(.get, "/v1/quote?sku_id=cfe_electricity").0 == .badRequest)
            #expect(try await h.call(.get, "/v1/quote?sku_id=cfe_electricity&amount=1.234").0 == .badRequest)
            #expect(try await h.call(.get, "/v1/quote?sku_id=cfe_electricity&amount=20000").0 == .badRequest)
            #expect(try await h.call(.get, "/v1/quote?sku_id=nope").0 == .notFound)
        }
    }

    /// User mode: an app holding only the publishable key and its user's token (minted by the
    /// merchant's backend, a session of this server, or the merchant's issuer's JWT) sees and
    /// does only what belongs to that user's wallet; the merchant's secret still reaches all.
    @Test func aUserTokenReachesOnlyItsOwnWallet() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let alice = try await h.wallet("user_alice")
            let bob = try await h.wallet("user_bob")
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
            let alicePaid = try await h.payFromVault(alice, deposit: "10", pay: "2.5", to: payTo)
            let bobPaid = try await h.payFromVault(bob, deposit: "10", pay: "2.5", to: payTo)
            let (_, bobPurchase, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: bob, hash: bobPaid), idempotencyKey: "bob-1")
            let bobID = try #require(bobPurchase["transaction_id"]?.stringValue)

            // The merchant's backend mints a short-lived token for Alice with its secret key.
            let (mintedStatus, minted, _) = try await h.call(.post, "/v1/user-tokens", body: #"{"external_user_id":"user_alice","expires_in":600}"#)
            #expect(mintedStatus == .created && minted["external_user_id"] == "user_alice")
            let token = try #require(minted["token"]?.stringValue)
            #expect(try await h.call(.post, "/v1/user-tokens", body: #"{"external_user_id":"user_alice","expires_in":86400}"#).0 == .badRequest)
            let session = try await h.token("user_alice")
            for bearer in [token, session] {
                let (skus, skuBody, _) = try await h.call(.get, "/v1/skus", userToken: bearer)
                #expect(skus == .ok, "\(skuBody)")
                // Her wallet and purchases; Bob's are as absent as ones that never were.
                let (own, wallet, _) = try await h.call(.get, "/v1/chipi-wallets/\(alice)", userToken: bearer)
                #expect(own == .ok && wallet["external_user_id"] == "user_alice")
                #expect(try await h.call(.get, "/v1/chipi-wallets/\(bob)", userToken: bearer).0 == .notFound)
                #expect(try await h.call(.get, "/v1/sku-transactions/\(bobID)", userToken: bearer).0 == .notFound)
                let (_, listed, _) = try await h.call(.get, "/v1/sku-transactions", userToken: bearer)
                #expect(listed["data"]?.arrayValue?.isEmpty == true)
                #expect(try await h.call(.get, "/v1/sku-transactions?wallet_id=\(bob)", userToken: bearer).0 == .notFound)
                #expect(try await h.call(.get, "/v1/sku-transactions?starting_after=\(bobID)", userToken: bearer).0 == .badRequest)
                // What spans the merchant's users needs its secret key.
                #expect(try await h.call(.get, "/v1/webhook-deliveries", userToken: bearer).0 == .forbidden)
                #expect(try await h.call(.post, "/v1/user-tokens", body: #"{"external_user_id":"user_bob"}"#, userToken: bearer).0 == .forbidden)
                // No wallet for another user, and no purchase paid by another user's payment or from Bob's wallet.
                #expect(try await h.call(.post, "/v1/chipi-wallets/prepare-creation", body: #"{"external_user_id":"user_bob"}"#, userToken: bearer).0 == .unauthorized)
                #expect(try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: bob, hash: bobPaid),
                                         idempotencyKey: UUID().uuidString, userToken: bearer).0 == .notFound)
                // The relayer pays only for her own accounts.
                let build = #"{"account":"\#(bob.address)","calls":[{"to":"\#(h.vault)","selector":"\#(Selector.from(name: "withdraw"))","calldata":["\#(payTo)","0x22b1c8c1227a0000","0x0"]}]}"#
                let (built, builtBody, _) = try await h.call(.post, "/v1/paymaster/build", body: build, userToken: bearer)
                #expect(built == .forbidden, "\(builtBody)")
                let ownBuild = build.replacingOccurrences(of: bob.address.description, with: alice.address.description)
                #expect(try await h.call(.post, "/v1/paymaster/build", body: ownBuild, userToken: bearer).0 == .ok)
            }
            // Her purchase with her token; its Idempotency-Key is hers alone: the same key and
            // body from another user's token replay nothing of hers.
            let body = h.purchaseBody(wallet: alice, hash: alicePaid)
            let (bought, purchase, _) = try await h.call(.post, "/v1/sku-transactions", body: body, idempotencyKey: "shared-key", userToken: token)
            #expect(bought == .created)
            let aliceID = try #require(purchase["transaction_id"]?.stringValue)
            let bobToken = try await h.token("user_bob")
            #expect(try await h.call(.post, "/v1/sku-transactions", body: body, idempotencyKey: "shared-key", userToken: bobToken).0 == .notFound)
            let (_, mine, _) = try await h.call(.get, "/v1/sku-transactions", userToken: token)
            #expect(mine["data"]?.arrayValue?.map { $0["transaction_id"] } == [.string(aliceID)])
            // The merchant's secret reaches both.
            let (_, all, _) = try await h.call(.get, "/v1/sku-transactions")
            #expect(Set(all["data"]?.arrayValue?.compactMap { $0["transaction_id"]?.stringValue } ?? []) == [aliceID, bobID])

            // A token for another merchant, an expired one, a forged one and a step-up token are refused.
            let other = try await ChippiPayModule.createMerchantKeys(merchant: "mer_other", name: "Other", webhookURL: nil, live: false, environment: h.server.environment)
            let (_, foreign, _) = try await h.call(.post, "/v1/user-tokens", body: #"{"external_user_id":"user_alice"}"#, keys: other)
            let foreignToken = try #require(foreign["token"]?.stringValue)
            #expect(try await h.call(.get, "/v1/chipi-wallets/\(alice)", userToken: foreignToken).0 == .unauthorized)
            let tokens = h.server.environment.tokens
            let expired = try await tokens.issue(for: UserID("user_alice"), purpose: "chippi_user:mer_sandbox", lifetime: -60).token
            let stepUp = try await tokens.issue(for: UserID("user_alice"), purpose: "topup", lifetime: 60).token
            for bad in [expired, stepUp, "eyJhbGciOiJIUzI1NiJ9.e30.x", "not a token"] {
                let (status, refusal, headers) = try await h.call(.get, "/v1/skus", userToken: bad)
                #expect(status == .unauthorized && refusal["error"] != nil && headers[.wwwAuthenticate]?.contains("invalid_token") == true)
            }
            // A revoked publishable key ends its users' access too.
            #expect(try await ChippiPayModule.revokeMerchantKey(other.public, environment: h.server.environment))
            let (_, fresh, _) = try await h.call(.post, "/v1/user-tokens", body: #"{"external_user_id":"user_alice"}"#)
            #expect(try await h.call(.get, "/v1/skus", keys: other, userToken: try #require(fresh["token"]?.stringValue)).0 == .unauthorized)
        }
    }

    @Test func aPurchasePaidFromTheVaultIsVerifiedFulfilledAndListed() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let wallet = try await h.wallet("user_123")
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
            let hash = try await h.payFromVault(wallet, deposit: "10", pay: "2.5", to: payTo)
            #expect(try await h.vaultBalance(of: wallet.address) == SandboxNodeTests.strk("7.5"))

            let body = h.purchaseBody(wallet: wallet, hash: hash)
            let (status, created, _) = try await h.call(.post, "/v1/sku-transactions", body: body, idempotencyKey: "buy-1")
            #expect(status == .created && created["status"] == "pending" && created["strk_amount"] == "2.5")
            let id = try #require(created["transaction_id"]?.stringValue)
            #expect(id.hasPrefix("chipi_tx_"))
            // A retry replays; the same payment under another key is refused.
            let (again, replayed, headers) = try await h.call(.post, "/v1/sku-transactions", body: body, idempotencyKey: "buy-1")
            #expect(again == .created && replayed["transaction_id"] == .string(id) && headers[.idempotentReplayed] == "true")
            let (reused, refusal, _) = try await h.call(.post, "/v1/sku-transactions", body: body, idempotencyKey: "buy-2")
            #expect(reused == .conflict && refusal["error"] == "vault_transaction_hash has already paid for another purchase")

            let done = try await h.settled(id)
            #expect(done["status"] == "completed" && done["reference"] == "5512345678" && done["metadata"]?["order"] == "42")
            let (_, page, _) = try await h.call(.get, "/v1/sku-transactions?wallet_id=\(wallet)")
            #expect(page["data"]?.arrayValue?.count == 1 && page["has_more"] == .bool(false))
            #expect(try await h.call(.get, "/v1/sku-transactions/chipi_tx_nope").0 == .notFound)
        }
    }

    @Test func paymentsThatDoNotVerifyAreRefused() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let wallet = try await h.wallet("user_456")
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
            // Too little, to someone else, a reverted one, an unknown hash.
            let short = try await h.payFromVault(wallet, deposit: "10", pay: "2", to: payTo)
            let elsewhere = try await h.payFromVault(wallet, deposit: "0", pay: "2.5", to: h.accounts[2].address)
            let unknown = Felt(0xdead)
            let cases: [(Felt, String)] = [
                (short, "The vault transaction paid 2 STRK; the purchase needs 2.5 STRK"),
                (elsewhere, "The vault transaction does not pay the provider's payment address \(payTo)"),
                (unknown, "vault_transaction_hash was not found on Starknet"),
            ]
            var refused: [String] = []
            for (hash, message) in cases {
                let (status, body, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: wallet, hash: hash), idempotencyKey: UUID().uuidString)
                #expect(status == .unprocessableContent && body["error"] == .string(message), "\(body)")
                if let id = body["transaction_id"]?.stringValue { refused.append(id) }
            }
            // The short payment, the wallet's own, is refunded: a purchase that fails with its 2 STRK
            // sent back into the vault, once.
            #expect(refused.count == 1)
            let failed = try await h.settled(try #require(refused.first))
            #expect(failed["status"] == "failed" && failed["refund_transaction_hash"]?.stringValue != nil, "\(failed)")
            #expect(try await VaultContract(address: h.vault, token: h.strk).balance(of: wallet.address) == SandboxNodeTests.strk("7.5"),
                    "10 in, 2 paid and 2 back, 2.5 withdrawn elsewhere")
            let (again, _, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: wallet, hash: short), idempotencyKey: UUID().uuidString)
            #expect(again == .conflict, "a refunded payment buys nothing")
            // Bad fields name themselves; nothing is recorded.
            let good = try await h.payFromVault(wallet, deposit: "0", pay: "2.5", to: payTo)
            let bad: [(String, HTTPResponse.Status)] = [
                (h.purchaseBody(wallet: wallet, hash: good, reference: "55123"), .badRequest),
                (h.purchaseBody(wallet: wallet, hash: good, amount: "40.0"), .badRequest),
                (h.purchaseBody(wallet: wallet, hash: good, amount: "50.001"), .badRequest),
                (h.purchaseBody(wallet: wallet, hash: good, sku: "nope"), .notFound),
                (h.purchaseBody(wallet: "wallet_nope", hash: good), .notFound),
                (h.purchaseBody(wallet: try await h.preparedWallet("user_456_prepared"), hash: good), .conflict),
            ]
            for (body, expected) in bad {
                #expect(try await h.call(.post, "/v1/sku-transactions", body: body, idempotencyKey: UUID().uuidString).0 == expected, "\(body)")
            }
            let (_, page, _) = try await h.call(.get, "/v1/sku-transactions")
            #expect(page["data"]?.arrayValue?.count == 1, "the refunded one only")
            // The good payment still buys once.
            #expect(try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: wallet, hash: good), idempotencyKey: "ok").0 == .created)
        }
    }

    /// A payment seen on chain cannot be claimed by anyone but the wallet that made it: not by
    /// another user of the same merchant, nor by a rival merchant. The customer's own purchase
    /// then goes through.
    @Test func aPaymentBelongsToThePurchasesOwnWallet() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let customer = try await h.wallet("customer")
            let other = try await h.wallet("other_user")
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
            let hash = try await h.payFromVault(customer, deposit: "5", pay: "2.5", to: payTo)
            let (claimed, refusal, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: other, hash: hash), idempotencyKey: "claim")
            #expect(claimed == .unprocessableContent, "\(refusal)")
            #expect(refusal["error"]?.stringValue?.contains("not by wallet \(other.id)") == true, "\(refusal)")
            // A rival merchant with a wallet of its own.
            let rival = try await ChippiPayModule.createMerchantKeys(merchant: "rival", name: "Rival", webhookURL: nil, live: false, environment: h.server.environment)
            let (rivalPrepared, prepared, _) = try await h.call(.post, "/v1/chipi-wallets/prepare-creation",
                                                                 body: #"{"auth_token":"\#(try await h.token("rival_user"))","external_user_id":"rival_user","metadata":{}}"#,
                                                                 keys: rival)
            #expect(rivalPrepared == .ok)
            let rivalWallet = try #require(prepared["wallet_id"]?.stringValue)
            let (rivalClaim, _, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: rivalWallet, hash: hash), idempotencyKey: "rival",
                                                      keys: rival)
            #expect(rivalClaim == .conflict || rivalClaim == .unprocessableContent)
            let (_, page, _) = try await h.call(.get, "/v1/sku-transactions")
            #expect(page["data"]?.arrayValue?.isEmpty == true)
            let (bought, created, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: customer, hash: hash), idempotencyKey: "mine")
            #expect(bought == .created && created["wallet_id"] == .string(customer.id))
        }
    }

    /// A payment no purchase claims — here one claimed for a wallet that did not make it, and
    /// refused — goes back to where it came from once the window has passed, exactly once however
    /// many passes (replicas) run; a claim that comes later is refused with `payment_returned`.
    /// A payment claimed in time, mints and funding transfers stay.
    @Test(arguments: TestEngines.all)
    func unclaimedPaymentsGoBackOnce(engine: DatabaseEngine) async throws {
        try await Self.withProvider(engine: engine) { (h: Harness) async throws in
            let customer = try await h.wallet("returned_customer")
            let other = try await h.wallet("returned_other")
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
            let stray = try await h.payFromVault(customer, deposit: "5", pay: "2.5", to: payTo)
            #expect(try await h.vaultBalance(of: customer.address) == SandboxNodeTests.strk("2.5"))
            #expect(try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: other, hash: stray), idempotencyKey: "wrong").0 == .unprocessableContent)
            // The other user's own payment, claimed in time, and a plain transfer from a funding account.
            let claimedHash = try await h.payFromVault(other, deposit: "5", pay: "2.5", to: payTo)
            let (bought, created, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: other, hash: claimedHash), idempotencyKey: "right")
            #expect(bought == .created)
            let funder = h.accounts[1]
            let funding = StarknetAccount(address: funder.address, key: funder.key, provider: h.provider)
            _ = try await funding.executeAndWait([h.strk.transfer(to: payTo, SandboxNodeTests.strk("1"))],
                                                 poller: Poller(interval: .milliseconds(10), multiplier: 1, maxAttempts: 100))

            // Within the window nothing moves.
            #expect(try await h.returnUnclaimed(window: 3600, funding: [funder.address]) == 0)
            // Past it, passes on two "replicas" at once queue one return.
            let queued = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<4 { group.addTask { try await h.returnUnclaimed(window: 0, funding: [funder.address]) } }
                return try await group.reduce(0, +)
            }
            #expect(queued == 1)
            for _ in 0..<100 where try await h.vaultBalance(of: customer.address) != SandboxNodeTests.strk("5") {
                await h.server.app.jobWorker.runDue()
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await h.vaultBalance(of: customer.address) == SandboxNodeTests.strk("5"), "the stray payment went back into the payer's vault")
            let row = try #require(try await h.server.environment.database.read { db in
                try await db.raw("SELECT state, refund_transaction_hash FROM chippi_incoming_payments WHERE transaction_hash = \(bind: stray.description)").first()
            })
            #expect(try row.decode(column: "state", as: String.self) == "returned")
            let refund = try #require(Felt(try row.decode(column: "refund_transaction_hash", as: String?.self) ?? ""))
            #expect(try await h.provider.transactionReceipt(refund).succeeded)
            // More passes return nothing more; the claimed purchase, the funding and the mints stay.
            #expect(try await h.returnUnclaimed(window: 0, funding: [funder.address]) == 0)
            let states = try await h.server.environment.database.read { db in
                try await db.raw("SELECT state FROM chippi_incoming_payments ORDER BY state").all().map { try $0.decode(column: "state", as: String.self) }
            }
            #expect(states == ["claimed", "returned"], "funding and mints are not payments")
            #expect(try await h.vaultBalance(of: customer.address) == SandboxNodeTests.strk("5"))
            // The owner's late claim buys nothing: the money is back with it.
            let (late, refusal, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: customer, hash: stray), idempotencyKey: "late")
            #expect(late == .unprocessableContent && refusal["code"] == "payment_returned", "\(refusal)")
            let purchase = try #require(created["transaction_id"]?.stringValue)
            #expect(try await h.settled(purchase)["status"] == "completed")
        }
    }

    /// The user's own Starknet wallet (not the ChippiPay wallet's account) pays once it is linked
    /// to the ChippiPay wallet with its signature over `PayerLink`; a forged link is refused, and
    /// the link serves that wallet only.
    @Test func aLinkedAccountPaysForItsWallet() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let wallet = try await h.wallet("linker")
            let other = try await h.wallet("linker_other")
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
            let (address, key) = h.accounts[0]
            let own = Harness.Wallet(id: wallet.id, address: address, key: key)
            let hash = try await h.payFromVault(own, deposit: "5", pay: "2.5", to: payTo)
            #expect(try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: wallet, hash: hash), idempotencyKey: "unlinked").0 == .unprocessableContent)
            let chainId = try await h.provider.chainId()
            func link(_ walletID: String, signature: [Felt]) async throws -> HTTPResponse.Status {
                try await h.call(.post, "/v1/chipi-wallets/\(walletID)/payers",
                                 body: #"{"address":"\#(address)","signature":[\#(signature.map { "\"\($0)\"" }.joined(separator: ","))]}"#).0
            }
            let forged = try StarkKey.random().sign(PayerLink.messageHash(chainId: chainId, wallet: wallet.address, payer: address)).felts
            #expect(try await link(wallet.id, signature: forged) == .unprocessableContent)
            let forOther = try key.sign(PayerLink.messageHash(chainId: chainId, wallet: other.address, payer: address)).felts
            #expect(try await link(wallet.id, signature: forOther) == .unprocessableContent, "a link signed for another wallet")
            let signature = try key.sign(PayerLink.messageHash(chainId: chainId, wallet: wallet.address, payer: address)).felts
            #expect(try await link(wallet.id, signature: signature) == .created)
            #expect(try await link(wallet.id, signature: signature) == .ok)
            #expect(try await link("wallet_nope", signature: signature) == .notFound)
            #expect(try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: other, hash: hash), idempotencyKey: "other").0 == .unprocessableContent)
            let (bought, _, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: wallet, hash: hash), idempotencyKey: "linked")
            #expect(bought == .created)
        }
    }

    /// 7.5 STRK paid from the vault for a 2.5 STRK quote: the purchase completes and the 5 STRK
    /// over the quote go back into the payer's vault balance on chain, once, recorded on the purchase.
    @Test func anOverpaymentIsRefunded() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let wallet = try await h.wallet("generous")
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
            let hash = try await h.payFromVault(wallet, deposit: "10", pay: "7.5", to: payTo)
            let vault = VaultContract(address: h.vault, token: h.strk)
            let before = try await h.strk.balance(of: wallet.address)
            #expect(try await vault.balance(of: wallet.address) == SandboxNodeTests.strk("2.5"))
            let (status, created, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: wallet, hash: hash), idempotencyKey: "over")
            #expect(status == .created && created["strk_amount"] == "2.5")
            let done = try await h.settled(try #require(created["transaction_id"]?.stringValue))
            #expect(done["status"] == "completed")
            let refund = try #require(Felt(done["refund_transaction_hash"]?.stringValue ?? ""))
            #expect(try await h.provider.transactionReceipt(refund).succeeded)
            // Back where it was paid from: the vault; the account's own STRK is untouched.
            #expect(try await vault.balance(of: wallet.address) == SandboxNodeTests.strk("7.5"))
            #expect(try await h.strk.balance(of: wallet.address) == before)
        }
    }

    /// Paid straight from the account (a STRK transfer, not the vault): the refund goes back to the
    /// account.
    @Test func aDirectPaymentIsRefundedToTheAccount() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let wallet = try await h.wallet("direct")
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
            let account = StarknetAccount(address: wallet.address, key: wallet.key, provider: h.provider)
            let before = try await h.strk.balance(of: wallet.address)
            let hash = try await account.executeAndWait([h.strk.transfer(to: payTo, SandboxNodeTests.strk("7.5"))],
                                                        poller: Poller(interval: .milliseconds(10), multiplier: 1, maxAttempts: 100)).transactionHash
            let (status, created, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: wallet, hash: hash), idempotencyKey: "direct")
            #expect(status == .created)
            let done = try await h.settled(try #require(created["transaction_id"]?.stringValue))
            #expect(done["status"] == "completed" && done["refund_transaction_hash"]?.stringValue != nil)
            let vault = VaultContract(address: h.vault, token: h.strk)
            #expect(try await vault.balance(of: wallet.address) == .zero)
            // 7.5 went out, 5 came back: 2.5 and the fee (the account paid its own transfer's fee).
            let after = try await h.strk.balance(of: wallet.address)
            #expect(after > before.subtracting(SandboxNodeTests.strk("2.6"))! && after < before.subtracting(SandboxNodeTests.strk("2.5"))!)
        }
    }

    @Test func aRefusedPurchaseIsRefundedOnceOnChain() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let wallet = try await h.wallet("user_789")
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
            let payer = wallet.address
            let hash = try await h.payFromVault(wallet, deposit: "5", pay: "2.5", to: payTo)
            let vault = VaultContract(address: h.vault, token: h.strk)
            let before = try await h.strk.balance(of: payer)
            // The sandbox supplier refuses references ending in 0000.
            let (_, created, _) = try await h.call(.post, "/v1/sku-transactions", body: h.purchaseBody(wallet: wallet, hash: hash, reference: "5512340000"),
                                                   idempotencyKey: "refund-1")
            let id = try #require(created["transaction_id"]?.stringValue)
            let failed = try await h.settled(id)
            #expect(failed["status"] == "failed" && failed["failure_reason"]?.stringValue?.contains("2.5 STRK refunded") == true)
            let refund = try #require(Felt(failed["refund_transaction_hash"]?.stringValue ?? ""))
            #expect(try await h.provider.transactionReceipt(refund).succeeded)
            #expect(try await vault.balance(of: payer) == SandboxNodeTests.strk("5"))
            #expect(try await h.strk.balance(of: payer) == before)
            // A crash after the refund was sent but before it was recorded: the purchase is still
            // pending when the job runs again, which finds the refund on chain and sends no other.
            let environment = h.server.environment
            try await environment.database.transaction { db in
                try await db.raw("UPDATE chippi_sku_transactions SET status = 'pending', failure_reason = NULL, refund_transaction_hash = NULL WHERE id = \(bind: id)").run()
                try await environment.jobs.enqueue(kind: "chippi.fulfil", payload: ["transactionID": id], runAt: environment.now(), in: db)
            }
            let again = try await h.settled(id)
            #expect(again["status"] == "failed" && again["refund_transaction_hash"] == .string(refund.description))
            #expect(try await vault.balance(of: payer) == SandboxNodeTests.strk("5"))
            #expect(try await h.strk.balance(of: payer) == before)
        }
    }

    @Test func thePaymasterRelaysOnlySignedVaultPaymentsOnce() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
            let (address, key) = h.accounts[0]
            let account = StarknetAccount(address: address, key: key, provider: h.provider)
            _ = try await account.executeAndWait(VaultContract(address: h.vault, token: h.strk).depositCalls(SandboxNodeTests.strk("5")),
                                                 poller: Poller(interval: .milliseconds(10), multiplier: 1, maxAttempts: 100))
            func callJSON(_ recipient: Felt) -> String {
                #"[{"to":"\#(h.vault)","selector":"\#(Selector.from(name: "withdraw"))","calldata":["\#(recipient)","0x22b1c8c1227a0000","0x0"]}]"#
            }
            // Only vault withdrawals to the payment address are sponsored, of at least the cheapest quote.
            let (forbidden, _, _) = try await h.call(.post, "/v1/paymaster/build", body: #"{"account":"\#(address)","calls":\#(callJSON(address))}"#)
            #expect(forbidden == .forbidden)
            let dust = #"[{"to":"\#(h.vault)","selector":"\#(Selector.from(name: "withdraw"))","calldata":["\#(payTo)","0x1","0x0"]}]"#
            let (dusty, refusal, _) = try await h.call(.post, "/v1/paymaster/build", body: #"{"account":"\#(address)","calls":\#(dust)}"#)
            #expect(dusty == .forbidden && refusal["error"]?.stringValue?.contains("at least 2.5 STRK") == true, "\(refusal)")
            let (status, built, _) = try await h.call(.post, "/v1/paymaster/build", body: #"{"account":"\#(address)","calls":\#(callJSON(payTo))}"#)
            #expect(status == .ok && built["outside_execution"]?["caller"] == .string(payTo.description))
            let execution = try #require(built["outside_execution"])
            let typed = try JSONDecoder().decode(TypedData.self, from: try JSONEncoder().encode(try #require(built["typed_data"])))
            #expect(try typed.messageHash(account: address).description == built["message_hash"]?.stringValue)
            let signature = try account.signMessage(typed)
            let executionJSON = String(decoding: try JSONEncoder().encode(execution), as: UTF8.self)
            func execute(_ signature: [Felt]) async throws -> (HTTPResponse.Status, JSONValue, HTTPFields) {
                try await h.call(.post, "/v1/paymaster/execute",
                                 body: #"{"account":"\#(address)","outside_execution":\#(executionJSON),"signature":[\#(signature.map { "\"\($0)\"" }.joined(separator: ","))]}"#)
            }
            // Someone else's signature is refused before the relayer spends anything.
            let forged = try StarkKey.random().sign(try typed.messageHash(account: address)).felts
            #expect(try await execute(forged).0 == .unprocessableContent)
            let walletBefore = try await h.strk.balance(of: address)
            let (accepted, relayed, _) = try await execute(signature)
            #expect(accepted == .accepted)
            let hash = try #require(Felt(relayed["transaction_hash"]?.stringValue ?? ""))
            let receipt = try await h.provider.waitForTransaction(hash, poller: Poller(interval: .milliseconds(10), multiplier: 1, maxAttempts: 100))
            #expect(receipt.succeeded)
            #expect(try await h.vaultBalance(of: address) == SandboxNodeTests.strk("2.5"))
            #expect(try await h.strk.balance(of: address) == walletBefore, "the relayer paid the fee")
            // The same signed execution again (an answer that was lost): the same hash, nothing sent.
            let (replayed, again, _) = try await execute(signature)
            #expect(replayed == .ok && again["transaction_hash"] == relayed["transaction_hash"])
            #expect(try await h.vaultBalance(of: address) == SandboxNodeTests.strk("2.5"))
            // Relayed on chain by anyone else, the nonce is spent: the account refuses it.
            let relayer = StarknetAccount(address: h.accounts[1].address, key: h.accounts[1].key, provider: h.provider)
            let direct = Call(to: address, entrypoint: "execute_from_outside_v2",
                              calldata: OutsideExecution(caller: payTo, nonce: Felt(execution["nonce"]!.stringValue!)!,
                                                         executeAfter: Self.integer(execution["execute_after"]),
                                                         executeBefore: Self.integer(execution["execute_before"]),
                                                         calls: [Call(to: h.vault, entrypoint: "withdraw", calldata: [payTo, Felt("0x22b1c8c1227a0000")!, .zero])])
                                  .calldata(signature: signature))
            await #expect(throws: StarknetRPCError.self) { try await relayer.execute([direct]) }
        }
    }

    /// A sandbox account with 10 STRK in the vault, and a way to ask the paymaster to relay its
    /// signed withdrawal of 2.5 STRK to the payment address: (status, body, the request sent).
    static func withdrawalRelayer(_ h: Harness) async throws -> (address: Felt, relay: @Sendable () async throws -> (HTTPResponse.Status, JSONValue, String)) {
        let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
        let payTo = try #require(Felt(quote["payment_address"]?.stringValue ?? ""))
        let (address, key) = h.accounts[0]
        let account = StarknetAccount(address: address, key: key, provider: h.provider)
        _ = try await account.executeAndWait(VaultContract(address: h.vault, token: h.strk).depositCalls(SandboxNodeTests.strk("10")),
                                             poller: Poller(interval: .milliseconds(10), multiplier: 1, maxAttempts: 100))
        let calls = #"[{"to":"\#(h.vault)","selector":"\#(Selector.from(name: "withdraw"))","calldata":["\#(payTo)","0x22b1c8c1227a0000","0x0"]}]"#
        return (address, {
            let (_, built, _) = try await h.call(.post, "/v1/paymaster/build", body: #"{"account":"\#(address)","calls":\#(calls)}"#)
            let execution = String(decoding: try JSONEncoder().encode(try #require(built["outside_execution"])), as: UTF8.self)
            let typed = try JSONDecoder().decode(TypedData.self, from: try JSONEncoder().encode(try #require(built["typed_data"])))
            let signature = try account.signMessage(typed).map { "\"\($0)\"" }.joined(separator: ",")
            let body = #"{"account":"\#(address)","outside_execution":\#(execution),"signature":[\#(signature)]}"#
            let (status, answer, _) = try await h.call(.post, "/v1/paymaster/execute", body: body)
            return (status, answer, body)
        })
    }

    /// The relayer's budget: past an account's sponsored relays for the day, a new signed
    /// withdrawal is refused (429) before anything is sent; a retry of one relayed is still answered.
    @Test func thePaymastersBudgetPerAccount() async throws {
        try await Self.withProvider(configure: { $0.relaysPerAccountDay = 1 }) { (h: Harness) async throws in
            let (address, relay) = try await Self.withdrawalRelayer(h)
            let (first, _, body) = try await relay()
            #expect(first == .accepted)
            #expect(try await h.call(.post, "/v1/paymaster/execute", body: body).0 == .ok, "the same execution again is answered")
            let (second, _, _) = try await relay()
            #expect(second == .tooManyRequests)
            #expect(try await h.vaultBalance(of: address) == SandboxNodeTests.strk("7.5"))
        }
    }

    /// The sponsored fee has its own budget: a relay whose max fee the account's day cannot
    /// cover is refused before anything is sent.
    @Test func thePaymastersFeeBudget() async throws {
        try await Self.withProvider(configure: { $0.feePerAccountDayNano = 1 }) { (h: Harness) async throws in
            let (address, relay) = try await Self.withdrawalRelayer(h)
            let (status, body, _) = try await relay()
            #expect(status == .tooManyRequests && body["error"]?.stringValue?.contains("fee budget") == true, "\(status) \(body)")
            #expect(try await h.vaultBalance(of: address) == SandboxNodeTests.strk("10"), "nothing was sent")
        }
    }

    /// A hundred draws at once on the paymaster's day: exactly the budget passes, in relays and in
    /// fees, on each engine (the rows move by conditional updates, as replicas' draws would).
    @Test(arguments: TestEngines.all)
    func thePaymastersBudgetHoldsUnderAHundredDraws(engine: DatabaseEngine) async throws {
        let server = try await TestServer.make(engine: engine, modules: [ChippiPayModule(configuration: ChippiPayConfiguration(
            sandbox: StarknetSandboxConfiguration(), provider: ChippiProviderConfiguration()))])
        defer { Task { await server.shutdown() } }
        let database = server.environment.database
        let byRelays = VaultPayments.RelayBudget(merchant: "m_relays", perAccount: 7, perMerchant: 1_000, feePerAccount: 1_000_000, feePerMerchant: 1_000_000)
        let byFees = VaultPayments.RelayBudget(merchant: "m_fees", perAccount: 1_000, perMerchant: 1_000, feePerAccount: 1_000, feePerMerchant: 250)
        for (budget, account, fee, expected) in [(byRelays, Felt(UInt64(0x111)), Int64(5), 7), (byFees, Felt(UInt64(0x222)), Int64(30), 8)] {
            let passed = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        do {
                            try await database.transaction { db in try await budget.draw(account: account, fee: fee, day: "2026-11-26", in: db) }
                            return true
                        } catch let error as APIError where error.status == .tooManyRequests { return false }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(passed == expected, "\(budget.merchant): \(passed) draws passed")
        }
    }

    @Test func oneIdempotencyKeyUnderConcurrencyMakesOnePurchase() async throws {
        try await Self.withProvider { (h: Harness) async throws in
            let wallet = try await h.wallet("user_race")
            let (_, quote, _) = try await h.call(.get, "/v1/quote?sku_id=telcel_50")
            let hash = try await h.payFromVault(wallet, deposit: "5", pay: "2.5", to: try #require(Felt(quote["payment_address"]?.stringValue ?? "")))
            let body = h.purchaseBody(wallet: wallet, hash: hash)
            let ids = try await withThrowingTaskGroup(of: String?.self) { group in
                for _ in 0..<100 {
                    group.addTask { try await h.call(.post, "/v1/sku-transactions", body: body, idempotencyKey: "race").1["transaction_id"]?.stringValue }
                }
                return try await group.reduce(into: [String?]()) { $0.append($1) }
            }
            #expect(Set(ids.compactMap { $0 }).count == 1 && ids.allSatisfy { $0 != nil })
            let (_, page, _) = try await h.call(.get, "/v1/sku-transactions")
            #expect(page["data"]?.arrayValue?.count == 1)
        }
    }
}

extension ProviderTests {
    static func integer(_ value: JSONValue?) -> UInt64 {
        switch value {
        case .int(let number)?: UInt64(number)
        case .uint(let number)?: number
        default: 0
        }
    }
}

extension ProviderTests.Harness {
    func vaultBalance(of owner: Felt) async throws -> UInt256 {
        try await VaultContract(address: vault, token: strk).balance(of: owner)
    }
}

import ChippiPayVocabulary
import Foundation
import HTTPTypes
import Hummingbird
import JWTKit
import NIOCore
import PurseDatabase
import PurseFormats
import PurseHTTP
import PurseServer
import SQLKit
import Starknet
import Synchronization

/// Gasless wallets: `POST /v1/chipi-wallets/prepare-creation` reserves a wallet id for an app
/// user, `POST /v1/chipi-wallets` saves the public key and the encrypted private key the device
/// made, `GET /v1/chipi-wallets/{id}` shows it. The `auth_token` is the app user's JWT — from the
/// merchant's own issuer when it configured one, else a session of this server's `/auth` — and
/// its subject must be the wallet's `external_user_id`. The provider never sees the private key,
/// only a blob the user can decrypt with their password.
struct WalletRoutes: Sendable {
    let routes: ProviderRoutes
    let store = WalletStore()

    var environment: ServerEnvironment { routes.environment }

    struct PrepareRequest: Decodable {
        /// The user's token; in user mode the bearer is that token, and this may be left out.
        var auth_token: String?
        var external_user_id: String
        var metadata: JSONValue?
    }

    struct PrepareResponse: Codable {
        var wallet_id: WalletID
        var external_user_id: String
        /// The class the account is deployed from (its address: salt and constructor = the public key).
        var account_class_hash: String
    }

    struct SaveRequest: Decodable {
        var wallet_id: WalletID
        var public_key: String
        var encrypted_private_key: String
        var auth_token: String?
    }

    struct WalletBody: Codable {
        var wallet_id: WalletID
        var external_user_id: String
        var public_key: String?
        var address: String?
        var encrypted_private_key: String?
        var status: WalletStore.Status
        var deploy_transaction_hash: String?
        var created_at: Int64
        /// What the app sent when preparing the wallet (its source, the user's e-mail).
        var metadata: JSONValue? = nil
    }

    struct PayerRequest: Decodable {
        var address: String
        var signature: [String]
    }

    func mount(on group: RouterGroup<PurseRequestContext>) {
        group.post("chipi-wallets/prepare-creation") { request, context in
            var request = request
            let caller = try await routes.caller(request, area: .wallets)
            let merchant = caller.merchant
            let body = try await request.collectJSONBody(context: context)
            let input = try JSONBody.decode(PrepareRequest.self, from: body)
            guard (1...128).contains(input.external_user_id.utf8.count) else { throw ProviderError.invalid("external_user_id must be 1 to 128 bytes") }
            try await authenticate(input.auth_token, caller: caller, user: input.external_user_id)
            let metadata = String(decoding: try JSONEncoder().encode(input.metadata ?? .object([:])), as: UTF8.self)
            guard metadata.utf8.count <= 4096, (input.metadata ?? .object([:])).objectValue != nil else {
                throw ProviderError.invalid("metadata must be an object of at most 4 KB")
            }
            let now = environment.now()
            let id = try await environment.database.transaction { db -> WalletID in
                if let existing = try await store.wallet(ofUser: input.external_user_id, merchant: merchant.id, in: db) {
                    guard existing.status == .prepared else { throw APIError.conflict("external_user_id already has a wallet") }
                    return existing.id
                }
                let id = WalletID(RandomID.make("wallet"))
                try await store.prepare(id: id, merchant: merchant.id, externalUserID: input.external_user_id, metadata: metadata, now: now, in: db)
                return id
            }
            return try Response.json(PrepareResponse(wallet_id: id, external_user_id: input.external_user_id,
                                                     account_class_hash: routes.configuration.accountClassHash.description))
        }
        group.post("chipi-wallets") { request, context in
            var request = request
            let caller = try await routes.caller(request, area: .wallets)
            let merchant = caller.merchant
            let body = try await request.collectJSONBody(context: context)
            let input = try JSONBody.decode(SaveRequest.self, from: body)
            guard let owner = try await environment.database.read({ db in try await store.wallet(input.wallet_id, merchant: merchant.id, in: db) }),
                  caller.reaches(owner.externalUserID) else {
                throw APIError.notFound("Wallet \(input.wallet_id.rawValue.prefix(64)) not found")
            }
            try await authenticate(input.auth_token, caller: caller, user: owner.externalUserID)
            guard let publicKey = Felt(input.public_key), !publicKey.isZero else { throw ProviderError.invalid("public_key must be a Stark public key (0x-hex)") }
            guard (16...4096).contains(input.encrypted_private_key.utf8.count) else {
                throw ProviderError.invalid("encrypted_private_key must be 16 to 4096 characters")
            }
            let classHash = routes.configuration.accountClassHash
            let address = ContractAddress.compute(classHash: classHash, salt: publicKey, constructorCalldata: [publicKey])
            let now = environment.now()
            try await environment.database.transaction { db in
                guard let wallet = try await store.wallet(input.wallet_id, merchant: merchant.id, in: db) else {
                    throw APIError.notFound("Wallet \(input.wallet_id.rawValue.prefix(64)) not found")
                }
                if wallet.status == .active {
                    // Saving the same key again is a retry; another key is a conflict.
                    guard wallet.publicKey == publicKey.description else { throw APIError.conflict("The wallet is already saved with another public key") }
                    return
                }
                try await store.activate(input.wallet_id, publicKey: publicKey.description, encryptedPrivateKey: input.encrypted_private_key,
                                         address: address.description, now: now, in: db)
            }
            try await deploy(wallet: input.wallet_id, publicKey: publicKey, address: address)
            return try Response.json(["success": true])
        }
        // A Starknet account the wallet's purchases may be paid from, proven by the account's
        // signature over `PayerLink` (checked by the account itself on chain).
        group.post("chipi-wallets/{id}/payers") { request, context in
            var request = request
            let caller = try await routes.caller(request, area: .wallets)
            let merchant = caller.merchant
            let id = WalletID(try context.parameters.require("id"))
            let input = try JSONBody.decode(PayerRequest.self, from: try await request.collectJSONBody(context: context))
            let payer = try PaymasterRoutes.address(input.address, "address")
            guard (1...8).contains(input.signature.count) else { throw ProviderError.invalid("signature must be 1 to 8 felts") }
            let signature = try input.signature.map { text -> Felt in
                guard let felt = Felt(text) else { throw ProviderError.invalid("signature must be 0x-hex felts") }
                return felt
            }
            guard let found = try await environment.database.read({ db in try await store.wallet(id, merchant: merchant.id, in: db) }),
                  caller.reaches(found.externalUserID) else {
                throw APIError.notFound("Wallet \(id.rawValue.prefix(64)) not found")
            }
            guard found.status == .active, let wallet = found.address.flatMap({ Felt($0) }) else {
                throw APIError.conflict("Wallet \(id.rawValue.prefix(64)) is not active yet: save it before linking accounts to it")
            }
            let payments = routes.payments
            let chainId: Felt
            do { chainId = try await payments.provider.chainId() } catch { throw APIError(.badGateway, "The Starknet node cannot be reached") }
            let hash = PayerLink.messageHash(chainId: chainId, wallet: wallet, payer: payer)
            try await payments.checkSignature(of: payer, over: hash, signature: signature, what: "the payer link")
            let now = environment.now()
            let linked = try await environment.database.transaction { db in try await store.linkPayer(payer.description, to: id, now: now, in: db) }
            return try Response.json(["wallet_id": id.rawValue, "address": payer.description], status: linked ? .created : .ok)
        }
        group.get("chipi-wallets/{id}") { request, context in
            let caller = try await routes.caller(request, area: .wallets)
            let id = WalletID(try context.parameters.require("id"))
            // Another user's wallet is as absent as one that never was.
            guard let wallet = try await environment.database.read({ db in try await store.wallet(id, merchant: caller.merchant.id, in: db) }),
                  caller.reaches(wallet.externalUserID) else {
                throw APIError.notFound("Wallet \(id.rawValue.prefix(64)) not found")
            }
            return try Response.json(WalletBody(
                wallet_id: wallet.id, external_user_id: wallet.externalUserID, public_key: wallet.publicKey, address: wallet.address,
                encrypted_private_key: wallet.encryptedPrivateKey, status: wallet.status, deploy_transaction_hash: wallet.deployTransactionHash,
                created_at: wallet.createdAt, metadata: wallet.metadata.flatMap { try? StrictJSON.parse(Array($0.utf8)) }))
        }
    }

    /// Deploys the wallet's account through the Universal Deployer from the provider's relayer
    /// (the user pays nothing), unless it is deployed already; records the transaction.
    func deploy(wallet: WalletID, publicKey: Felt, address: Felt) async throws {
        let payments = routes.payments
        do {
            _ = try await payments.provider.classHash(at: address)
            return
        } catch let error as StarknetRPCError where error.kind == .contractNotFound {
            // Not deployed yet.
        } catch {
            throw APIError(.badGateway, "The Starknet node cannot be reached")
        }
        let deployCall = Call(to: ContractAddress.universalDeployer, entrypoint: "deployContract",
                              calldata: [routes.configuration.accountClassHash, publicKey, .zero, .one, publicKey])
        let hash: Felt
        do {
            hash = try await payments.relay([deployCall])
        } catch {
            throw APIError(.badGateway, "The wallet is saved but its account could not be deployed yet; save it again to retry")
        }
        try await environment.database.transaction { db in try await store.recordDeploy(of: wallet, transactionHash: hash.description, in: db) }
    }

    /// Checks that the wallet is for the user who asks: the body's `auth_token` (required with
    /// the secret key; in user mode optional, and then the bearer's user) must name
    /// `externalUserId` (``ProviderRoutes/appUser(of:merchant:)`` says which tokens count).
    func authenticate(_ token: String?, caller: Caller, user externalUserId: String) async throws {
        var subjects: [String] = caller.user.map { [$0] } ?? []
        if let token {
            do {
                subjects.append(try await routes.appUser(of: token, merchant: caller.merchant))
            } catch {
                throw APIError(.unauthorized, "auth_token is not a valid token of this app's users")
            }
        }
        guard !subjects.isEmpty else { throw ProviderError.invalid("auth_token is required") }
        guard subjects.allSatisfy({ $0 == externalUserId }) else { throw APIError(.unauthorized, "auth_token belongs to another user than external_user_id") }
    }
}

/// The claims the provider reads from an app user's JWT: who, and until when.
struct AppUserClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}

/// Merchants' published signing keys (JWKS), fetched when first needed and kept ten minutes; a
/// token signed with a key the copy lacks fetches it again (at most once a minute), so a
/// rotation is picked up at once.
final class IssuerKeys: Sendable {
    let transport: any HTTPTransport
    private let cache = Mutex<[URL: (keys: JWTKeyCollection, fetched: ContinuousClock.Instant)]>([:])

    init(transport: any HTTPTransport) { self.transport = transport }

    func verify(_ token: String, jwks url: URL) async throws -> AppUserClaims {
        let cached = cache.withLock { $0[url] }
        if let cached, ContinuousClock.now - cached.fetched < .seconds(600) {
            do {
                return try await cached.keys.verify(token, as: AppUserClaims.self)
            } catch {
                guard ContinuousClock.now - cached.fetched > .seconds(60) else { throw error }
            }
        }
        let keys = try await fetch(url)
        return try await keys.verify(token, as: AppUserClaims.self)
    }

    func fetch(_ url: URL) async throws -> JWTKeyCollection {
        let response = try await transport.send(TransportRequest(method: .get, url: url, headerFields: [.accept: "application/json"], timeout: .seconds(10)))
        guard response.status == 200, response.body.count <= 256 << 10 else { throw JWTError.generic(identifier: "jwks", reason: "HTTP \(response.status.code)") }
        let keys = JWTKeyCollection()
        try await keys.add(jwksJSON: String(decoding: response.body, as: UTF8.self))
        cache.withLock { $0[url] = (keys, .now) }
        return keys
    }
}

import Crypto
import CutiEVocabulary
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import PurseDatabase
import PurseFormats
import PurseHTTP
import PurseServer
import SQLKit
import Synchronization

/// The device a signed SDK request comes from.
struct DeviceCaller: Sendable {
    var appID: String
    var deviceID: String
    var groupID: String
    var tokenID: String
    /// The counter of an App Attest assertion checked on this request, stored by
    /// ``DeviceAuthenticator/commitAssertion(_:)`` before the route acts.
    var assertedCounter: Int64?
    /// The client's address (``ServerEnvironment/clientAddress(of:context:)``), for the limits
    /// that count per network.
    var clientAddress: String? = nil
    /// The device attested a key with App Attest: one real device, which a script cannot be.
    var attested = false

    /// The idempotency owner of this device's requests.
    var idempotencyOwner: UserID { UserID("cutie/\(appID)/\(deviceID)") }
}

/// The `code` of Cuti-E's refusals a client acts on (the SDK maps them to
/// `CutiEError.appAttestRequired`): never classified by message text.
enum CutiEErrorCode {
    /// The app accepts only attested devices, and this one has not attested its key.
    static let appAttestRequired = "app_attest_required"
    /// An App Attest assertion was missing a part, malformed, or refused.
    static let appAttestRefused = "app_attest_refused"
}

/// Whether a signed route takes part in App Attest's "assertions required".
enum AssertionPolicy: Sendable {
    /// As the app's settings say (every SDK route).
    case asApp
    /// Never required: the routes a device attests through.
    case exempt
}

/// Device registration, the device token and the request signature ("Device Signature (SHA256)"
/// in the seed).
///
/// Registering gives a device a bearer `device_token` and a `device_secret`. Every later request
/// carries `X-App-ID` and `X-Device-Token` (and `X-Device-ID`, which must be the token's device),
/// as the Cuti-E SDK sends them. A signed request adds `X-Timestamp` (Unix milliseconds) and
/// `X-Signature`: the lowercase hex HMAC-SHA256, keyed with the device secret, of
///
///     timestamp "\n" METHOD "\n" path-and-query "\n" hex(SHA-256(body))
///
/// The Purse SDK signs every request; an app that sets `require_signed_requests` accepts only
/// signed ones, and one that requires App Attest takes a token alone only from an attested
/// device. A signature is always checked when sent: a request older or newer than the window (5
/// minutes) or with another signature is 401. The token is kept only as its SHA-256; the secret
/// is never stored: it is HMAC(server key, token id), so a leaked database does not let anyone
/// sign, and a captured signed request (token in hand) cannot be altered or replayed after the
/// window.
struct DeviceAuthenticator: Sendable {
    let environment: ServerEnvironment
    let configuration: CutiEConfiguration
    /// Parsed attested public keys by their stored text (a key never changes under its text).
    let attestedKeys = AttestedKeyCache()

    static let unauthorized = APIError(.unauthorized, "Invalid or missing device credentials")
    static let blocked = APIError.forbidden("This device or network is blocked by the app's support")

    /// The secret of a token.
    func secret(tokenID: String) -> SymmetricKey {
        SymmetricKey(data: HMAC<SHA256>.authenticationCode(for: Data("cutie device secret \(tokenID)".utf8), using: configuration.deviceSecretKey))
    }

    /// The text a request's signature covers (``CutiESignedText``, its `Idempotency-Key` included).
    static func signedText(timestamp: String, method: String, path: String, body: some DataProtocol, idempotencyKey: String?) -> String {
        CutiESignedText.make(timestamp: timestamp, method: method, target: path, bodySHA256Hex: Hex.encode(SHA256.hash(data: body)),
                             idempotencyKey: idempotencyKey)
    }

    /// The request's app, which must exist (401 otherwise: the SDK was configured with a wrong id).
    func app(of request: Request, in db: any DatabaseSession) async throws -> CutiEApp {
        guard let id = request.headers[.appID], id.utf8.count <= 64, let app = try await CutiEApp.load(id, in: db) else {
            throw APIError(.unauthorized, "Unknown app: X-App-ID must name an app of this server")
        }
        return app
    }

    /// The device of a signed request, or 401; an App Attest assertion it carries is checked and
    /// its counter stored.
    func authenticate(_ request: Request, body: ByteBuffer, assertions: AssertionPolicy = .asApp) async throws -> DeviceCaller {
        try checkForm(request)
        let caller = try await environment.database.read { db in try await authenticate(request, body: body, assertions: assertions, in: db) }
        try await commitAssertion(caller)
        return caller
    }

    /// The same inside a read the route goes on using (one database round trip fewer); the
    /// route then calls ``commitAssertion(_:)`` before it answers.
    func authenticate(_ request: Request, body: ByteBuffer, assertions: AssertionPolicy = .asApp, in db: any DatabaseSession) async throws -> DeviceCaller {
        let (appID, token, signed) = try checkForm(request)
        let hash = SecretDigest.hex(token)
        guard let found = try await DeviceStore().credentials(tokenHash: hash, in: db), !found.revoked, found.appID == appID else {
            throw Self.unauthorized
        }
        var caller = DeviceCaller(appID: appID, deviceID: found.deviceID, groupID: found.groupID, tokenID: found.tokenID)
        caller.attested = found.attestedKey != nil
        // 403, never 401: a 401 makes an SDK drop its token and register again.
        if found.blocked { throw Self.blocked }
        // The id the device sends is the one it registered with, which is not the identity's own.
        if let claimed = request.headers[.deviceID], claimed != found.clientDeviceID { throw Self.unauthorized }
        let publicKey = found.attestedKey
        guard let (timestamp, signature) = signed else {
            // The device token alone, as the Cuti-E SDK sends it.
            if found.requireSignedRequests {
                throw APIError(.unauthorized, "Signed requests required: this app accepts only requests with X-Timestamp and X-Signature")
            }
            if request.headers[.appAssertion] != nil {
                throw APIError(.unauthorized, "App Attest: X-App-Assertion covers a signed request: send X-Timestamp and X-Signature with it", code: CutiEErrorCode.appAttestRefused)
            }
            if assertions == .asApp, found.requireAppAttest, publicKey == nil {
                throw APIError(.unauthorized, "App Attest required: this app accepts only attested devices (POST /v1/device/attest/challenge, then /v1/device/attest)", code: CutiEErrorCode.appAttestRequired)
            }
            return caller
        }
        let text = Self.signedText(timestamp: timestamp, method: request.method.rawValue, path: request.uri.description, body: body.readableBytesView,
                                   idempotencyKey: request.headers[.idempotencyKey])
        // The signature as bytes, checked in constant time against the MAC (either case of hex).
        guard signature.utf8.count == 2 * SHA256.byteCount, let mac = Hex.decode(signature),
              HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Array(text.utf8), using: secret(tokenID: caller.tokenID)) else {
            throw APIError(.unauthorized, "Invalid request signature")
        }
        // App Attest: an assertion over the same text the signature covers.
        if let assertion = request.headers[.appAssertion] {
            guard let publicKey, let key = attestedKeys.key(publicKey), let teamID = found.teamID else {
                throw APIError(.unauthorized, "App Attest: X-App-Assertion was sent but this device has no attested key", code: CutiEErrorCode.appAttestRefused)
            }
            guard assertion.utf8.count <= 4096, let bytes = Data(base64Encoded: assertion) else {
                throw APIError(.unauthorized, "App Attest: X-App-Assertion must be base64 CBOR", code: CutiEErrorCode.appAttestRefused)
            }
            do {
                caller.assertedCounter = try AppAttestVerifier.verifyAssertion(
                    bytes, clientData: Data(text.utf8), publicKey: key, appID: "\(teamID).\(found.bundleID)", after: found.signCount ?? 0)
            } catch {
                environment.logger.notice("App Attest assertion refused", metadata: ["app_id": "\(appID)", "device_id": "\(caller.deviceID)", "check": "\(error)"])
                throw APIError(.unauthorized, "App Attest: \(error)", code: CutiEErrorCode.appAttestRefused)
            }
        } else if assertions == .asApp, found.requireAppAttest {
            throw APIError(.unauthorized, publicKey == nil
                ? "App Attest required: this app accepts only attested devices (POST /v1/device/attest/challenge, then /v1/device/attest)"
                : "App Attest required: send X-App-Assertion with every request", code: CutiEErrorCode.appAttestRequired)
        }
        return caller
    }

    /// Stores the counter of the assertion a request carried; a replayed or reordered one (its
    /// counter not above the stored one, whichever replica stored it) is refused here.
    func commitAssertion(_ caller: DeviceCaller) async throws {
        guard let counter = caller.assertedCounter else { return }
        let now = environment.now().epochMillis
        let stored = try await environment.database.transaction { db in
            try await AttestStore().storeCounter(counter, app: caller.appID, device: caller.deviceID, now: now, in: db)
        }
        guard stored else { throw APIError(.unauthorized, "App Attest: the assertion's counter was already used (a replay)", code: CutiEErrorCode.appAttestRefused) }
    }

    /// The request's credentials, present (and a signature's timestamp fresh) before anything
    /// is read: the app and device token, and the signature when the request is signed.
    @discardableResult
    func checkForm(_ request: Request) throws -> (appID: String, token: String, signed: (timestamp: String, signature: String)?) {
        guard let appID = request.headers[.appID], let token = request.headers[.deviceToken], token.utf8.count <= 200 else {
            throw Self.unauthorized
        }
        let timestamp = request.headers[.requestTimestamp], signature = request.headers[.requestSignature]
        guard let timestamp, let signature else {
            if timestamp != nil || signature != nil { throw APIError(.unauthorized, "A signed request carries both X-Timestamp and X-Signature") }
            return (appID, token, nil)
        }
        guard let millis = Int64(timestamp), CheckedAmount.within(Int64(configuration.signatureWindow * 1000), environment.now().epochMillis, millis) else {
            throw APIError(.unauthorized, "Stale request: X-Timestamp must be within \(Int(configuration.signatureWindow)) seconds of the server's clock")
        }
        return (appID, token, (timestamp, signature))
    }

    struct Registration: Encodable {
        var device_token: String
        var device_secret: String
        var token_id: String
        var is_new: Bool
        var group_id: String
    }

    struct RegisterBody: Decodable {
        var app_version: String?
        var os_version: String?
        var device_model: String?
        var device_name: String?
        var app_name: String?
    }

    /// `POST /v1/device/register`: a device gets a bearer token and the secret it signs with.
    ///
    /// A device id is not a credential: the SDK sends it with every request, and conversations
    /// and link lists name devices. So the id a device registers with (`X-Device-ID`, its
    /// *claimed* id) only labels it; the identity that owns an inbox is made here, with an id of
    /// its own that no request names. Continuity needs proof of possession:
    ///
    /// - A request carrying the device's current token (signed with its secret where the device
    ///   signs, and as the app's rules require) is the device itself asking for a new token: the
    ///   same identity and group (`is_new: false`), its older tokens revoked.
    /// - Anything else (an id alone, a revoked or foreign token, a bad signature) makes a new
    ///   identity with an empty inbox (`is_new: true`), drawing from the address's new-device
    ///   budget (or, for an id the app knows, from that id's own re-registration budget), and
    ///   leaves every existing identity, its token and its push registration alone.
    ///   The Cuti-E SDK registers this way after it loses its token, and so starts afresh.
    func register(_ request: Request, body: ByteBuffer, address: String?, limits: DeviceLimits) async throws -> Response {
        guard let deviceID = request.headers[.deviceID], Self.isDeviceID(deviceID) else {
            throw APIError.badRequest("X-Device-ID must be device_ followed by a UUID")
        }
        let details: RegisterBody = body.readableBytes == 0 ? RegisterBody() : try JSONBody.decode(RegisterBody.self, from: body)
        if let name = details.device_name { try Limits.text(name, field: "device_name", max: 100) }
        let proven = try await possession(request, body: body, claimedID: deviceID)
        if proven == nil {
            if let address, let appID = request.headers[.appID], appID.utf8.count <= 64,
               try await environment.database.read({ db in
                   try await QuotaStore().isBlocked(app: appID, kind: .address, value: DeviceLimits.addressKey(address, app: appID), in: db)
               }) {
                throw Self.blocked
            }
            let appID = request.headers[.appID] ?? ""
            var known = false
            if appID.utf8.count <= 64 {
                known = try await environment.database.read { db in try await DeviceStore().knows(clientID: deviceID, app: appID, in: db) }
            }
            if known {
                try await limits.admitReregistration(app: appID, clientID: deviceID, address: address, now: environment.now())
            } else {
                try await limits.admitNewDevice(app: appID, address: address, now: environment.now())
            }
        }
        let now = environment.now().epochMillis
        let token = "cdt_" + Base64URL.encode(RandomID.bytes(32))
        let tokenID = RandomID.make("tok")
        let answer: Registration = try await environment.database.transaction { db in
            let app = try await app(of: request, in: db)
            let devices = DeviceStore()
            let identity: String, groupID: String
            if let proven {
                (identity, groupID) = (proven.deviceID, proven.groupID)
                try await devices.reregister(app: app.id, device: identity, name: details.device_name, now: now, in: db)
            } else {
                identity = Self.newIdentity()
                groupID = RandomID.make("grp")
                try await devices.register(app: app.id, device: identity, claimedID: deviceID, group: groupID,
                                           name: details.device_name ?? details.device_model, now: now, in: db)
            }
            try await devices.insertToken(id: tokenID, hash: SecretDigest.hex(token), app: app.id, device: identity, now: now, in: db)
            return Registration(device_token: token, device_secret: "", token_id: tokenID, is_new: proven == nil, group_id: groupID)
        }
        var registration = answer
        registration.device_secret = Base64URL.encode(secret(tokenID: tokenID).withUnsafeBytes { Array($0) })
        return try Response.json(registration)
    }

    /// The identity a registration proves it holds: its current token (checked as on any
    /// request, with the signature and assertion it carries), for the id it claims. Nil when it
    /// proves nothing; a refused proof is not an error here, it is a new device.
    func possession(_ request: Request, body: ByteBuffer, claimedID: String) async throws -> DeviceCaller? {
        guard request.headers[.deviceToken] != nil else { return nil }
        do {
            let caller = try await authenticate(request, body: body, assertions: .exempt)
            return caller
        } catch let error as APIError where error.status == .unauthorized {
            return nil
        }
    }

    /// A new identity's id: the claimed id's form, random, never sent by a device.
    static func newIdentity() -> String { "device_" + UUID().uuidString.lowercased() }

    static func isDeviceID(_ text: String) -> Bool {
        text.hasPrefix("device_") && text.utf8.count == 43 && UUID(uuidString: String(text.dropFirst(7))) != nil
    }
}

/// Length limits, counted in characters (Unicode scalars), with the field named in the error.
enum Limits {
    static func text(_ text: String, field: String, max: Int, allowEmpty: Bool = false) throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if !allowEmpty, trimmed.isEmpty { throw APIError.badRequest("\(field) must not be empty") }
        if text.unicodeScalars.count > max { throw APIError.badRequest("\(field) is too long: at most \(max) characters") }
        if text.unicodeScalars.contains(where: { $0.value == 0 }) { throw APIError.badRequest("\(field) must not contain NUL characters") }
    }
}

/// Attested public keys, parsed once: validating a point on the curve is a good part of checking
/// an assertion. Keyed by the stored key itself, so it can never answer for another key; bounded.
final class AttestedKeyCache: Sendable {
    private let keys = Mutex<[String: P256.Signing.PublicKey]>([:])

    func key(_ text: String) -> P256.Signing.PublicKey? {
        if let key = keys.withLock({ $0[text] }) { return key }
        guard let bytes = Data(base64Encoded: text), let key = try? P256.Signing.PublicKey(x963Representation: bytes) else { return nil }
        keys.withLock {
            if $0.count >= 10_000 { $0.removeAll(keepingCapacity: true) }
            $0[text] = key
        }
        return key
    }
}

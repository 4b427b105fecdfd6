import Foundation
import HTTPTypes
import NexusVocabulary
import PurseDatabase
import PurseServer

/// JSON bodies of the Nexus API, exactly as the seed design shows them.
enum NexusWire {
    struct CredentialDescriptor: Codable, Equatable {
        var id: String
        var type = "public-key"
        var transports: [String]
    }

    /// `GET /biometric/auth/options`.
    struct AuthenticationOptions: Codable {
        var challenge: String
        var rpId: String
        var allowCredentials: [CredentialDescriptor]
        var userVerification: String
        var timeout: Int
    }

    /// `POST /biometric/register/options` (`PublicKeyCredentialCreationOptionsJSON`).
    struct CreationOptions: Codable {
        struct RP: Codable { var id: String; var name: String }
        struct UserEntity: Codable { var id: String; var name: String; var displayName: String }
        struct Param: Codable { var type = "public-key"; var alg: Int }
        struct Selection: Codable {
            var authenticatorAttachment: String?
            var residentKey: String
            var userVerification: String
        }
        var rp: RP
        var user: UserEntity
        var challenge: String
        var pubKeyCredParams: [Param]
        var timeout: Int
        var attestation: String
        var authenticatorSelection: Selection
        var excludeCredentials: [CredentialDescriptor]
    }

    struct RegisterVerifyRequest: Decodable {
        var id: String
        var rawId: String
        var response: RegistrationResponseJSON.Response
        var type: String
        /// A label for the device ("iPhone 15"), optional.
        var name: String?
        var registration: RegistrationResponseJSON { RegistrationResponseJSON(id: id, rawId: rawId, response: response, type: type) }
    }

    struct Credential: Codable {
        var id: String
        var name: String?
        var transports: [String]
        var attestationFormat: String
        var createdAt: Date
        var lastUsedAt: Date?
    }

    struct VerifySuccess: Codable {
        var verified = true
        var verificationToken: String
        var expiresIn: Int
        var message = "Authentication successful"
    }

    struct VerifyFailure: Codable {
        var verified = false
        var message: String
    }

    struct TopupRequest: Decodable {
        var amount: Int
        var productCode: String
        /// Absent: the account's own phone (the seed's PIN body has none).
        var recipientPhone: String?
        var verificationToken: String?
        var pin: String?
        var supplierSlug: String?
        var useCashback: Bool?
    }

    struct TopupData: Codable {
        var transactionId: TransactionID
        var status: TransactionStatus
        var amount: Int
        var balance: Int
        var timestamp: String
        var cashbackUsed: Int
        var cashbackEarned: Int
    }

    struct TopupResponse: Codable {
        var success = true
        var message = "Topup successful"
        var data: TopupData

        /// What `JSONCoding.encoder` makes of it, written directly: it is encoded inside the
        /// top-up's write transaction (stored with the idempotency key), where every other
        /// write waits for it.
        var json: Data {
            var data = JSONObjectWriter()
            data.field("amount", self.data.amount)
            data.field("balance", self.data.balance)
            data.field("cashbackEarned", self.data.cashbackEarned)
            data.field("cashbackUsed", self.data.cashbackUsed)
            data.field("status", self.data.status.rawValue)
            data.field("timestamp", self.data.timestamp)
            data.field("transactionId", self.data.transactionId.rawValue)
            var response = JSONObjectWriter()
            response.field("data", data)
            response.field("message", message)
            response.field("success", success)
            return response.data
        }
    }

    struct Product: Codable {
        var code: String
        var supplierSlug: String
        var network: String
        var category: String
        var name: String
        var minAmount: Int
        var maxAmount: Int
        /// The supplier's service (`mtn`, `mtn-data` …) and plan: not part of the listing.
        var supplierServiceID: String? = nil
        var supplierVariationCode: String? = nil

        enum CodingKeys: String, CodingKey { case code, supplierSlug, network, category, name, minAmount, maxAmount }
    }

    struct Balance: Codable {
        var balance: Int
        var cashback: Int
        var currency = "NGN"
    }

    struct Transaction: Codable {
        var transactionId: TransactionID
        var kind: TransactionKind
        var productCode: String?
        var recipientPhone: String?
        var amount: Int
        var cashbackUsed: Int
        var cashbackEarned: Int
        var method: TopupMethod?
        var status: TransactionStatus
        var timestamp: String
        /// Why a top-up failed, in words for the customer.
        var failureReason: String? = nil
    }

    struct TransactionAnswer: Encodable {
        var success = true
        var data: Transaction
    }

    struct TransactionPage: Codable {
        var data: [Transaction]
        var hasMore: Bool
        var nextCursor: String?
    }

    struct PinRequest: Decodable {
        var pin: String
        var currentPin: String?
        var verificationToken: String?
    }

    struct FundRequest: Decodable {
        var amount: Int
    }

    struct FundResponse: Codable {
        var success = true
        var message = "Wallet funded"
        var data: FundData
        struct FundData: Codable { var transactionId: TransactionID; var amount: Int; var balance: Int; var timestamp: String }
    }

    struct Ok: Codable {
        var success = true
        var message: String
    }
}

/// Nexus's failure bodies: `{"success": false, "message", "code", "param"?}` for wallet routes,
/// `{"verified": false, "message"}` for verification (as the seed shows).
enum NexusFailure {
    static func error(_ status: HTTPResponse.Status, _ code: String, _ message: String, param: String? = nil, headers: HTTPFields = [:]) -> APIError {
        struct Body: Encodable { var success = false; var message: String; var code: String; var param: String? }
        return APIError(status, body: Body(message: message, code: code, param: param), headers: headers)
    }

    static func verification(_ status: HTTPResponse.Status, _ message: String) -> APIError {
        APIError(status, body: NexusWire.VerifyFailure(message: message))
    }

    /// Rewrites the foundation's decoding errors (`{"error": …}`) into the Nexus wallet shape.
    static func decoding<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as APIError where error.status == .badRequest {
            throw Self.error(.badRequest, "invalid_request", error.message ?? "Invalid request body")
        }
    }

    static func decodingVerification<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as APIError where error.status == .badRequest {
            throw verification(.badRequest, error.message ?? "Invalid request body")
        }
    }
}

/// Naira on the wire, kobo in the ledger.
enum Naira {
    static let currency = "NGN"
    static func kobo(_ naira: Int) -> Int64 { Int64(naira) * 100 }
    static func naira(_ kobo: Int64) -> Int { Int(kobo / 100) }
}

enum Timestamp {
    static func iso(_ date: Date) -> String {
        InternetDateTime.string(from: date)
    }
}

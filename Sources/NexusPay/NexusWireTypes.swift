import Foundation
@_exported import NexusVocabulary

/// `GET /biometric/auth/options`.
public struct AuthenticationOptions: Codable, Sendable, Equatable {
    public struct Credential: Codable, Sendable, Equatable {
        public var id: String
        public var type: String
        public var transports: [String]?

        public init(id: String, type: String = "public-key", transports: [String]? = nil) {
            self.id = id
            self.type = type
            self.transports = transports
        }
    }
    public var challenge: String
    public var rpId: String
    public var allowCredentials: [Credential]
    public var userVerification: String
    public var timeout: Int

    public init(challenge: String, rpId: String, allowCredentials: [Credential], userVerification: String, timeout: Int) {
        self.challenge = challenge
        self.rpId = rpId
        self.allowCredentials = allowCredentials
        self.userVerification = userVerification
        self.timeout = timeout
    }
}

/// `POST /biometric/register/options`.
public struct CreationOptions: Codable, Sendable, Equatable {
    public struct RP: Codable, Sendable, Equatable { public var id: String; public var name: String }
    public struct User: Codable, Sendable, Equatable { public var id: String; public var name: String; public var displayName: String }
    public struct Selection: Codable, Sendable, Equatable { public var userVerification: String }
    public var rp: RP
    public var user: User
    public var challenge: String
    public var timeout: Int
    public var attestation: String
    public var authenticatorSelection: Selection
    public var excludeCredentials: [AuthenticationOptions.Credential]
}

/// An assertion as `POST /biometric/auth/verify` takes it.
public struct Assertion: Codable, Sendable, Equatable {
    public struct Response: Codable, Sendable, Equatable {
        public var clientDataJSON: String
        public var authenticatorData: String
        public var signature: String
        public var userHandle: String?

        public init(clientDataJSON: String, authenticatorData: String, signature: String, userHandle: String?) {
            self.clientDataJSON = clientDataJSON
            self.authenticatorData = authenticatorData
            self.signature = signature
            self.userHandle = userHandle
        }
    }
    public var id: String
    public var rawId: String
    public var response: Response
    public var type = "public-key"

    public init(id: String, rawId: String, response: Response) {
        self.id = id
        self.rawId = rawId
        self.response = response
    }
}

/// A registration as `POST /biometric/register/verify` takes it.
public struct Registration: Codable, Sendable, Equatable {
    public struct Response: Codable, Sendable, Equatable {
        public var clientDataJSON: String
        public var attestationObject: String
        public var transports: [String]
    }
    public var id: String
    public var rawId: String
    public var response: Response
    public var type = "public-key"
    public var name: String?
}

public struct VerificationResult: Codable, Sendable, Equatable {
    public var verified: Bool
    public var verificationToken: String
    public var expiresIn: Int
    public var message: String
}

/// What the user is buying.
public struct TopupOrder: Codable, Sendable, Equatable {
    public var amount: Int
    public var productCode: String
    public var recipientPhone: String
    public var supplierSlug: String?
    public var useCashback: Bool

    public init(amount: Int, productCode: String, recipientPhone: String, supplierSlug: String? = nil, useCashback: Bool = false) {
        self.amount = amount
        self.productCode = productCode
        self.recipientPhone = recipientPhone
        self.supplierSlug = supplierSlug
        self.useCashback = useCashback
    }
}

/// How a top-up is authorised.
public enum TopupAuthorization: Sendable, Equatable {
    case verificationToken(String)
    case pin(String)
}

/// `POST /user/topup` → `data`.
public struct TopupReceipt: Codable, Sendable, Equatable {
    public var transactionId: TransactionID
    public var status: TransactionStatus
    public var amount: Int
    public var balance: Int
    public var timestamp: String
    public var cashbackUsed: Int?
    public var cashbackEarned: Int?

    public init(transactionId: TransactionID, status: TransactionStatus, amount: Int, balance: Int, timestamp: String, cashbackUsed: Int? = nil, cashbackEarned: Int? = nil) {
        self.transactionId = transactionId
        self.status = status
        self.amount = amount
        self.balance = balance
        self.timestamp = timestamp
        self.cashbackUsed = cashbackUsed
        self.cashbackEarned = cashbackEarned
    }
}

public struct Product: Codable, Sendable, Equatable {
    public var code: String
    public var supplierSlug: String
    public var network: String
    public var category: String
    public var name: String
    public var minAmount: Int
    public var maxAmount: Int
}

public struct WalletBalance: Codable, Sendable, Equatable {
    public var balance: Int
    public var cashback: Int
    public var currency: String
}

public struct WalletTransaction: Codable, Sendable, Equatable {
    public var transactionId: TransactionID
    public var kind: TransactionKind
    public var productCode: String?
    public var recipientPhone: String?
    public var amount: Int
    public var method: TopupMethod?
    public var status: TransactionStatus
    public var timestamp: String
    /// Why a top-up failed (its price went back to the wallet).
    public var failureReason: String?

    public init(
        transactionId: TransactionID, kind: TransactionKind, productCode: String?, recipientPhone: String?, amount: Int, method: TopupMethod?,
        status: TransactionStatus,
        timestamp: String, failureReason: String? = nil
    ) {
        self.transactionId = transactionId
        self.kind = kind
        self.productCode = productCode
        self.recipientPhone = recipientPhone
        self.amount = amount
        self.method = method
        self.status = status
        self.timestamp = timestamp
        self.failureReason = failureReason
    }
}

public struct TransactionPage: Codable, Sendable, Equatable {
    public var data: [WalletTransaction]
    public var hasMore: Bool
    public var nextCursor: String?
}

public struct EnrolledCredential: Codable, Sendable, Equatable {
    public var id: String
    public var name: String?
    public var transports: [String]
    public var attestationFormat: String
}

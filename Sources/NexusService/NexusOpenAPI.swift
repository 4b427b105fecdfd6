import HTTPTypes
import PurseDatabase
import PurseServer

enum NexusOpenAPI {
    static let failure = Schema.ref("NexusFailure")
    static let verifyFailure = Schema.ref("VerifyFailure")

    static let pin = Schema.pattern("^[0-9]{4}$")
    static let base64URL = Schema.pattern("^[A-Za-z0-9_-]*$")
    /// Four digits, not all the same and not a run up or down (`NexusController.isAcceptablePin`).
    static let newPin: YAMLValue = [
        "type": "string", "pattern": "^[0-9]{4}$",
        "not": ["enum": .array((0...9).map { YAMLValue.string(String(repeating: String($0), count: 4)) }
            + (0...6).flatMap { start in
                let run = (start..<start + 4).map(String.init).joined()
                return [YAMLValue.string(run), .string(String(run.reversed()))]
            })],
    ]

    static func fragment(sandboxFunding: Bool, supplierSandbox: Bool) -> OpenAPIFragment {
        var operations: [OpenAPIOperation] = [
            OpenAPIOperation(.post, "/biometric/register/options", summary: "WebAuthn creation options (attestation none, ES256)", tag: "nexus", requiresAuth: true,
                             responses: [(200, "PublicKeyCredentialCreationOptionsJSON", Schema.ref("CreationOptions"))]),
            OpenAPIOperation(.post, "/biometric/register/verify", summary: "Verify a registration and store the credential", tag: "nexus", requiresAuth: true,
                             request: Schema.ref("RegistrationResponseJSON"),
                             responses: [(201, "Credential stored", Schema.object([("verified", Schema.boolean), ("credential", Schema.ref("Credential"))])),
                                         (400, "Malformed", verifyFailure), (401, "A check failed", verifyFailure), (409, "Already registered", verifyFailure)],
                             errorSchema: verifyFailure),
            OpenAPIOperation(.get, "/biometric/credentials", summary: "The user's credentials", tag: "nexus", requiresAuth: true,
                             responses: [(200, "Credentials", Schema.object([("credentials", Schema.array(Schema.ref("Credential")))]))]),
            OpenAPIOperation(.delete, "/biometric/credentials/{id}", summary: "Remove a credential", tag: "nexus", requiresAuth: true,
                             responses: [(204, "Removed", nil), (404, "No such credential", failure)]),
            OpenAPIOperation(.get, "/biometric/auth/options", summary: "Step-up challenge (single use, 60 s)", tag: "nexus", requiresAuth: true,
                             responses: [(200, "Request options", Schema.ref("AuthenticationOptions")), (400, "Unknown intent", failure), (404, "No credential enrolled", failure)],
                             query: [OpenAPIParameter("intent", "transaction (default) or unlock", schema: Schema.oneOf(["transaction", "unlock"]))]),
            OpenAPIOperation(.post, "/biometric/auth/verify", summary: "Verify an assertion; returns a 300 s single-use verificationToken", tag: "nexus", requiresAuth: true,
                             request: Schema.ref("AuthenticationResponseJSON"),
                             responses: [(200, "Verified", Schema.ref("VerifySuccess")), (400, "Malformed", verifyFailure), (401, "A check failed", verifyFailure)],
                             errorSchema: verifyFailure),
            OpenAPIOperation(.get, "/products", summary: "Airtime and data products (naira)", tag: "nexus",
                             responses: [(200, "Catalogue", Schema.object([("products", Schema.array(Schema.ref("Product")))]))]),
            OpenAPIOperation(.post, "/user/topup", summary: "Buy airtime or data with a verificationToken or the PIN", tag: "nexus", requiresAuth: true, idempotent: true,
                             request: Schema.ref("TopupRequest"),
                             responses: [(200, "Paid: data.status is completed (delivered), pending (the supplier has not confirmed; follow GET /user/transactions/{id}) or failed (refunded, success false)",
                                          Schema.ref("TopupResponse")), (400, "Invalid request", failure), (401, "Not authorised", failure),
                                         (402, "Insufficient balance", failure), (423, "PIN locked", failure),
                                         (429, "As many PIN checks as the PIN allows are running: retry (Retry-After)", failure)]),
            OpenAPIOperation(.get, "/user/balance", summary: "Wallet and cashback balances (naira)", tag: "nexus", requiresAuth: true,
                             responses: [(200, "Balances", Schema.object([("balance", Schema.integer), ("cashback", Schema.integer), ("currency", Schema.string)]))]),
            OpenAPIOperation(.get, "/user/transactions", summary: "Wallet history, newest first", tag: "nexus", requiresAuth: true,
                             responses: [(200, "A page", Schema.object([("data", Schema.array(Schema.ref("Transaction"))), ("hasMore", Schema.boolean), ("nextCursor", Schema.string)])),
                                         (400, "Bad paging", failure)],
                             query: [OpenAPIParameter("limit", "1-100, default 20", schema: Schema.integer(1...100)),
                                     OpenAPIParameter("cursor", "nextCursor of the previous page")]),
            OpenAPIOperation(.get, "/user/transactions/{id}", summary: "One wallet transaction; a top-up's status moves from pending to completed or failed", tag: "nexus",
                             requiresAuth: true,
                             responses: [(200, "The transaction", Schema.object([("success", Schema.boolean), ("data", Schema.ref("Transaction"))])), (404, "No such transaction", failure)]),
            OpenAPIOperation(.put, "/user/pin", summary: "Set or change the 4-digit transaction PIN", tag: "nexus", requiresAuth: true,
                             request: Schema.object([("pin", newPin), ("currentPin", pin), ("verificationToken", Schema.string)], required: ["pin"]),
                             responses: [(200, "PIN set", Schema.object([("success", Schema.boolean), ("message", Schema.string)])), (400, "Invalid PIN", failure), (401, "Not authorised", failure),
                                         (423, "Too many wrong current PINs", failure)]),
            OpenAPIOperation(.get, "/nexus/checkout", summary: "Web checkout page", tag: "nexus", responses: [(200, "HTML", Schema.string)], produces: "text/html"),
            OpenAPIOperation(.get, "/nexus/enroll", summary: "Passkey enrolment page", tag: "nexus", responses: [(200, "HTML", Schema.string)], produces: "text/html"),
        ]
        if sandboxFunding {
            operations.append(OpenAPIOperation(.post, "/sandbox/nexus/fund", summary: "Sandbox only: credit the caller's wallet", tag: "nexus", requiresAuth: true, idempotent: true,
                                               request: Schema.object([("amount", Schema.integer(1...10_000_000))], required: ["amount"]),
                                               responses: [(201, "Funded", Schema.object([("success", Schema.boolean), ("data", Schema.object([("balance", Schema.integer)]))])),
                                                           (400, "Invalid amount", failure)]))
        }
        if supplierSandbox {
            // VTpass answers every refusal, a missing body included, with a code inside HTTP 200.
            let answer = Schema.object([("code", Schema.string), ("response_description", Schema.string), ("content", Schema.object([]))])
            operations += [
                OpenAPIOperation(.get, "/sandbox/vtpass", summary: "VTpass sandbox: the test numbers and what they do", tag: "vtpass-sandbox",
                                 responses: [(200, "Text", Schema.string)], produces: "text/plain"),
                OpenAPIOperation(.post, "/sandbox/vtpass/api/pay", summary: "VTpass sandbox: buy airtime or data (api-key and secret-key headers)", tag: "vtpass-sandbox",
                                 request: Schema.object([("request_id", Schema.string), ("serviceID", Schema.string), ("amount", Schema.integer), ("phone", Schema.string),
                                                         ("variation_code", Schema.string), ("billersCode", Schema.string)], required: ["request_id", "serviceID", "phone"]),
                                 responses: [(200, "VTpass answer (code 000, 099, 016, 014 …)", answer)], requestRequired: false),
                OpenAPIOperation(.post, "/sandbox/vtpass/api/requery", summary: "VTpass sandbox: the status of a purchase", tag: "vtpass-sandbox",
                                 request: Schema.object([("request_id", Schema.string)], required: ["request_id"]),
                                 responses: [(200, "VTpass answer (code 000, 016, 015 …)", answer)], requestRequired: false),
                OpenAPIOperation(.get, "/sandbox/vtpass/api/service-variations", summary: "VTpass sandbox: data plans (api-key and public-key headers)", tag: "vtpass-sandbox",
                                 responses: [(200, "Plans", answer)], query: [OpenAPIParameter("serviceID", "mtn-data, airtel-data, glo-data, etisalat-data")]),
                OpenAPIOperation(.get, "/sandbox/vtpass/api/balance", summary: "VTpass sandbox: the float left", tag: "vtpass-sandbox",
                                 responses: [(200, "Balance", Schema.object([("code", Schema.string), ("response_description", Schema.string),
                                                                             ("contents", Schema.object([("balance", ["type": "number"])]))]))]),
            ]
        }
        let descriptor = Schema.object([("id", Schema.string), ("type", Schema.string), ("transports", Schema.array(Schema.string))], required: ["id", "type"])
        return OpenAPIFragment(operations: operations, schemas: [
            ("NexusFailure", Schema.object([("success", Schema.boolean), ("message", Schema.string), ("code", Schema.string), ("param", Schema.string)], required: ["success", "message", "code"])),
            ("VerifyFailure", Schema.object([("verified", Schema.boolean), ("message", Schema.string)], required: ["verified", "message"])),
            ("VerifySuccess", Schema.object([("verified", Schema.boolean), ("verificationToken", Schema.string), ("expiresIn", Schema.integer), ("message", Schema.string)],
                                            required: ["verified", "verificationToken", "expiresIn", "message"])),
            ("AuthenticationOptions", Schema.object([("challenge", Schema.string), ("rpId", Schema.string), ("allowCredentials", Schema.array(descriptor)),
                                                     ("userVerification", Schema.string), ("timeout", Schema.integer)],
                                                    required: ["challenge", "rpId", "allowCredentials", "userVerification", "timeout"])),
            ("CreationOptions", Schema.object([("rp", Schema.object([("id", Schema.string), ("name", Schema.string)])), ("user", Schema.object([("id", Schema.string), ("name", Schema.string), ("displayName", Schema.string)])),
                                               ("challenge", Schema.string), ("pubKeyCredParams", Schema.array(Schema.object([("type", Schema.string), ("alg", Schema.integer)]))),
                                               ("timeout", Schema.integer), ("attestation", Schema.string), ("excludeCredentials", Schema.array(descriptor))])),
            ("AuthenticationResponseJSON", Schema.object([("id", base64URL), ("rawId", base64URL), ("type", Schema.oneOf(["public-key"])),
                                                          ("response", Schema.object([("clientDataJSON", base64URL), ("authenticatorData", base64URL), ("signature", base64URL), ("userHandle", base64URL)],
                                                                                     required: ["clientDataJSON", "authenticatorData", "signature"]))],
                                                         required: ["id", "rawId", "type", "response"])),
            ("RegistrationResponseJSON", Schema.object([("id", base64URL), ("rawId", base64URL), ("type", Schema.oneOf(["public-key"])), ("name", Schema.string),
                                                        ("response", Schema.object([("clientDataJSON", base64URL), ("attestationObject", base64URL), ("transports", Schema.array(Schema.string))],
                                                                                   required: ["clientDataJSON", "attestationObject"]))],
                                                       required: ["id", "rawId", "type", "response"])),
            ("Credential", Schema.object([("id", Schema.string), ("name", Schema.string), ("transports", Schema.array(Schema.string)), ("attestationFormat", Schema.string),
                                          ("createdAt", Schema.string), ("lastUsedAt", Schema.string)])),
            ("Product", Schema.object([("code", Schema.string), ("supplierSlug", Schema.string), ("network", Schema.string), ("category", Schema.string),
                                       ("name", Schema.string), ("minAmount", Schema.integer), ("maxAmount", Schema.integer)])),
            ("TopupRequest", Schema.object([("amount", Schema.integer), ("productCode", Schema.string), ("recipientPhone", Schema.pattern("^ *(?:0|\\+ *2 *3 *4) *[1-9](?: *[0-9]){9} *$")),
                                            ("verificationToken", Schema.string), ("pin", pin), ("supplierSlug", Schema.string), ("useCashback", Schema.boolean)],
                                           required: ["amount", "productCode"])),
            ("TopupResponse", Schema.object([("success", Schema.boolean), ("message", Schema.string),
                                             ("data", Schema.object([("transactionId", Schema.string), ("status", Schema.string), ("amount", Schema.integer), ("balance", Schema.integer),
                                                                     ("timestamp", Schema.string), ("cashbackUsed", Schema.integer), ("cashbackEarned", Schema.integer)]))])),
            ("Transaction", Schema.object([("transactionId", Schema.string), ("kind", Schema.string), ("productCode", Schema.string), ("recipientPhone", Schema.string),
                                           ("amount", Schema.integer), ("cashbackUsed", Schema.integer), ("cashbackEarned", Schema.integer), ("method", Schema.string),
                                           ("status", Schema.string), ("timestamp", Schema.string), ("failureReason", Schema.string)])),
        ], errorSchema: failure)
    }
}

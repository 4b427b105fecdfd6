import HTTPTypes
import PurseServer

enum ChippiPayOpenAPI {
    static let felt = Schema.pattern("^0x(0|[a-fA-F1-9][a-fA-F0-9]{0,62})$")

    static func fragment(sandbox: Bool) -> OpenAPIFragment {
        var fragment = OpenAPIFragment(operations: provider)
        if sandbox { fragment.operations += sandboxNode.operations }
        return fragment
    }

    // MARK: Provider

    /// Every provider route takes the publishable key and a bearer: the merchant's secret key, or
    /// in user mode one app user's token.
    static let keyHeaders = [
        // Any text: a malformed key is refused like a wrong one (401), not as a malformed request.
        OpenAPIParameter("x-api-key", "The merchant's publishable key (pk_…, at most 128 characters)", schema: Schema.string, required: true),
        OpenAPIParameter("Authorization", "Bearer and the merchant's secret key (sk_…), or in user mode the app user's token", schema: Schema.string, required: true),
    ]
    static let refusals: [(status: Int, description: String, schema: YAMLValue?)] = [
        (401, "Missing, wrong, mismatched or revoked keys", Schema.error), (429, "Rate limited (Retry-After)", Schema.error),
    ]
    static let decimal = Schema.pattern("^[0-9]+(\\.[0-9]{1,18})?$")
    static let sku = Schema.object([
        ("id", Schema.string), ("name", Schema.string), ("provider", Schema.string), ("category", Schema.oneOf(["phone_topup", "bill", "gift_card"])),
        ("currency", Schema.oneOf(["MXN"])), ("amount", decimal), ("min_amount", decimal), ("max_amount", decimal),
        ("reference", Schema.object([("label", Schema.string), ("pattern", Schema.string), ("example", Schema.string)], required: ["label", "pattern", "example"])),
    ], required: ["id", "name", "provider", "category", "currency", "reference"])
    static let purchase = Schema.object([
        ("transaction_id", Schema.string), ("status", Schema.oneOf(["pending", "completed", "failed"])), ("sku_id", Schema.string),
        ("reference", Schema.string), ("amount", decimal), ("currency", Schema.string), ("strk_amount", decimal), ("wallet_id", Schema.string),
        ("vault_transaction_hash", felt), ("failure_reason", Schema.nullableString), ("refund_transaction_hash", ["type": ["string", "null"]]),
        ("metadata", ["type": "object"]), ("created_at", Schema.integer), ("updated_at", Schema.integer),
    ], required: ["transaction_id", "status", "sku_id", "reference", "amount", "currency", "strk_amount", "wallet_id", "vault_transaction_hash", "created_at", "updated_at"])

    static let call = Schema.object([("to", felt), ("selector", felt), ("calldata", Schema.array(felt))], required: ["to", "selector", "calldata"])
    static let outsideExecution = Schema.object([
        ("caller", felt), ("nonce", felt), ("execute_after", Schema.integer), ("execute_before", Schema.integer), ("calls", Schema.array(call)),
    ], required: ["caller", "nonce", "execute_after", "execute_before", "calls"])

    static var provider: [OpenAPIOperation] {
        [
            OpenAPIOperation(.get, "/v1/skus", summary: "The catalogue: phone top-ups, bills and gift cards, priced in MXN", tag: "chippipay",
                             responses: [(200, "SKUs", Schema.object([("skus", Schema.array(sku))], required: ["skus"])), (400, "Unknown category", Schema.error)] + refusals,
                             query: [OpenAPIParameter("category", "phone_topup, bill or gift_card", schema: Schema.oneOf(["phone_topup", "bill", "gift_card"]))],
                             headers: keyHeaders),
            OpenAPIOperation(.get, "/v1/quote", summary: "The STRK a purchase needs at the current rate, and until when", tag: "chippipay",
                             responses: [(200, "Quote", Schema.object([
                                 ("sku_id", Schema.string), ("amount", decimal), ("currency", Schema.string), ("rate_mxn_per_strk", decimal),
                                 ("strk_amount", decimal), ("strk_amount_fri", Schema.pattern("^[0-9]+$")), ("payment_address", felt), ("vault_address", felt),
                                 ("gas_fee", Schema.string), ("expires_at", Schema.integer),
                             ])), (400, "Missing or invalid amount", Schema.error), (404, "Unknown SKU", Schema.error)] + refusals,
                             query: [OpenAPIParameter("sku_id", "A SKU id such as telcel_50", required: true),
                                     OpenAPIParameter("amount", "MXN with at most two decimals (bills); fixed-price SKUs may omit it", schema: Schema.pattern("^[0-9]{1,12}(\\.[0-9]{1,2})?$"))],
                             headers: keyHeaders),
            OpenAPIOperation(.post, "/v1/sku-transactions", summary: "Buy a service, paid by a vault withdrawal to the payment address (verified on Starknet)", tag: "chippipay",
                             idempotent: true,
                             request: Schema.object([
                                 ("sku_id", Schema.string(length: 1...64)), ("reference", Schema.string(length: 1...254)), ("amount", ["type": "number", "minimum": 0]),
                                 ("wallet_id", Schema.string(length: 1...64)), ("vault_transaction_hash", felt), ("metadata", ["type": "object"]),
                             ], required: ["sku_id", "reference", "amount", "wallet_id", "vault_transaction_hash"]),
                             responses: [(201, "Accepted; fulfilment is pending", purchase), (200, "Replayed (same Idempotency-Key)", purchase),
                                         (400, "Invalid field", Schema.error), (404, "Unknown SKU or wallet", Schema.error),
                                         (409, "The vault transaction already paid for a purchase", Schema.error),
                                         (422, "The vault payment does not verify, or the key was reused", Schema.error),
                                         (502, "The Starknet node cannot be reached", Schema.error)] + refusals,
                             headers: keyHeaders),
            OpenAPIOperation(.get, "/v1/sku-transactions/{id}", summary: "A purchase and its status", tag: "chippipay",
                             responses: [(200, "Purchase", purchase), (404, "Not found", Schema.error)] + refusals, headers: keyHeaders),
            OpenAPIOperation(.get, "/v1/sku-transactions", summary: "The merchant's purchases, newest first", tag: "chippipay",
                             responses: [(200, "Page", Schema.object([("data", Schema.array(purchase)), ("has_more", Schema.boolean)], required: ["data", "has_more"])),
                                         (400, "Invalid limit or cursor", Schema.error)] + refusals,
                             query: [OpenAPIParameter("wallet_id", "Only this wallet's purchases"),
                                     OpenAPIParameter("limit", "1 to 100 (default 20)", schema: Schema.integer(1...100)),
                                     OpenAPIParameter("starting_after", "The last transaction_id of the previous page")],
                             headers: keyHeaders),
            OpenAPIOperation(.post, "/v1/chipi-wallets/prepare-creation", summary: "Reserve a gasless wallet for an app user (auth_token: the user's session JWT)", tag: "chippipay",
                             request: Schema.object([("auth_token", Schema.string(length: 1...4096)), ("external_user_id", Schema.string(length: 1...128)),
                                                     ("metadata", ["type": "object"])], required: ["auth_token", "external_user_id"]),
                             responses: [(200, "Prepared", Schema.object([("wallet_id", Schema.string), ("external_user_id", Schema.string), ("account_class_hash", felt)])),
                                         (400, "Invalid field", Schema.error), (409, "The user already has a wallet", Schema.error)] + refusals,
                             headers: keyHeaders),
            OpenAPIOperation(.post, "/v1/chipi-wallets", summary: "Save the wallet's public key and the private key the device encrypted", tag: "chippipay",
                             request: Schema.object([("wallet_id", Schema.string(length: 1...64)), ("public_key", felt),
                                                     ("encrypted_private_key", Schema.string(length: 16...4096)), ("auth_token", Schema.string(length: 1...4096))],
                                                    required: ["wallet_id", "public_key", "encrypted_private_key", "auth_token"]),
                             responses: [(200, "Saved, its account deployed by the provider", Schema.object([("success", Schema.boolean)])), (400, "Invalid field", Schema.error),
                                         (404, "Unknown wallet", Schema.error), (409, "Saved with another key", Schema.error),
                                         (502, "Saved; the deployment did not go through yet", Schema.error)] + refusals,
                             headers: keyHeaders),
            OpenAPIOperation(.post, "/v1/chipi-wallets/{id}/payers", summary: "Link a Starknet account the wallet's purchases may be paid from (the account's signature over the payer link, checked on chain)", tag: "chippipay",
                             request: Schema.object([("address", felt), ("signature", Schema.array(felt))], required: ["address", "signature"]),
                             responses: [(201, "Linked", Schema.object([("wallet_id", Schema.string), ("address", felt)])),
                                         (200, "Linked already", Schema.object([("wallet_id", Schema.string), ("address", felt)])),
                                         (400, "Invalid field", Schema.error), (404, "Unknown wallet or no such account", Schema.error),
                                         (409, "The wallet is not active", Schema.error), (422, "The signature is not the account's", Schema.error),
                                         (502, "The Starknet node cannot be reached", Schema.error)] + refusals,
                             headers: keyHeaders),
            OpenAPIOperation(.get, "/v1/chipi-wallets/{id}", summary: "A wallet", tag: "chippipay",
                             responses: [(200, "Wallet", Schema.object([
                                 ("wallet_id", Schema.string), ("external_user_id", Schema.string), ("public_key", Schema.nullableString),
                                 ("address", Schema.nullableString), ("encrypted_private_key", Schema.nullableString),
                                 ("status", Schema.oneOf(["prepared", "active"])), ("deploy_transaction_hash", Schema.nullableString), ("created_at", Schema.integer), ("metadata", ["type": ["object", "null"]]),
                             ])), (404, "Not found", Schema.error)] + refusals,
                             headers: keyHeaders),
            OpenAPIOperation(.post, "/v1/paymaster/build", summary: "SNIP-12 typed data of a SNIP-9 outside execution the relayer will submit (vault withdrawals to the payment address only)", tag: "chippipay",
                             request: Schema.object([("account", felt), ("calls", Schema.array(call))], required: ["account", "calls"]),
                             responses: [(200, "To sign", Schema.object([("outside_execution", outsideExecution), ("typed_data", ["type": "object"]), ("message_hash", felt)])),
                                         (400, "Invalid field", Schema.error), (403, "Not a sponsored call", Schema.error), (502, "The Starknet node cannot be reached", Schema.error)] + refusals,
                             headers: keyHeaders),
            OpenAPIOperation(.post, "/v1/paymaster/execute", summary: "Submit a signed outside execution from the relayer, which pays the fee", tag: "chippipay",
                             request: Schema.object([("account", felt), ("outside_execution", outsideExecution), ("signature", Schema.array(felt))],
                                                    required: ["account", "outside_execution", "signature"]),
                             responses: [(202, "Submitted", Schema.object([("transaction_hash", felt)])),
                                         (200, "Submitted before (the same account and nonce): the same hash", Schema.object([("transaction_hash", felt)])),
                                         (400, "Invalid field", Schema.error),
                                         (403, "Not a sponsored call", Schema.error), (404, "No account there", Schema.error),
                                         (422, "The signature or the execution does not hold", Schema.error), (502, "The Starknet node refused it", Schema.error)] + refusals,
                             headers: keyHeaders),
            OpenAPIOperation(.get, "/v1/webhook-deliveries", summary: "The merchant's webhook deliveries, newest first", tag: "chippipay",
                             responses: [(200, "Deliveries", Schema.object([("data", Schema.array(Schema.object([
                                 ("id", Schema.string), ("event", Schema.string), ("transaction_id", Schema.string), ("url", Schema.string),
                                 ("status", Schema.oneOf(["pending", "delivered", "failed"])), ("attempts", Schema.integer),
                                 ("last_status_code", ["type": ["integer", "null"]]), ("last_error", Schema.nullableString),
                                 ("created_at", Schema.integer), ("updated_at", Schema.integer),
                             ])))])), (400, "Invalid limit", Schema.error), (403, "A user token (this needs the secret key)", Schema.error)] + refusals,
                             query: [OpenAPIParameter("limit", "1 to 100 (default 20)", schema: Schema.integer(1...100))],
                             headers: keyHeaders),
            OpenAPIOperation(.post, "/v1/user-tokens", summary: "A short-lived token for one app user (user mode), minted with the merchant's secret key", tag: "chippipay",
                             request: Schema.object([("external_user_id", Schema.string(length: 1...128)), ("expires_in", Schema.integer(60...3600))],
                                                    required: ["external_user_id"]),
                             responses: [(201, "The token", Schema.object([("token", Schema.string), ("external_user_id", Schema.string), ("expires_at", Schema.integer)],
                                                                          required: ["token", "external_user_id", "expires_at"])),
                                         (400, "Invalid field", Schema.error), (403, "A user token (this needs the secret key)", Schema.error)] + refusals,
                             headers: keyHeaders),
        ]
    }

    // MARK: Sandbox node

    static var sandboxNode: OpenAPIFragment {
        let rpcRequest: YAMLValue = Schema.object([
            ("jsonrpc", Schema.oneOf(["2.0"])), ("method", Schema.string), ("id", ["type": ["number", "string", "null"]]),
            ("params", ["type": ["object", "array"]]),
        ], required: ["jsonrpc", "method"])
        let rpcResponse: YAMLValue = Schema.object([
            ("jsonrpc", Schema.oneOf(["2.0"])), ("id", ["type": ["number", "string", "null"]]), ("result", [:]),
            ("error", Schema.object([("code", Schema.integer), ("message", Schema.string), ("data", [:])], required: ["code", "message"])),
        ], required: ["jsonrpc"])
        let account = Schema.object([("address", felt), ("private_key", felt), ("public_key", felt)], required: ["address", "private_key", "public_key"])
        return OpenAPIFragment(operations: [
            OpenAPIOperation(.post, "/starknet/rpc", summary: "Starknet JSON-RPC 0.10 (the sandbox node); errors are JSON-RPC errors inside HTTP 200", tag: "starknet",
                             request: ["oneOf": [rpcRequest, Schema.array(rpcRequest)]],
                             responses: [(200, "JSON-RPC response (an array for a batch)", ["oneOf": [rpcResponse, Schema.array(rpcResponse)]])]),
            OpenAPIOperation(.get, "/sandbox/starknet/accounts", summary: "The sandbox chain: predeployed accounts (test keys), STRK token, vault", tag: "starknet",
                             responses: [(200, "Chain", Schema.object([
                                 ("chain_id", Schema.string), ("rpc_path", Schema.string), ("strk_address", felt), ("vault_address", felt),
                                 ("account_class_hash", felt), ("chippi_payment_address", felt), ("accounts", Schema.array(account)),
                             ]))]),
            OpenAPIOperation(.post, "/sandbox/starknet/mint", summary: "Faucet: mint STRK to an address", tag: "starknet", idempotent: true,
                             request: Schema.object([("address", felt), ("amount", Schema.pattern("^(?:[0-9]+(?:\\.[0-9]{1,18})?|\\.[0-9]{1,18})$"))], required: ["address", "amount"]),
                             responses: [(201, "Minted", mintResponse), (200, "Replayed (same Idempotency-Key)", mintResponse), (400, "Invalid", Schema.error)]),
        ])
    }

    static let mintResponse = Schema.object([
        ("address", felt), ("minted", Schema.string), ("balance", Schema.string), ("balance_fri", Schema.pattern("^[0-9]+$")),
    ], required: ["address", "minted", "balance", "balance_fri"])
}

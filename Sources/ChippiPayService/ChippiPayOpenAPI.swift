import HTTPTypes
import PurseServer

enum ChippiPayOpenAPI {
    static let felt = Schema.pattern("^0x(0|[a-fA-F1-9][a-fA-F0-9]{0,62})$")

    static func fragment(sandbox: Bool) -> OpenAPIFragment {
        guard sandbox else { return OpenAPIFragment() }
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
                                 ("account_class_hash", felt), ("accounts", Schema.array(account)),
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

import PurseFormats

/// A SNIP-9 (version 2) outside execution: calls an account signs for someone else to submit
/// (a paymaster's relayer pays the fee), through the account's `execute_from_outside_v2`.
///
/// The account checks that the submitter is `caller` (or anyone, for `ANY_CALLER`), that the
/// block time is strictly between `executeAfter` and `executeBefore`, that `nonce` was never
/// used, and that the signature is its key's over the SNIP-12 (revision 1) hash of this value.
public struct OutsideExecution: Sendable, Hashable {
    /// Anyone may submit it.
    public static let anyCaller = Felt(shortString: "ANY_CALLER")!

    public var caller: Felt
    public var nonce: Felt
    /// Unix seconds.
    public var executeAfter: UInt64
    public var executeBefore: UInt64
    public var calls: [Call]

    public init(caller: Felt = OutsideExecution.anyCaller, nonce: Felt, executeAfter: UInt64, executeBefore: UInt64, calls: [Call]) {
        self.caller = caller
        self.nonce = nonce
        self.executeAfter = executeAfter
        self.executeBefore = executeBefore
        self.calls = calls
    }

    /// The SNIP-12 revision 1 typed data that is signed.
    public func typedData(chainId: Felt) -> TypedData {
        let call: [TypedData.Parameter] = [.init(name: "To", type: "ContractAddress"), .init(name: "Selector", type: "selector"), .init(name: "Calldata", type: "felt*")]
        let execution: [TypedData.Parameter] = [
            .init(name: "Caller", type: "ContractAddress"), .init(name: "Nonce", type: "felt"), .init(name: "Execute After", type: "u128"),
            .init(name: "Execute Before", type: "u128"), .init(name: "Calls", type: "Call*"),
        ]
        let domain: [TypedData.Parameter] = [
            .init(name: "name", type: "shortstring"), .init(name: "version", type: "shortstring"), .init(name: "chainId", type: "shortstring"),
            .init(name: "revision", type: "shortstring"),
        ]
        let message: JSONValue = [
            "Caller": .string(caller.description), "Nonce": .string(nonce.description),
            "Execute After": .string(Felt(executeAfter).description), "Execute Before": .string(Felt(executeBefore).description),
            "Calls": .array(calls.map { call in
                ["To": .string(call.to.description), "Selector": .string(call.selector.description), "Calldata": .array(call.calldata.map { .string($0.description) })]
            }),
        ]
        let domainValue: JSONValue = ["name": "Account.execute_from_outside", "version": "2", "chainId": .string(chainId.decimal), "revision": .int(1)]
        // The types are fixed and valid: construction cannot fail.
        return try! TypedData(types: ["StarknetDomain": domain, "OutsideExecution": execution, "Call": call], primaryType: "OutsideExecution",
                              domain: domainValue, message: message)
    }

    /// The hash `account` signs.
    public func messageHash(chainId: Felt, account: Felt) -> Felt {
        // A fixed, valid typed data always hashes.
        try! typedData(chainId: chainId).messageHash(account: account)
    }

    /// The calldata of `execute_from_outside_v2(outside_execution, signature)`.
    public func calldata(signature: [Felt]) -> [Felt] {
        [caller, nonce, Felt(executeAfter), Felt(executeBefore)] + Call.executeCalldata(calls) + [Felt(UInt64(signature.count))] + signature
    }

    /// Reads the calldata of `execute_from_outside_v2` back; nil when it is malformed.
    public static func parse(calldata: [Felt]) -> (execution: OutsideExecution, signature: [Felt])? {
        guard calldata.count >= 6, let after = calldata[2].uint64, let before = calldata[3].uint64,
              let (calls, used) = Call.parseExecuteCalldataPrefix(Array(calldata[4...])) else { return nil }
        let rest = Array(calldata[(4 + used)...])
        guard let count = rest.first?.uint64, UInt64(rest.count - 1) == count else { return nil }
        return (OutsideExecution(caller: calldata[0], nonce: calldata[1], executeAfter: after, executeBefore: before, calls: calls), Array(rest.dropFirst()))
    }
}

/// The JSON form a paymaster API carries: `{caller, nonce, execute_after, execute_before, calls:
/// [{to, selector, calldata}]}`, felts as 0x-hex, times as Unix seconds.
extension OutsideExecution: Codable {
    enum CodingKeys: String, CodingKey {
        case caller, nonce, executeAfter = "execute_after", executeBefore = "execute_before", calls
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(caller: try container.decode(Felt.self, forKey: .caller), nonce: try container.decode(Felt.self, forKey: .nonce),
                  executeAfter: try container.decode(UInt64.self, forKey: .executeAfter),
                  executeBefore: try container.decode(UInt64.self, forKey: .executeBefore), calls: try container.decode([Call].self, forKey: .calls))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(caller, forKey: .caller)
        try container.encode(nonce, forKey: .nonce)
        try container.encode(executeAfter, forKey: .executeAfter)
        try container.encode(executeBefore, forKey: .executeBefore)
        try container.encode(calls, forKey: .calls)
    }
}

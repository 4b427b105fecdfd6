/// Cairo 1 values as calldata: calls, `u256`, `ByteArray`, contract addresses.

/// One contract call: the target, the entry point's selector and its calldata.
public struct Call: Hashable, Sendable, Codable {
    public var to: Felt
    public var selector: Felt
    public var calldata: [Felt]

    public init(to: Felt, selector: Felt, calldata: [Felt] = []) {
        self.to = to
        self.selector = selector
        self.calldata = calldata
    }

    /// A call of the entry point named `entrypoint` ("transfer", "deposit").
    public init(to: Felt, entrypoint: String, calldata: [Felt] = []) {
        self.init(to: to, selector: Selector.from(name: entrypoint), calldata: calldata)
    }

    /// The calldata of a Cairo 1 account's `__execute__` for a multicall:
    /// `[n, to, selector, len, data…, to, selector, len, data…]`.
    public static func executeCalldata(_ calls: [Call]) -> [Felt] {
        var felts: [Felt] = [Felt(UInt64(calls.count))]
        for call in calls {
            felts.append(call.to)
            felts.append(call.selector)
            felts.append(Felt(UInt64(call.calldata.count)))
            felts.append(contentsOf: call.calldata)
        }
        return felts
    }

    /// The calls in `__execute__` calldata; nil when it is not a well-formed multicall.
    public static func parseExecuteCalldata(_ felts: [Felt]) -> [Call]? {
        guard let (calls, used) = parseExecuteCalldataPrefix(felts), used == felts.count else { return nil }
        return calls
    }

    /// The calls a serialized `Array<Call>` at the start of `felts` holds, and how many felts it
    /// took; nil when it is malformed.
    public static func parseExecuteCalldataPrefix(_ felts: [Felt]) -> (calls: [Call], used: Int)? {
        guard let count = felts.first?.uint64, count <= UInt64(felts.count) else { return nil }
        var calls: [Call] = []
        var index = 1
        for _ in 0..<count {
            guard index + 3 <= felts.count, let length = felts[index + 2].uint64,
                  length <= UInt64(felts.count - index - 3) else { return nil }
            let start = index + 3, end = start + Int(length)
            calls.append(Call(to: felts[index], selector: felts[index + 1], calldata: Array(felts[start..<end])))
            index = end
        }
        return (calls, index)
    }
}

/// Cairo's `u256`: two felts, the low and high 128 bits. Token amounts travel in it.
public struct UInt256: Hashable, Sendable, Comparable, CustomStringConvertible {
    let value: U256

    init(value: U256) { self.value = value }

    public static let zero = UInt256(value: .zero)

    public init(_ value: UInt128) {
        self.value = U256(UInt64(truncatingIfNeeded: value), UInt64(truncatingIfNeeded: value >> 64), 0, 0)
    }

    /// From its halves; nil when either is 2^128 or more.
    public init?(low: Felt, high: Felt) {
        guard low.raw.l2 | low.raw.l3 == 0, high.raw.l2 | high.raw.l3 == 0 else { return nil }
        value = U256(low.raw.l0, low.raw.l1, high.raw.l0, high.raw.l1)
    }

    /// From decimal digits or `0x` hex; nil when malformed or 2^256 or more.
    public init?(_ text: some StringProtocol) {
        let text = Substring(text)
        let parsed = text.hasPrefix("0x") ? U256(hexDigits: text.dropFirst(2)) : U256(decimalDigits: text)
        guard let parsed else { return nil }
        value = parsed
    }

    public var low: Felt { Felt(raw: U256(value.l0, value.l1, 0, 0)) }
    public var high: Felt { Felt(raw: U256(value.l2, value.l3, 0, 0)) }
    /// `[low, high]`, as calldata.
    public var felts: [Felt] { [low, high] }
    /// Decimal digits.
    public var description: String { value.decimalDigits }
    public var hex: String { "0x" + value.hexDigits }

    public static func < (a: UInt256, b: UInt256) -> Bool { a.value < b.value }

    /// The sum, or nil on overflow.
    public func adding(_ other: UInt256) -> UInt256? {
        let (sum, overflow) = U256.add(value, other.value)
        return overflow ? nil : UInt256(value: sum)
    }

    /// The difference, or nil when `other` is larger.
    public func subtracting(_ other: UInt256) -> UInt256? {
        let (difference, borrow) = U256.subtract(value, other.value)
        return borrow ? nil : UInt256(value: difference)
    }
}

/// Cairo's `ByteArray` (strings longer than a short string): full 31-byte words, then the rest.
public enum ByteArray {
    /// `[count, word…, pending_word, pending_word_len]`.
    public static func serialize(_ text: String) -> [Felt] {
        let bytes = Array(text.utf8)
        let full = bytes.count / 31
        var felts: [Felt] = [Felt(UInt64(full))]
        for index in 0..<full {
            felts.append(Felt(bigEndianBytes: bytes[(index * 31)..<((index + 1) * 31)])!)
        }
        let rest = bytes[(full * 31)...]
        felts.append(Felt(bigEndianBytes: rest)!)
        felts.append(Felt(UInt64(rest.count)))
        return felts
    }
}

/// Contract addresses.
public enum ContractAddress {
    /// Addresses are below 2^251 − 256.
    public static let upperBound = Felt(raw: U256(0xffff_ffff_ffff_ff00, 0xffff_ffff_ffff_ffff, 0xffff_ffff_ffff_ffff, 0x07ff_ffff_ffff_ffff))

    /// The Universal Deployer Contract (UDC), at the same address on mainnet, Sepolia and devnets:
    /// `deployContract(class_hash, salt, unique, calldata)` deploys from an invoke.
    public static let universalDeployer = Felt("0x041a78e741e5af2fec34b695679bc6891742439f7afb8484ecd7766661ad02bf")!

    /// The address a deployment gives a contract: Pedersen over "STARKNET_CONTRACT_ADDRESS",
    /// the deployer (0 for DEPLOY_ACCOUNT), the salt, the class hash and the constructor calldata's
    /// hash, reduced below `upperBound`.
    public static func compute(classHash: Felt, salt: Felt, constructorCalldata: [Felt], deployer: Felt = .zero) -> Felt {
        let raw = Pedersen.hash(elements: [
            Felt(shortString: "STARKNET_CONTRACT_ADDRESS")!, deployer, salt, classHash,
            Pedersen.hash(elements: constructorCalldata),
        ])
        return raw < upperBound ? raw : raw - upperBound
    }

    /// Whether `address` is a valid contract address.
    public static func isValid(_ address: Felt) -> Bool { address < upperBound }
}

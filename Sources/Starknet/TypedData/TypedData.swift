import PurseFormats

/// SNIP-12 typed data (Starknet's EIP-712): structured messages that accounts sign off-chain, such
/// as SNIP-9 outside executions, the calls a paymaster submits for a user without the user paying gas.
///
/// Revision 1 (domain `StarknetDomain`, Poseidon) and revision 0 (`StarkNetDomain`, Pedersen) hash
/// exactly as starknet.js and starknet-py do: type encodings with their dependencies, struct hashes,
/// arrays, enums, Merkle trees, and the preset types `u256`, `TokenAmount` and `NftId`.
public struct TypedData: Sendable, Codable, Hashable {
    public struct Parameter: Sendable, Codable, Hashable {
        public var name: String
        public var type: String
        /// The enum's or the Merkle tree leaves' type, for `enum` and `merkletree` parameters.
        public var contains: String?

        public init(name: String, type: String, contains: String? = nil) {
            self.name = name
            self.type = type
            self.contains = contains
        }
    }

    public var types: [String: [Parameter]]
    public var primaryType: String
    public var domain: JSONValue
    public var message: JSONValue

    public init(types: [String: [Parameter]], primaryType: String, domain: JSONValue, message: JSONValue) throws {
        self.types = types
        self.primaryType = primaryType
        self.domain = domain
        self.message = message
        try validate()
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        types = try container.decode([String: [Parameter]].self, forKey: .types)
        primaryType = try container.decode(String.self, forKey: .primaryType)
        domain = try container.decode(JSONValue.self, forKey: .domain)
        message = try container.decode(JSONValue.self, forKey: .message)
        try validate()
    }

    /// Why typed data cannot be hashed.
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The revision the domain names (0 when it names none).
    public var revision: Int {
        switch domain["revision"] {
        case .int(1), .string("1"): 1
        default: 0
        }
    }

    var separatorName: String { revision == 1 ? "StarknetDomain" : "StarkNetDomain" }

    /// The hash an account signs: `hash("StarkNet Message", domain, account, message)`.
    public func messageHash(account: Felt) throws -> Felt {
        hashMany([
            Felt(shortString: "StarkNet Message")!,
            try structHash(separatorName, domain),
            account,
            try structHash(primaryType, message),
        ])
    }

    /// The hash of a struct: `hash(typeHash, encoded members…)`.
    public func structHash(_ typeName: String, _ data: JSONValue) throws -> Felt {
        guard let parameters = allTypes[typeName] else { throw Failure("Type [\(typeName)] is not defined in types.") }
        guard case .object(let members) = data else { throw Failure("Value of type [\(typeName)] must be an object.") }
        var values = [try typeHash(typeName)]
        for parameter in parameters {
            guard let value = members[parameter.name] else { throw Failure("Missing member [\(parameter.name)] of [\(typeName)].") }
            values.append(try encode(parameter.type, value, context: (typeName, parameter.name)))
        }
        return hashMany(values)
    }

    /// `starknet_keccak` of the type's encoding.
    public func typeHash(_ typeName: String) throws -> Felt {
        Selector.from(name: try encodeType(typeName))
    }

    // MARK: Types

    static let presetTypes: [String: [Parameter]] = [
        "u256": [Parameter(name: "low", type: "u128"), Parameter(name: "high", type: "u128")],
        "TokenAmount": [Parameter(name: "token_address", type: "ContractAddress"), Parameter(name: "amount", type: "u256")],
        "NftId": [Parameter(name: "collection_address", type: "ContractAddress"), Parameter(name: "token_id", type: "u256")],
    ]

    static let basicTypesV0: Set<String> = ["felt", "selector", "merkletree", "string", "bool"]
    static let basicTypesV1: Set<String> = basicTypesV0.union([
        "enum", "shortstring", "ContractAddress", "ClassHash", "u128", "i128", "timestamp",
    ])

    var basicTypes: Set<String> { revision == 1 ? Self.basicTypesV1 : Self.basicTypesV0 }

    var allTypes: [String: [Parameter]] {
        revision == 1 ? types.merging(Self.presetTypes) { own, _ in own } : types
    }

    func validate() throws {
        guard types[separatorName] != nil else { throw Failure("Types must contain '\(separatorName)'.") }
        var referenced: Set<String> = [separatorName, primaryType]
        for parameters in types.values {
            for parameter in parameters {
                if parameter.type == "enum" || parameter.type == "merkletree", let contains = parameter.contains {
                    referenced.insert(contains)
                } else if Self.isEnumVariant(parameter.type) {
                    referenced.formUnion(Self.enumTypes(parameter.type))
                } else {
                    referenced.insert(Self.stripPointer(parameter.type))
                }
            }
        }
        let presets = revision == 1 ? Set(Self.presetTypes.keys) : []
        for (name, parameters) in types {
            if name.isEmpty { throw Failure("Type names cannot be empty.") }
            if basicTypes.contains(name) { throw Failure("Types must not contain basic types. [\(name)] was found.") }
            if presets.contains(name) { throw Failure("Types must not contain preset types. [\(name)] was found.") }
            if name.hasSuffix("*") { throw Failure("Type names cannot end in *. [\(name)] was found.") }
            if Self.isEnumVariant(name) { throw Failure("Type names cannot be enclosed in parentheses. [\(name)] was found.") }
            if name.contains(",") { throw Failure("Type names cannot contain commas. [\(name)] was found.") }
            if !referenced.contains(name) { throw Failure("Dangling types are not allowed. Unreferenced type [\(name)] was found.") }
            for parameter in parameters where parameter.type == "enum" {
                if revision != 1 { throw Failure("'ENUM' basic type is not supported in revision \(revision).") }
                if parameter.contains == nil { throw Failure("Enum parameter [\(parameter.name)] must name the type it contains.") }
            }
            for parameter in parameters where parameter.type == "merkletree" && parameter.contains == nil {
                throw Failure("Merkle tree parameter [\(parameter.name)] must name the type it contains.")
            }
        }
    }

    static func isEnumVariant(_ type: String) -> Bool { type.hasPrefix("(") && type.hasSuffix(")") }
    static func stripPointer(_ type: String) -> String { type.hasSuffix("*") ? String(type.dropLast()) : type }
    static func enumTypes(_ type: String) -> [String] {
        let inner = type.dropFirst().dropLast()
        return inner.isEmpty ? [] : inner.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
    }

    func dependencies(_ typeName: String) -> [String] {
        let all = allTypes
        var found = [typeName]
        var queue = [typeName]
        while !queue.isEmpty {
            let current = queue.removeFirst()
            for parameter in all[current] ?? [] {
                let extracted: [String]
                if parameter.type == "enum", let contains = parameter.contains {
                    extracted = [contains]
                } else if Self.isEnumVariant(parameter.type) {
                    extracted = Self.enumTypes(parameter.type)
                } else {
                    extracted = [parameter.type]
                }
                for type in extracted.map(Self.stripPointer) where all[type] != nil && !found.contains(type) {
                    found.append(type)
                    queue.append(type)
                }
            }
        }
        return found
    }

    func encodeType(_ typeName: String) throws -> String {
        let all = allTypes
        let dependencies = dependencies(typeName)
        let ordered = [dependencies[0]] + dependencies.dropFirst().sorted { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }
        let quote = revision == 1 ? "\"" : ""
        func escape(_ text: String) -> String { quote + text + quote }
        return try ordered.map { dependency in
            guard let parameters = all[dependency] else { throw Failure("Dependency [\(dependency)] is not defined in types.") }
            let members = parameters.map { parameter -> String in
                let target = parameter.type == "enum" && revision == 1 ? (parameter.contains ?? parameter.type) : parameter.type
                let typeText = Self.isEnumVariant(target)
                    ? "(" + Self.enumTypes(target).map(escape).joined(separator: ",") + ")"
                    : escape(target)
                return escape(parameter.name) + ":" + typeText
            }
            return escape(dependency) + "(" + members.joined(separator: ",") + ")"
        }.joined()
    }

    // MARK: Values

    func encode(_ typeName: String, _ value: JSONValue, context: (parent: String, key: String)?) throws -> Felt {
        if allTypes[typeName] != nil, case .object = value {
            return try structHash(typeName, value)
        }
        if typeName.hasSuffix("*"), case .array(let items) = value {
            let element = Self.stripPointer(typeName)
            return hashMany(try items.map { try encode(element, $0, context: nil) })
        }
        guard basicTypes.contains(typeName) else { throw Failure("Type [\(typeName)] is not defined in types.") }
        switch (typeName, revision) {
        case ("felt", _), ("string", 0), ("shortstring", 1), ("ContractAddress", 1), ("ClassHash", 1):
            if let felt = try? Self.parseFelt(value) { return felt }
        case ("u128", 1), ("timestamp", 1):
            return try Self.encodeU128(value)
        case ("i128", 1):
            return try Self.encodeI128(value)
        case ("string", 1):
            if case .string(let text) = value { return hashMany(ByteArray.serialize(text)) }
        case ("enum", 1):
            if case .object(let variant) = value, let context { return try encodeEnum(variant, context: context) }
        default:
            break
        }
        switch typeName {
        case "bool":
            return try Self.encodeBool(value)
        case "selector":
            if case .string(let name) = value { return try Self.selector(name) }
        case "merkletree":
            if case .array(let items) = value, let context { return try merkleRoot(items, context: context) }
        default:
            break
        }
        throw Failure("Error occurred while encoding value with type name \(typeName).")
    }

    func resolve(_ context: (parent: String, key: String)) throws -> Parameter {
        guard let parent = allTypes[context.parent] else { throw Failure("Parent \(context.parent) is not defined in types.") }
        guard let parameter = parent.first(where: { $0.name == context.key }), parameter.contains != nil else {
            throw Failure("Key \(context.key) is not an enum or merkletree member of \(context.parent).")
        }
        return parameter
    }

    func encodeEnum(_ value: [String: JSONValue], context: (parent: String, key: String)) throws -> Felt {
        guard value.count == 1, let (variantName, variantData) = value.first else { throw Failure("'ENUM' value must contain a single variant.") }
        let parameter = try resolve(context)
        guard parameter.type == "enum", let contains = parameter.contains, let variants = allTypes[contains] else {
            throw Failure("Type [\(context.key)] is not an enum.")
        }
        guard let index = variants.firstIndex(where: { $0.name == variantName }) else {
            throw Failure("Variant [\(variantName)] is not defined in 'ENUM' type [\(context.key)].")
        }
        let subtypes = Self.enumTypes(variants[index].type)
        let items = variantData.arrayValue ?? []
        guard items.count >= subtypes.count else { throw Failure("Variant [\(variantName)] needs \(subtypes.count) values.") }
        var encoded = [Felt(UInt64(index))]
        for (offset, subtype) in subtypes.enumerated() {
            encoded.append(try encode(subtype, items[offset], context: nil))
        }
        return hashMany(encoded)
    }

    func merkleRoot(_ items: [JSONValue], context: (parent: String, key: String)) throws -> Felt {
        let parameter = try resolve(context)
        guard parameter.type == "merkletree", let leafType = parameter.contains else { throw Failure("Target type is not a merkletree type.") }
        var level = try items.map { try encode(leafType, $0, context: nil) }
        guard !level.isEmpty else { throw Failure("Cannot build Merkle tree from an empty list of leaves.") }
        while level.count > 1 {
            var next: [Felt] = []
            for index in stride(from: 0, to: level.count, by: 2) {
                let a = level[index], b = index + 1 < level.count ? level[index + 1] : .zero
                next.append(hashPair(min(a, b), max(a, b)))
            }
            level = next
        }
        return level[0]
    }

    func hashMany(_ values: [Felt]) -> Felt {
        revision == 1 ? Poseidon.hash(many: values) : Pedersen.hash(elements: values)
    }

    func hashPair(_ a: Felt, _ b: Felt) -> Felt {
        revision == 1 ? Poseidon.hash(a, b) : Pedersen.hash(a, b)
    }

    /// A felt from a number, `0x` hex, decimal digits, or (anything else) a short string.
    static func parseFelt(_ value: JSONValue) throws -> Felt {
        switch value {
        case .int(let number) where number >= 0: return Felt(UInt64(number))
        case .uint(let number): return Felt(number)
        case .bool(let flag): return flag ? .one : .zero
        case .string(let text):
            if text.hasPrefix("0x") {
                guard let felt = Felt(text) else { throw Failure("Value [\(text.prefix(80))] is not a valid felt.") }
                return felt
            }
            if !text.isEmpty, text.allSatisfy(\.isASCIIDigit) {
                guard let felt = Felt(text) else { throw Failure("Value [\(text.prefix(80))] is not a valid felt.") }
                return felt
            }
            guard let felt = Felt(shortString: text) else { throw Failure("Value [\(text.prefix(80))] is not a short string.") }
            return felt
        default:
            throw Failure("Value of type \(value.typeName) is not a felt.")
        }
    }

    static func encodeU128(_ value: JSONValue) throws -> Felt {
        let felt: Felt?
        switch value {
        case .int(let number) where number >= 0: felt = Felt(UInt64(number))
        case .uint(let number): felt = Felt(number)
        case .string(let text) where text.hasPrefix("0x"): felt = Felt(text)
        case .string(let text) where !text.isEmpty && text.allSatisfy(\.isASCIIDigit): felt = Felt(text)
        default: felt = nil
        }
        guard let felt else { throw Failure("Value is not a valid number.") }
        guard felt.raw.l2 | felt.raw.l3 == 0 else { throw Failure("Value is out of range for 'u128'.") }
        return felt
    }

    static func encodeI128(_ value: JSONValue) throws -> Felt {
        let felt: Felt
        switch value {
        case .int(let number):
            felt = number >= 0 ? Felt(UInt64(number)) : .zero - Felt(number.magnitude)
        case .uint(let number):
            felt = Felt(number)
        case .string(let text) where text.hasPrefix("0x"):
            guard let parsed = Felt(text) else { throw Failure("Value is out of range for 'i128'.") }
            felt = parsed
        case .string(let text):
            let negative = text.hasPrefix("-")
            let digits = negative ? text.dropFirst() : Substring(text)
            guard !digits.isEmpty, digits.allSatisfy(\.isASCIIDigit) else { throw Failure("Value is not a valid number.") }
            guard let magnitude = Felt(digits) else { throw Failure("Values outside the range (-FIELD_PRIME, FIELD_PRIME) are not allowed.") }
            felt = negative ? .zero - magnitude : magnitude
        default:
            throw Failure("Value is not a valid number.")
        }
        let bound = Felt(raw: U256(0, 0x8000_0000_0000_0000, 0, 0)) // 2^127
        guard felt < bound || felt >= .zero - bound else { throw Failure("Value is out of range for 'i128'.") }
        return felt
    }

    static func encodeBool(_ value: JSONValue) throws -> Felt {
        switch value {
        case .bool(let flag): return flag ? .one : .zero
        case .int(0), .string("0"), .string("false"), .string("0x0"): return .zero
        case .int(1), .string("1"), .string("true"), .string("0x1"): return .one
        default: throw Failure("Expected boolean value.")
        }
    }

    /// A selector value: hex digits are the selector itself, anything else a name to hash.
    static func selector(_ text: String) throws -> Felt {
        let digits = text.hasPrefix("0x") || text.hasPrefix("0X") ? text.dropFirst(2) : Substring(text)
        if !digits.isEmpty, digits.allSatisfy(\.isHexDigit), let felt = Felt("0x" + digits) { return felt }
        return Selector.from(name: text)
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

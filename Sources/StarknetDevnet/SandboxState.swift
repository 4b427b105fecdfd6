import PurseDatabase
import SQLKit
import Starknet
import Synchronization

/// One storage cell of one contract.
struct StorageSlot: Hashable, Sendable {
    var contract: Felt
    var key: Felt
}

/// Storage addresses as Cairo lays them out: a variable at `sn_keccak(name)`, a map entry at
/// `pedersen(…pedersen(sn_keccak(name), k1)…, kn)`, a `u256` in two cells (low, then high);
/// all below 2^251 − 256. So `starknet_getStorageAt` answers what a Cairo contract's layout
/// would put there.
enum StorageAddress {
    static func of(_ name: String, _ keys: Felt...) -> Felt {
        let wanted = Key(name: name, keys: keys)
        if let known = cache.withLock({ $0[wanted] }) { return known }
        var address = Keccak.starknetKeccak(Array(name.utf8))
        for key in keys { address = Pedersen.hash(address, key) }
        let result = address < ContractAddress.upperBound ? address : address - ContractAddress.upperBound
        cache.withLock { cache in
            if cache.count >= maxCached { cache.removeAll(keepingCapacity: true) }
            cache[wanted] = result
        }
        return result
    }

    /// The addresses worked out lately (a Keccak and a Pedersen hash per key each): a transfer
    /// reads and writes the same balances several times.
    private struct Key: Hashable {
        var name: String
        var keys: [Felt]
    }
    private static let cache = Mutex<[Key: Felt]>([:])
    /// Addresses kept at most; past it the cache starts again.
    private static let maxCached = 65_536
}

/// An event as receipts and `starknet_getEvents` show it.
struct ChainEvent: Hashable, Sendable, Codable {
    var from_address: Felt
    var keys: [Felt]
    var data: [Felt]
}

/// What a deployed contract is.
struct ContractRecord: Sendable {
    var classHash: Felt
    var nonce: UInt64
}

/// A failed call: the transaction reverts with this reason (or, in `starknet_call`, error 40).
struct ContractRevert: Error, Sendable {
    var reason: String
}

/// The chain's state as one transaction sees it: reads fall through to the database, writes stay
/// in memory until `flush` writes them in the same database transaction. A checkpoint taken before
/// execution lets a reverted transaction drop its writes and events but keep the fee and nonce.
final class ChainState {
    let db: any DatabaseSession
    private var reads: [StorageSlot: Felt] = [:]
    private(set) var writes: [StorageSlot: Felt] = [:]
    private var contracts: [Felt: ContractRecord?] = [:]
    private(set) var deployed: [Felt: ContractRecord] = [:]
    private(set) var nonceChanges: [Felt: UInt64] = [:]
    private(set) var events: [ChainEvent] = []

    init(db: any DatabaseSession) { self.db = db }

    struct Checkpoint {
        var writes: [StorageSlot: Felt]
        var deployed: [Felt: ContractRecord]
        var events: [ChainEvent]
    }

    func checkpoint() -> Checkpoint { Checkpoint(writes: writes, deployed: deployed, events: events) }

    func rollback(to checkpoint: Checkpoint) {
        for address in deployed.keys where checkpoint.deployed[address] == nil { contracts[address] = .some(nil) }
        writes = checkpoint.writes
        deployed = checkpoint.deployed
        events = checkpoint.events
    }

    // MARK: Contracts

    func contract(at address: Felt) async throws -> ContractRecord? {
        if let cached = contracts[address] { return cached }
        let row = try await db.raw("SELECT class_hash, nonce FROM starknet_contracts WHERE address = \(bind: address.description)").first()
        let record = try row.map { row in
            ContractRecord(classHash: Felt(try row.decode(column: "class_hash", as: String.self))!,
                           nonce: UInt64(try row.decode(column: "nonce", as: Int64.self)))
        }
        contracts[address] = .some(record)
        return record
    }

    func deploy(_ address: Felt, classHash: Felt) {
        let record = ContractRecord(classHash: classHash, nonce: 0)
        contracts[address] = .some(record)
        deployed[address] = record
    }

    func nonce(of address: Felt) async throws -> UInt64 {
        if let changed = nonceChanges[address] { return changed }
        return try await contract(at: address)?.nonce ?? 0
    }

    func incrementNonce(of address: Felt) async throws {
        nonceChanges[address] = try await nonce(of: address) + 1
    }

    // MARK: Storage

    func read(_ contract: Felt, _ key: Felt) async throws -> Felt {
        let slot = StorageSlot(contract: contract, key: key)
        if let written = writes[slot] { return written }
        if let cached = reads[slot] { return cached }
        let row = try await db.raw("""
            SELECT value FROM starknet_storage WHERE contract = \(bind: contract.description) AND key = \(bind: key.description)
            """).first()
        let value = try row.map { Felt(try $0.decode(column: "value", as: String.self))! } ?? .zero
        reads[slot] = value
        return value
    }

    func write(_ contract: Felt, _ key: Felt, _ value: Felt) {
        writes[StorageSlot(contract: contract, key: key)] = value
    }

    func readU256(_ contract: Felt, _ key: Felt) async throws -> UInt256 {
        let low = try await read(contract, key), high = try await read(contract, key + .one)
        return UInt256(low: low, high: high) ?? .zero
    }

    func writeU256(_ contract: Felt, _ key: Felt, _ value: UInt256) {
        write(contract, key, value.low)
        write(contract, key + .one, value.high)
    }

    func emit(_ event: ChainEvent) { events.append(event) }

    /// Storage cells whose value changed (what a state diff, and the data gas, counts).
    var changedSlots: Int { writes.filter { reads[$0.key] != $0.value }.count }

    /// Entries of the state diff: changed storage cells, nonces and deployed contracts.
    var stateDiffLength: Int { changedSlots + nonceChanges.count + deployed.count }

    /// Writes the deployments, nonces and storage to the database.
    func flush(block: Int64) async throws {
        for (address, record) in deployed {
            try await db.raw("""
                INSERT INTO starknet_contracts (address, class_hash, nonce, deployed_block)
                VALUES (\(bind: address.description), \(bind: record.classHash.description), 0, \(bind: block))
                """).run()
        }
        for (address, nonce) in nonceChanges {
            try await db.raw("UPDATE starknet_contracts SET nonce = \(bind: Int64(nonce)) WHERE address = \(bind: address.description)").run()
        }
        for (slot, value) in writes where reads[slot] != value {
            try await db.raw("""
                INSERT INTO starknet_storage (contract, key, value) VALUES (\(bind: slot.contract.description), \(bind: slot.key.description), \(bind: value.description))
                ON CONFLICT (contract, key) DO UPDATE SET value = excluded.value
                """).run()
        }
    }
}

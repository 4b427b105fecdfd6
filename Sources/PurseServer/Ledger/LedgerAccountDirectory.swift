import Synchronization

/// Account ids by owner, kind and currency, for ``Ledger/accountIDs(_:now:in:)``. Bounded: when
/// full it starts again empty (a miss costs one query).
final class LedgerAccountDirectory: Sendable {
    private struct Key: Hashable {
        var owner: String?
        var kind: String
        var currency: String

        init(_ spec: LedgerAccountSpec) {
            owner = spec.owner?.rawValue
            kind = spec.kind
            currency = spec.currency
        }
    }

    private let capacity: Int
    private let ids = Mutex<[Key: LedgerAccountID]>([:])

    init(capacity: Int) { self.capacity = max(0, capacity) }

    /// The ids of all of `specs`, or nil unless every one is known.
    func ids(of specs: [LedgerAccountSpec]) -> [LedgerAccountID]? {
        ids.withLock { ids in
            var result: [LedgerAccountID] = []
            result.reserveCapacity(specs.count)
            for spec in specs {
                guard let id = ids[Key(spec)] else { return nil }
                result.append(id)
            }
            return result
        }
    }

    func remember(_ id: LedgerAccountID, for spec: LedgerAccountSpec) {
        guard capacity > 0 else { return }
        ids.withLock { ids in
            if ids.count >= capacity { ids.removeAll(keepingCapacity: true) }
            ids[Key(spec)] = id
        }
    }

    func forget(_ id: LedgerAccountID) {
        ids.withLock { ids in
            for (key, value) in ids where value == id { ids[key] = nil }
        }
    }

    var count: Int { ids.withLock { $0.count } }
}

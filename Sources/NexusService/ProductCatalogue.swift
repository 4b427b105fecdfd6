import Foundation
import PurseDatabase
import PurseServer
import Synchronization

/// The active products, read from the database at most once per `lifetime`.
///
/// Every top-up needs its product, and the catalogue changes only through migrations (or an
/// operator's SQL, which takes effect within `lifetime`), so the read is shared instead of repeated.
final class ProductCatalogue: Sendable {
    private let store: NexusStore
    private let database: Database
    private let lifetime: Duration
    private let cached = Mutex<(loadedAt: ContinuousClock.Instant, products: [NexusWire.Product])?>(nil)

    init(store: NexusStore, database: Database, lifetime: Duration = .seconds(30)) {
        self.store = store
        self.database = database
        self.lifetime = lifetime
    }

    /// Active products, in the listing's order.
    func products() async throws -> [NexusWire.Product] {
        let now = ContinuousClock.now
        if let cached = cached.withLock({ $0 }), now - cached.loadedAt < lifetime { return cached.products }
        let products = try await database.read { db in try await self.store.products(in: db) }
        cached.withLock { $0 = (now, products) }
        return products
    }

    func product(code: String) async throws -> NexusWire.Product? {
        try await products().first { $0.code == code }
    }
}

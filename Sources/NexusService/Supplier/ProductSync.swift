import Foundation
import PurseDatabase
import PurseServer
import SQLKit

/// `purse nexus products sync`: brings the data bundles in line with the supplier's plans.
///
/// For every service a data product names, the supplier's plans are read
/// (`GET /api/service-variations`): a product whose plan is listed takes its price (and is
/// active); one whose plan is gone is deactivated, so it can no longer be bought; plans the
/// catalogue lacks are listed, and added (as `DATA_<PLAN>`) with `addNew`. Airtime products sell
/// any amount in their range and are left as they are.
public struct NexusProductSync: Sendable {
    let supplier: any AirtimeSupplier
    let database: Database

    public init(module: NexusModule, environment: ServerEnvironment) {
        self.supplier = module.supplier(environment: environment)
        self.database = environment.database
    }

    init(supplier: any AirtimeSupplier, database: Database) {
        self.supplier = supplier
        self.database = database
    }

    /// Applies the changes and returns one line per change.
    public func run(addNew: Bool = false) async throws -> [String] {
        let products = try await database.read { db in
            try await db.raw("SELECT * FROM nexus_products WHERE supplier_variation_code IS NOT NULL ORDER BY code").all().map { row in
                (product: try NexusStore.product(row), active: try row.decode(column: "active", as: Bool.self))
            }
        }
        var report: [String] = []
        let services = Set(products.compactMap(\.product.supplierServiceID)).sorted()
        for service in services {
            let plans = try await supplier.variations(serviceID: service)
            let byCode = Dictionary(plans.map { ($0.code, $0) }, uniquingKeysWith: { first, _ in first })
            let mine = products.filter { $0.product.supplierServiceID == service }
            report += try await database.transaction { db in
                var report: [String] = []
                for (product, active) in mine {
                    guard let code = product.supplierVariationCode else { continue }
                    if let plan = byCode[code] {
                        if plan.amount != product.minAmount || plan.amount != product.maxAmount || !active {
                            try await db.raw("""
                                UPDATE nexus_products SET min_amount = \(bind: Int64(plan.amount)), max_amount = \(bind: Int64(plan.amount)), active = TRUE
                                WHERE code = \(bind: product.code)
                                """).run()
                            report.append("\(product.code): ₦\(product.minAmount) → ₦\(plan.amount)\(active ? "" : " (sold again)")")
                        }
                    } else if active {
                        try await db.raw("UPDATE nexus_products SET active = FALSE WHERE code = \(bind: product.code)").run()
                        report.append("\(product.code): \(supplier.name) no longer sells \(code); deactivated")
                    }
                }
                let known = Set(mine.compactMap(\.product.supplierVariationCode))
                for plan in plans where !known.contains(plan.code) {
                    guard addNew, let template = mine.first?.product else {
                        report.append("\(service) \(plan.code) (\(plan.name), ₦\(plan.amount)) is not in the catalogue")
                        continue
                    }
                    let code = "DATA_" + String(plan.code.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" })
                    try await db.raw("""
                        INSERT INTO nexus_products (code, supplier_slug, network, category, name, min_amount, max_amount, active, supplier_service_id, supplier_variation_code)
                        VALUES (\(bind: code), \(bind: template.supplierSlug), \(bind: template.network), 'data', \(bind: String(plan.name.prefix(100))),
                                \(bind: Int64(plan.amount)), \(bind: Int64(plan.amount)), TRUE, \(bind: service), \(bind: plan.code))
                        ON CONFLICT (code) DO NOTHING
                        """).run()
                    report.append("\(code): added (\(plan.name), ₦\(plan.amount))")
                }
                return report
            }
        }
        return report
    }
}

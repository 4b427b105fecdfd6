import Foundation

/// An aggregator that delivers airtime and data to a phone (VTpass today; others can conform).
///
/// Delivery is exactly-once per `requestID`: the supplier refuses a second purchase with the
/// same id, so a purchase whose answer was lost is asked about with ``status(of:)``, never
/// bought again under a new id.
protocol AirtimeSupplier: Sendable {
    /// The name stored with every delivery (`vtpass`).
    var name: String { get }
    /// Buys `order`. Never throws for the supplier's own verdicts; throws only when no answer
    /// came (unreachable, timed out, unreadable), which the caller treats as pending.
    func purchase(_ order: SupplierOrder) async throws -> SupplierOutcome
    /// What became of an earlier purchase.
    func status(of requestID: String) async throws -> SupplierOutcome
    /// The plans the supplier sells for a service (data bundles), for `purse nexus products sync`.
    func variations(serviceID: String) async throws -> [SupplierVariation]
    /// The float left with the supplier, in kobo.
    func balance() async throws -> Int64
}

/// One purchase as the supplier needs it.
struct SupplierOrder: Sendable, Equatable {
    /// Unique per purchase, in the supplier's documented form (see ``VTpassClient/requestID(at:random:)``).
    var requestID: String
    /// The supplier's service (`mtn`, `glo-data` …).
    var serviceID: String
    /// The plan, for data bundles.
    var variationCode: String?
    /// The recipient, `0` + 10 digits.
    var phone: String
    /// Whole naira.
    var amount: Int
}

/// The supplier's verdict on a purchase.
enum SupplierOutcome: Sendable, Equatable {
    /// The airtime reached the phone. `reference` is the supplier's transaction id.
    case delivered(reference: String?)
    /// Accepted but not yet settled, or the answer did not say: ask again later.
    case pending(reason: String)
    /// Not delivered and not charged (refused, failed or reversed): the customer gets the money back.
    case failed(reason: String)
    /// The supplier has no purchase with this request id (only from ``AirtimeSupplier/status(of:)``):
    /// the purchase never reached it and may be sent.
    case unknown
}

/// A data plan as the supplier lists it.
struct SupplierVariation: Sendable, Equatable, Codable {
    var code: String
    var name: String
    /// Whole naira.
    var amount: Int
    var fixedPrice: Bool
}

/// What went wrong talking to a supplier (no verdict on the purchase).
struct SupplierError: Error, CustomStringConvertible, Equatable {
    var description: String
    init(_ description: String) { self.description = description }
}

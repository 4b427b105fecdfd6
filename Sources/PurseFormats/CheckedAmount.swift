/// Arithmetic on amounts, units, counts and timestamps that came from outside — a request, a
/// frame, a header, a link, a chain answer, or a row written from one.
///
/// Swift traps on an overflowing `+`, `-`, unary `-` and `abs`, and a trap ends the whole server;
/// the wrapping operators (`&+`, `&-`) never trap but turn a huge payment into a small or negative
/// one. Neither may touch money. These operations report overflow instead, as
/// `CheckedAmount.Overflow`, which each edge maps to its own 4xx (PostgreSQL's
/// `22003 bigint out of range` on the Wyseman socket, a 400 on HTTP).
public enum CheckedAmount {
    /// The result does not fit in a signed 64-bit integer.
    public struct Overflow: Error, Equatable, CustomStringConvertible {
        public init() {}
        public var description: String { "The amount is out of range" }
    }

    /// `a + b`, or `Overflow`.
    @inlinable
    public static func add(_ a: Int64, _ b: Int64) throws(Overflow) -> Int64 {
        let (sum, overflow) = a.addingReportingOverflow(b)
        if overflow { throw Overflow() }
        return sum
    }

    /// `a - b`, or `Overflow`.
    @inlinable
    public static func subtract(_ a: Int64, _ b: Int64) throws(Overflow) -> Int64 {
        let (difference, overflow) = a.subtractingReportingOverflow(b)
        if overflow { throw Overflow() }
        return difference
    }

    /// `-a`, or `Overflow` for `Int64.min`.
    @inlinable
    public static func negate(_ a: Int64) throws(Overflow) -> Int64 {
        guard a != .min else { throw Overflow() }
        return -a
    }

    /// `a * b`, or `Overflow`.
    @inlinable
    public static func multiply(_ a: Int64, _ b: Int64) throws(Overflow) -> Int64 {
        let (product, overflow) = a.multipliedReportingOverflow(by: b)
        if overflow { throw Overflow() }
        return product
    }

    /// The sum of `values`, or `Overflow` when it (or any partial sum) leaves `Int64`.
    @inlinable
    public static func sum<S: Sequence>(_ values: S) throws(Overflow) -> Int64 where S.Element == Int64 {
        var total: Int64 = 0
        for value in values { total = try add(total, value) }
        return total
    }

    /// The sum of `values`, saturating at `Int64.min`/`Int64.max`: for figures that are shown,
    /// never stored or compared against a limit (a balance sheet's totals).
    public static func saturatingSum<S: Sequence>(_ values: S) -> Int64 where S.Element == Int64 {
        var total = Int128(0)
        for value in values { total += Int128(value) }
        return Int64(clamping: total)
    }

    /// Whether `a` and `b` are at most `window` apart, computed without overflow: for a timestamp
    /// a client sent (`X-Timestamp`, a ticket's date) against the server's clock.
    @inlinable
    public static func within(_ window: Int64, _ a: Int64, _ b: Int64) -> Bool {
        let (difference, overflow) = a.subtractingReportingOverflow(b)
        return window >= 0 && !overflow && difference.magnitude <= window.magnitude
    }

    /// `number` as an `Int64` when it is a whole number in range (not NaN, not infinite, not
    /// 1e19): the only safe way from a JSON double to an integer.
    @inlinable
    public static func exactInteger(_ number: Double) -> Int64? {
        Int64(exactly: number)
    }
}

/// Comparisons whose time does not depend on where the inputs differ: for secrets, MACs and
/// their digests, so a caller timing the answer learns nothing about the expected value.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes (their lengths are not secret).
    public static func equal(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}

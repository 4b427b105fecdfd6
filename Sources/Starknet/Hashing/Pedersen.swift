/// Starknet's Pedersen hash of two felts:
/// `x(shift + a_low·P0 + a_high·P1 + b_low·P2 + b_high·P3)`, where `_low` is a felt's low 248 bits
/// and `_high` its top 4.
///
/// The five points are StarkWare's constants (`pedersen_params.json` in cairo-lang, points 0, 2,
/// 250, 254 and 502, generated from the digits of π). Their multiples live in tables of eight bits
/// per window, so a hash is 64 mixed additions and one inversion.
public enum Pedersen {
    static let shift = AffinePoint(
        x: "49ee3eba8c1600700ee1b87eb599f16716b0b1022947733551fde4050ca6804",
        y: "3ca0cfe4b3bc6ddf346d49d06ea0ed34e621062c0e056c1d0405d266e10268a")
    static let p0 = AffinePoint(
        x: "234287dcbaffe7f969c748655fca9e58fa8120b6d56eb0c1080d17957ebe47b",
        y: "3b056f100f96fb21e889527d41f4e39940135dd7a6c94cc6ed0268ee89e5615")
    static let p1 = AffinePoint(
        x: "4fa56f376c83db33f9dab2656558f3399099ec1de5e3018b7a6932dba8aa378",
        y: "3fa0984c931c9e38113e0c0e47e4401562761f92a7a23b45168f4e80ff5b54d")
    static let p2 = AffinePoint(
        x: "4ba4cc166be8dec764910f75b45f74b40c690c74709e90f3aa372f0bd2d6997",
        y: "40301cf5c1751f4b971e46c4ede85fcac5c59a5ce5ae7c48151f27b24b219c")
    static let p3 = AffinePoint(
        x: "54302dcb0e6cc1c6e44cca8f61a63bb2ca65048d53fb325d36ff12c49a58202",
        y: "1b77b3e37d13504b348046268d8ae25ce98ad783c25561a879dcc77e99c2426")

    /// The tables for the low parts (248 bits) and the high nibbles (4 bits) of both inputs.
    static let tables: (low0: FixedBaseTable, high0: FixedBaseTable, low1: FixedBaseTable, high1: FixedBaseTable) = (
        FixedBaseTable(base: p0, bits: 248, width: 8), FixedBaseTable(base: p1, bits: 4, width: 4),
        FixedBaseTable(base: p2, bits: 248, width: 8), FixedBaseTable(base: p3, bits: 4, width: 4)
    )

    /// Builds the tables now instead of on the first hash (they take a few milliseconds).
    public static func prepare() { _ = tables }

    public static func hash(_ a: Felt, _ b: Felt) -> Felt {
        let tables = tables
        var point = shift.jacobian
        point = tables.low0.multiply(a.raw.masked(to: 248), adding: point)
        point = tables.high0.multiply(U256(a.raw.bits(at: 248, width: 4)), adding: point)
        point = tables.low1.multiply(b.raw.masked(to: 248), adding: point)
        point = tables.high1.multiply(U256(b.raw.bits(at: 248, width: 4)), adding: point)
        // The sum is never the point at infinity for inputs below P (the points are independent).
        return Felt(raw: point.affineX!.value)
    }

    /// `h(h(h(h(0, e0), e1), …), n)`: the chain over the elements, ending with their count.
    public static func hash(elements: some Sequence<Felt>) -> Felt {
        var result = Felt.zero
        var count: UInt64 = 0
        for element in elements {
            result = hash(result, element)
            count += 1
        }
        return hash(result, Felt(count))
    }
}

import Foundation
import Testing
@testable import Starknet

/// The signer's fixed-base multiplication for secret scalars (nonces, private keys): the same
/// point as the public multiplication, and the same work whatever the scalar's digits.
@Suite("Starknet: constant-work multiplication by a secret")
struct FixedBaseTests {
    /// Scalars whose 4-bit digits are mostly zero (once the fast path), and ordinary ones.
    static let scalars: [U256] = [
        U256(1), U256(2), U256(0x10), U256(hexDigits: "800000000000000000000000000000000000000000000000000000000000000")!,
        U256(hexDigits: "100000000000000000000000000000000000000000000000000000000000001")!,
        U256(hexDigits: "7ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff")!,
        U256(hexDigits: "4c1c0a4dbd6e8a24e3a1fe45dc29fa3c3a4b5e25bb3f2d1d4a1a0f8d8f9c0a1")!,
        U256(hexDigits: "0000000000000000000000000000000000000000000000000000000deadbeef")!,
    ]

    @Test("every scalar costs the same additions and table reads; no digit is skipped")
    func workDoesNotDependOnTheScalar() {
        let table = StarkCurve.generatorTable
        var works: [FixedBaseTable.SecretMultiplicationWork] = []
        for scalar in Self.scalars + (0..<16).map({ _ in U256(UInt64.random(in: 1...UInt64.max)) }) {
            var work = FixedBaseTable.SecretMultiplicationWork()
            _ = table.multiplySecret(scalar, work: &work)
            works.append(work)
        }
        #expect(Set(works.map(\.additions)).count == 1 && Set(works.map(\.entriesRead)).count == 1, "\(works)")
        // One addition per window after the first, and the correction: 63 for 252 bits.
        #expect(works[0].additions == table.windows && works[0].entriesRead == table.windows * 16)
    }

    @Test("the secret multiplication is the public one")
    func sameResult() {
        let table = StarkCurve.generatorTable
        for scalar in Self.scalars {
            #expect(table.multiplySecret(scalar).affine == table.multiply(scalar).affine, "\(scalar)")
        }
        // And the generator itself, by the generic double-and-add.
        let random = U256(hexDigits: "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a")!
        #expect(table.multiplySecret(random).affine == JacobianPoint.multiply(StarkCurve.generator, by: random).affine)
    }
}

/// A Starknet account's consent to pay for a ChippiPay wallet's purchases: the hash the account
/// signs (and the provider checks with the account's `is_valid_signature`) before its vault
/// withdrawals count as that wallet's payments. The ChippiPay client core signs it, the provider
/// verifies it; both compute it here.
///
/// `Poseidon("ChippiPay.payer_link.v1", chain id, wallet account, payer account)`: bound to the
/// chain and to both accounts, so a signature links exactly one payer to exactly one wallet.
public enum PayerLink {
    public static let domain = Felt(shortString: "ChippiPay.payer_link.v1")!

    public static func messageHash(chainId: Felt, wallet: Felt, payer: Felt) -> Felt {
        Poseidon.hash(many: [domain, chainId, wallet, payer])
    }
}

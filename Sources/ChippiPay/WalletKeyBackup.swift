import Crypto
import CryptoExtras
import Foundation
import PurseFormats
import Starknet

/// The gasless wallet's private key as the provider keeps it: encrypted on the device with the
/// user's password, so the provider can give it back but never read it.
///
/// Format: `v1.<salt>.<rounds>.<sealed>` — salt 16 random bytes, PBKDF2-HMAC-SHA256 with `rounds`
/// iterations to a 256-bit key, AES-256-GCM over the key's 32 big-endian bytes with the wallet id
/// as associated data (a blob cannot be moved to another wallet); salt and sealed box
/// (nonce ‖ ciphertext ‖ tag) in unpadded base64url.
public enum WalletKeyBackup {
    /// OWASP's figure for PBKDF2-HMAC-SHA256 (2023).
    public static let defaultRounds = 600_000

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case malformed
        case wrongPassword
        case weakPassword

        public var description: String {
            switch self {
            case .malformed: "The encrypted key is not in a format this app reads"
            case .wrongPassword: "The password does not unlock this wallet"
            case .weakPassword: "Use a password of at least 8 characters"
            }
        }
    }

    public static func seal(_ key: StarkKey, password: String, walletId: WalletID, rounds: Int = defaultRounds) throws -> String {
        guard password.count >= 8 else { throw Failure.weakPassword }
        let salt = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let symmetric = try derive(password: password, salt: salt, rounds: rounds)
        let box = try AES.GCM.seal(Data(key.privateKey.bigEndianBytes), using: symmetric, authenticating: Data(walletId.rawValue.utf8))
        guard let combined = box.combined else { throw Failure.malformed }
        return "v1.\(Base64URL.encode(salt)).\(rounds).\(Base64URL.encode(combined))"
    }

    public static func open(_ blob: String, password: String, walletId: WalletID) throws -> StarkKey {
        let parts = blob.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "v1", let salt = Base64URL.decode(String(parts[1])), let rounds = Int(parts[2]),
              (1_000...10_000_000).contains(rounds), let sealed = Base64URL.decode(String(parts[3])) else {
            throw Failure.malformed
        }
        let symmetric = try derive(password: password, salt: salt, rounds: rounds)
        let plain: Data
        do {
            plain = try AES.GCM.open(try AES.GCM.SealedBox(combined: sealed), using: symmetric, authenticating: Data(walletId.rawValue.utf8))
        } catch {
            throw Failure.wrongPassword
        }
        guard let felt = Felt(bigEndianBytes: plain), let key = try? StarkKey(privateKey: felt) else { throw Failure.malformed }
        return key
    }

    static func derive(password: String, salt: some DataProtocol, rounds: Int) throws -> SymmetricKey {
        try KDF.Insecure.PBKDF2.deriveKey(from: Data(password.utf8), salt: salt, using: .sha256, outputByteCount: 32, unsafeUncheckedRounds: rounds)
    }
}

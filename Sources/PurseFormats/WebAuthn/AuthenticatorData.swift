import Foundation

/// Parsed authenticator data (WebAuthn §6.1): what a WebAuthn authenticator signs, and what
/// Apple's App Attest puts in its attestations and assertions.
public struct AuthenticatorData: Sendable, Equatable {
    public struct Flags: OptionSet, Sendable, Equatable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let userPresent = Flags(rawValue: 0x01)
        public static let userVerified = Flags(rawValue: 0x04)
        public static let backupEligible = Flags(rawValue: 0x08)
        public static let backedUp = Flags(rawValue: 0x10)
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        public static let extensionData = Flags(rawValue: 0x80)
    }

    public struct AttestedCredential: Sendable, Equatable {
        public var aaguid: Data
        public var credentialID: Data
        /// The COSE_Key bytes exactly as the authenticator wrote them.
        public var publicKeyCOSE: Data
    }

    public var rpIDHash: Data
    public var flags: Flags
    public var signCount: UInt32
    public var attestedCredential: AttestedCredential?
    public var raw: Data

    public init(_ data: Data) throws {
        let bytes = [UInt8](data)
        guard bytes.count >= 37 else { throw AuthenticatorDataError("authenticatorData is shorter than 37 bytes") }
        raw = data
        rpIDHash = Data(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var offset = 37
        if flags.contains(.attestedCredentialData) {
            guard bytes.count >= offset + 18 else { throw AuthenticatorDataError("attested credential data is truncated") }
            let aaguid = Data(bytes[offset..<offset + 16])
            let length = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
            offset += 18
            guard length > 0, length <= 1023, bytes.count >= offset + length else { throw AuthenticatorDataError("credential id length is invalid") }
            let credentialID = Data(bytes[offset..<offset + length])
            offset += length
            let (_, used) = try CBORDecoder.decodePrefix(Data(bytes[offset...]))
            attestedCredential = AttestedCredential(aaguid: aaguid, credentialID: credentialID, publicKeyCOSE: Data(bytes[offset..<offset + used]))
            offset += used
        }
        if flags.contains(.extensionData) {
            guard offset < bytes.count else { throw AuthenticatorDataError("extension data flag set but none present") }
            let (_, used) = try CBORDecoder.decodePrefix(Data(bytes[offset...]))
            offset += used
        }
        guard offset == bytes.count else { throw AuthenticatorDataError("authenticatorData has trailing bytes") }
    }
}

/// Authenticator data that does not parse, and why.
public struct AuthenticatorDataError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

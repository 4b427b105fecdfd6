import Crypto
import PurseAPNs
import Foundation
import PurseServer
import SwiftASN1
import X509

/// The sandbox's own settings: the key pushes to it must be signed with, and the app that
/// exists from the start.
public struct CutiESandboxConfiguration: Sendable {
    /// The key the APNs sandbox accepts provider tokens from.
    public var apnsCredentials: APNsCredentials
    /// `app_sandbox`, whose bundle id is the topic the sandbox accepts for it.
    public var appID = "app_sandbox"
    public var bundleID = "com.purse.cutie.sandbox"
    /// The sandbox app's Apple team id (App Attest's app id is `PURSETEAM0.com.purse.cutie.sandbox`).
    public var teamID = CutiESandboxConfiguration.teamID

    public init(apnsCredentials: APNsCredentials) { self.apnsCredentials = apnsCredentials }

    /// The sandbox key's ids: ten characters each, as Apple's are.
    public static let keyID = "SANDBOXKEY"
    public static let teamID = "PURSETEAM0"
}

/// Cuti-E's settings.
///
/// - `CUTIE_LINK_SECONDS`: how long a device-link token lives (default 600).
/// - `CUTIE_MAX_MESSAGE_LENGTH`: the longest message in characters (default 5000).
/// - `CUTIE_SIGNATURE_WINDOW_SECONDS`: how stale a signed request may be (default 300).
/// - `CUTIE_ADMIN_SESSION_HOURS`: how long an admin stays signed in (default 12).
/// - `CUTIE_APP_ATTEST_DEV_ROOT`: a PEM file of App Attest roots trusted beside Apple's (a
///   development CA). In development the sandbox's own development root is trusted too, and
///   written to `cutie-app-attest-dev-root.pem` in the data directory.
/// - `CUTIE_ATTEST_CHALLENGE_SECONDS`: how long an App Attest challenge lives (default 300).
/// - `CUTIE_NEW_DEVICES_PER_ADDRESS_HOUR`: new devices one client address may register per app
///   and hour (default 30; 0 turns the limit off).
/// - `CUTIE_CONVERSATIONS_PER_DEVICE_DAY`: new conversations one device may start a day
///   (default 20; 0 turns the limit off).
/// - `CUTIE_ADDRESS_QUOTA_PERCENT`: the share of a limited tier's monthly feedback one client
///   address may use (default 20; 0 or 100 turns the limit off).
/// - `CUTIE_STOREKIT_ROOT`: a PEM file of roots trusted beside Apple Root CA – G3 for StoreKit
///   transactions and App Store notifications. In development the sandbox's StoreKit signer's
///   root is trusted too (`cutie-storekit-dev-root.pem` in the data directory).
public struct CutiEConfiguration: Sendable {
    public var sandbox: CutiESandboxConfiguration?
    public var apns: APNsConfiguration
    public var linkSeconds = 600
    public var maxMessageLength = 5000
    public var signatureWindow: TimeInterval = 300
    public var adminSessionHours = 12.0
    /// New devices one client address may register per app and hour (0: no limit).
    public var newDevicesPerAddressHour = 30
    /// New conversations one device may start a day (0: no limit).
    public var conversationsPerDeviceDay = 20
    /// The share (percent) of a limited tier's monthly feedback one client address may use.
    public var addressQuotaPercent = 20
    /// The secret device secrets derive from (each device's is HMAC(secret, token id)).
    public var deviceSecretKey: SymmetricKey
    /// The roots App Attest attestations must chain to: Apple's, and development roots.
    public var appAttestRoots: [Certificate]
    /// The sandbox's development CA, which issues credential certificates to software attesters.
    public var appAttestDevelopmentCA: AppAttestDevelopmentCA?
    public var attestChallengeSeconds = 300
    /// The roots StoreKit's signatures must chain to: Apple Root CA – G3, and development roots.
    public var storeKitRoots: [Certificate]
    /// The sandbox's StoreKit signer (development only).
    public var storeKitSigner: StoreKitDevelopmentSigner?

    public init(sandbox: CutiESandboxConfiguration?, apns: APNsConfiguration, deviceSecretKey: SymmetricKey,
                appAttestRoots: [Certificate] = [], appAttestDevelopmentCA: AppAttestDevelopmentCA? = nil,
                storeKitRoots: [Certificate] = [], storeKitSigner: StoreKitDevelopmentSigner? = nil) {
        self.storeKitSigner = storeKitSigner
        self.storeKitRoots = ((try? StoreKitVerifier.apple().roots) ?? []) + storeKitRoots
        if let storeKitSigner { self.storeKitRoots.append(storeKitSigner.root) }
        self.sandbox = sandbox
        self.apns = apns
        self.deviceSecretKey = deviceSecretKey
        self.appAttestDevelopmentCA = appAttestDevelopmentCA
        self.appAttestRoots = (try? AppAttestVerifier.apple().roots) ?? []
        self.appAttestRoots += appAttestRoots
        if let appAttestDevelopmentCA { self.appAttestRoots.append(appAttestDevelopmentCA.root) }
    }

    public static func from(_ configuration: PurseConfiguration) throws -> CutiEConfiguration {
        let env = configuration.environment
        func value(_ name: String) -> String? { env[name].flatMap { $0.isEmpty ? nil : $0 } }
        let secrets = ServerSecrets(dataDirectory: configuration.dataDirectory)

        var sandbox: CutiESandboxConfiguration?
        if !configuration.isProduction {
            sandbox = CutiESandboxConfiguration(apnsCredentials: APNsCredentials(
                keyID: CutiESandboxConfiguration.keyID, teamID: CutiESandboxConfiguration.teamID, privateKey: try secrets.p256Key(named: "cutie-apns-sandbox.key")))
        }

        let apns = try APNsConfiguration.from(configuration, sandboxCredentials: sandbox?.apnsCredentials, service: "Cuti-E")

        func roots(_ name: String) throws -> [Certificate] {
            guard let file = value(name) else { return [] }
            guard let pem = try? String(contentsOfFile: file, encoding: .utf8),
                  let roots = try? PEMDocument.parseMultiple(pemString: pem).map({ try Certificate(pemDocument: $0) }), !roots.isEmpty else {
                throw ConfigurationError("\(name) must be a readable PEM file of certificates")
            }
            return roots
        }
        let extraRoots = try roots("CUTIE_APP_ATTEST_DEV_ROOT")
        var developmentCA: AppAttestDevelopmentCA?
        var storeKitSigner: StoreKitDevelopmentSigner?
        if sandbox != nil {
            let ca = try AppAttestDevelopmentCA(rootKey: try secrets.p256Key(named: "cutie-app-attest-root.key"),
                                                intermediateKey: try secrets.p256Key(named: "cutie-app-attest-ca.key"), now: Date())
            let path = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("cutie-app-attest-dev-root.pem")
            try? Data(try ca.rootPEM.utf8).write(to: path, options: .atomic)
            developmentCA = ca
            let signer = try StoreKitDevelopmentSigner(rootKey: try secrets.p256Key(named: "cutie-storekit-root.key"),
                                                       intermediateKey: try secrets.p256Key(named: "cutie-storekit-ca.key"),
                                                       leafKey: try secrets.p256Key(named: "cutie-storekit-leaf.key"), now: Date())
            try? Data(try signer.rootPEM.utf8).write(to: URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("cutie-storekit-dev-root.pem"),
                                                      options: .atomic)
            storeKitSigner = signer
        }

        var cutie = CutiEConfiguration(
            sandbox: sandbox, apns: apns,
            deviceSecretKey: SymmetricKey(data: try secrets.secret(named: "cutie-device.key")),
            appAttestRoots: extraRoots, appAttestDevelopmentCA: developmentCA,
            storeKitRoots: try roots("CUTIE_STOREKIT_ROOT"), storeKitSigner: storeKitSigner)
        if let text = value("CUTIE_ATTEST_CHALLENGE_SECONDS") {
            guard let seconds = Int(text), (30...3600).contains(seconds) else { throw ConfigurationError("CUTIE_ATTEST_CHALLENGE_SECONDS must be 30 to 3600") }
            cutie.attestChallengeSeconds = seconds
        }
        if let text = value("CUTIE_LINK_SECONDS") {
            guard let seconds = Int(text), (30...86_400).contains(seconds) else { throw ConfigurationError("CUTIE_LINK_SECONDS must be 30 to 86400") }
            cutie.linkSeconds = seconds
        }
        if let text = value("CUTIE_MAX_MESSAGE_LENGTH") {
            guard let length = Int(text), (1...100_000).contains(length) else { throw ConfigurationError("CUTIE_MAX_MESSAGE_LENGTH must be 1 to 100000") }
            cutie.maxMessageLength = length
        }
        if let text = value("CUTIE_SIGNATURE_WINDOW_SECONDS") {
            guard let seconds = Double(text), (5...3600).contains(seconds) else { throw ConfigurationError("CUTIE_SIGNATURE_WINDOW_SECONDS must be 5 to 3600") }
            cutie.signatureWindow = seconds
        }
        if let text = value("CUTIE_ADMIN_SESSION_HOURS") {
            guard let hours = Double(text), hours > 0, hours <= 24 * 30 else { throw ConfigurationError("CUTIE_ADMIN_SESSION_HOURS must be more than 0 and at most 720") }
            cutie.adminSessionHours = hours
        }
        for (name, range, keyPath) in [("CUTIE_NEW_DEVICES_PER_ADDRESS_HOUR", 0...1_000_000, \CutiEConfiguration.newDevicesPerAddressHour),
                                       ("CUTIE_CONVERSATIONS_PER_DEVICE_DAY", 0...1_000_000, \.conversationsPerDeviceDay),
                                       ("CUTIE_ADDRESS_QUOTA_PERCENT", 0...100, \.addressQuotaPercent)] {
            guard let text = value(name) else { continue }
            guard let number = Int(text), range.contains(number) else {
                throw ConfigurationError("\(name) must be \(range.lowerBound) to \(range.upperBound)")
            }
            cutie[keyPath: keyPath] = number
        }
        return cutie
    }
}


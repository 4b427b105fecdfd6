import Crypto
import Foundation
import PurseKit
import Testing

@Suite("Secure store, biometric gate, device key")
struct SecurityTests {
    func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("purse-store-\(UUID().uuidString)")
    }

    @Test func encryptedFileStoreRoundTripsAndEncrypts() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = EncryptedFileSecureStore(directory: directory)
        try await store.setString("super-secret-token", for: "session.token")
        #expect(try await store.string(for: "session.token") == "super-secret-token")
        #expect(try await store.string(for: "missing") == nil)

        // A new store over the same directory reads it back; nothing is stored in the clear.
        #expect(try await EncryptedFileSecureStore(directory: directory).string(for: "session.token") == "super-secret-token")
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let bytes = try Data(contentsOf: directory.appendingPathComponent(file))
            #expect(!String(decoding: bytes, as: UTF8.self).contains("super-secret-token"))
        }
        let keyMode = try FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("store.key").path)[.posixPermissions] as? NSNumber
        #expect(keyMode?.intValue == 0o600)
        let dirMode = try FileManager.default.attributesOfItem(atPath: directory.path)[.posixPermissions] as? NSNumber
        #expect(dirMode?.intValue == 0o700)

        // Overwriting an item replaces it.
        try await store.setString("rotated-token", for: "session.token")
        #expect(try await store.string(for: "session.token") == "rotated-token")

        try await store.remove("session.token")
        #expect(try await store.string(for: "session.token") == nil)
    }

    @Test func swappedItemFilesAreDetected() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = EncryptedFileSecureStore(directory: directory)
        try await store.setString("A", for: "a")
        try await store.setString("B", for: "b")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("item-") }
        #expect(files.count == 2)
        let first = directory.appendingPathComponent(files[0]), second = directory.appendingPathComponent(files[1])
        let data = try Data(contentsOf: first)
        try Data(contentsOf: second).write(to: first)
        try data.write(to: second)
        await #expect(throws: SecureStoreError.self) { try await store.string(for: "a") }
    }

    @Test func worldReadableKeyIsRefused() async throws {
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await EncryptedFileSecureStore(directory: directory).setString("x", for: "k")
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: directory.appendingPathComponent("store.key").path)
        await #expect(throws: SecureStoreError.self) { try await EncryptedFileSecureStore(directory: directory).string(for: "k") }
    }

    @Test func scriptedBiometricGateAnswersInOrder() async {
        let gate = SoftwareBiometricGate.scripted([.failed, .cancelled, .success])
        #expect(await gate.availability().isAvailable)
        #expect(await gate.authenticate(reason: "Pay") == .failed)
        #expect(await gate.authenticate(reason: "Pay") == .cancelled)
        #expect(await gate.authenticate(reason: "Pay") == .success)
        #expect(await gate.authenticate(reason: "Pay") == .success)
        let none = SoftwareBiometricGate.scripted([.success], available: false)
        #expect(await none.availability() == .unavailable(reason: "no biometric sensor"))
        #expect(await none.authenticate(reason: "Pay") == .unavailable)
    }

    @Test func deviceKeySignsVerifiableES256AndPersists() async throws {
        let store = InMemorySecureStore()
        let key = try await SoftwareDeviceKey.loadOrCreate(tag: "device.key", in: store)
        let again = try await SoftwareDeviceKey.loadOrCreate(tag: "device.key", in: store)
        #expect(key.publicKeyX963 == again.publicKeyX963)
        #expect(key.publicKeyX963.count == 65 && key.publicKeyX963.first == 0x04)
        let message = Data("challenge".utf8)
        let signature = try await key.sign(message)
        let publicKey = try P256.Signing.PublicKey(x963Representation: key.publicKeyX963)
        #expect(publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: signature), for: message))
        #expect(!publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: signature), for: Data("other".utf8)))
    }
}

import Foundation
import Logging
import PurseDatabase
@testable import PurseServer
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The data directory and its SQLite files are the server user's alone, whatever the umask.
@Suite("Data directory permissions")
struct DataDirectoryTests {
    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }

    @Test func theDataDirectoryAndDatabaseAreOwnerOnly() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("purse-modes-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A directory made open, as a umask of 022 or 000 leaves it.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
        var configuration = PurseConfiguration()
        configuration.dataDirectory = directory
        configuration.bcryptCost = 4
        configuration.logLevel = .warning
        let app = try await buildApplication(configuration: configuration, modules: [])
        _ = try await app.environment.accounts.create(email: "modes@example.com", phone: nil, name: nil, passwordHash: "x", now: Date())
        #expect(try Self.mode(directory) == 0o700)
        let database = directory + "/purse.sqlite"
        #expect(try Self.mode(database) == 0o600)
        for file in [database + "-wal", database + "-shm"] where FileManager.default.fileExists(atPath: file) {
            #expect(try Self.mode(file) == 0o600, "\(file)")
        }
        #expect(try Self.mode(directory + "/secrets/seal.key") == 0o600)
        await app.environment.database.shutdown()
    }
}

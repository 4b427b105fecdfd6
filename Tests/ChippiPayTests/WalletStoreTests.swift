import ChippiPayVocabulary
import PurseFormats
@testable import ChippiPayService
@testable import StarknetDevnet
import Foundation
import PurseDatabase
import PurseServer
import PurseTestSupport
import Testing

/// The ChippiPay provider's wallet store on each engine.
@Suite("ChippiPay wallet store contract")
struct WalletStoreTests {
    let store = WalletStore()

    @Test("a wallet is prepared once per app user, activated with its key, and seen only by its merchant; payers link once",
          arguments: TestEngines.all)
    func walletsAndPayers(engine: DatabaseEngine) async throws {
        let server = try await TestServer.make(engine: engine, modules: [ChippiPayModule(configuration: ChippiPayConfiguration(
            sandbox: StarknetSandboxConfiguration(), provider: ChippiProviderConfiguration()))]) { $0.runsJobsInBackground = false }
        defer { Task { await server.shutdown() } }
        let env = server.environment
        let now = env.now()
        try await env.database.transaction { db in
            try await MerchantKeys.create(merchant: "mer_sandbox", name: "Store test", webhookURL: nil, keys: MerchantKeys.newPair(live: false),
                                          now: now, sealer: env.sealer, in: db)
            try await store.prepare(id: "wallet_a", merchant: "mer_sandbox", externalUserID: "ana", metadata: "{}", now: now, in: db)
        }
        // One wallet per app user of a merchant: the schema refuses a second.
        await #expect(throws: (any Error).self) {
            try await env.database.transaction { db in
                try await store.prepare(id: "wallet_b", merchant: "mer_sandbox", externalUserID: "ana", metadata: "{}", now: now, in: db)
            }
        }
        let prepared = try await env.database.read { db in try await store.wallet(ofUser: "ana", merchant: "mer_sandbox", in: db) }
        #expect(prepared?.id == "wallet_a" && prepared?.status == .prepared && prepared?.publicKey == nil)
        try await env.database.transaction { db in
            try await store.activate("wallet_a", publicKey: "0x1", encryptedPrivateKey: "sealed-key-blob-16", address: "0x2", now: now, in: db)
            try await store.recordDeploy(of: "wallet_a", transactionHash: "0x3", in: db)
        }
        let active = try await env.database.read { db in try await store.wallet("wallet_a", merchant: "mer_sandbox", in: db) }
        #expect(active?.status == .active && active?.publicKey == "0x1" && active?.address == "0x2" && active?.deployTransactionHash == "0x3")
        #expect(try await env.database.read { db in try await store.wallet("wallet_a", merchant: "mer_other", in: db) } == nil)

        let (first, second) = try await env.database.transaction { db in
            (try await store.linkPayer("0x9", to: "wallet_a", now: now, in: db), try await store.linkPayer("0x9", to: "wallet_a", now: now, in: db))
        }
        #expect(first && !second)
        let (linked, stranger) = try await env.database.read { db in
            (try await store.isLinkedPayer("0x9", of: "wallet_a", in: db), try await store.isLinkedPayer("0x8", of: "wallet_a", in: db))
        }
        #expect(linked && !stranger)
    }
}

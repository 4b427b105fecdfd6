import Crypto
import Foundation
@testable import NexusPay
import PurseDatabase
import PurseFormats
import PurseKit
import PurseHTTP
import PurseServer
import PurseTestSupport
import Testing

@Suite("Nexus: client core against the service")
struct NexusClientCoreTests {
    @Test func softLockMakesZeroNetworkCalls() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let before = user.transport.requests.count
            let store = InMemorySecureStore()
            // Biometric path.
            let lock = SoftLock(gate: SoftwareBiometricGate.scripted([.success]), store: store, iterations: 1_000)
            #expect(await lock.unlock() == .unlocked)
            #expect(await lock.unlock() == .unlocked, "no re-prompt in the session")
            await lock.logout()
            #expect(await lock.unlocked == false)
            // PIN path when biometrics are unavailable.
            let pinLock = SoftLock(gate: SoftwareBiometricGate.scripted([], available: false), store: store, maxPinAttempts: 3, iterations: 1_000)
            #expect(await pinLock.unlock() == .needsPinSetup)
            try await pinLock.setPin("2580")
            #expect(await pinLock.unlock() == .needsPin(reason: "Biometric unavailable"))
            #expect(try await pinLock.unlock(pin: "1111") == .wrongPin(attemptsLeft: 2))
            #expect(try await pinLock.unlock(pin: "2580") == .unlocked)
            // Biometric failure falls back to the PIN.
            let failing = SoftLock(gate: SoftwareBiometricGate.scripted([.failed]), store: store, iterations: 1_000)
            #expect(await failing.unlock() == .needsPin(reason: "Biometric failed"))
            #expect(try await failing.unlock(pin: "0000") == .wrongPin(attemptsLeft: 4))
            #expect(user.transport.requests.count == before, "unlock must not touch the network")
        }
    }

    @Test func softLockLocksOutAfterTooManyPins() async throws {
        let lock = SoftLock(gate: SoftwareBiometricGate.scripted([], available: false), store: InMemorySecureStore(), maxPinAttempts: 2, iterations: 1_000)
        try await lock.setPin("2580")
        #expect(try await lock.unlock(pin: "1111") == .wrongPin(attemptsLeft: 1))
        #expect(try await lock.unlock(pin: "1111") == .lockedOut)
        #expect(try await lock.unlock(pin: "2580") == .lockedOut)
    }

    @Test func softLockPinIsHashedNotStored() async throws {
        let store = InMemorySecureStore()
        let lock = SoftLock(gate: SoftwareBiometricGate.scripted([]), store: store, iterations: 1_000)
        try await lock.setPin("2580")
        let stored = try #require(await store.data(for: "nexus.softlock.pin"))
        #expect(stored.count == 48)
        #expect(!String(decoding: stored, as: UTF8.self).contains("2580"))
    }

    /// RFC 7914 §11's PBKDF2-HMAC-SHA256 vector (P="passwd", S="salt", c=1).
    @Test func pbkdf2MatchesTheRFCVector() throws {
        let expected = "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
        let derived = try SoftLock.derivedKey(pin: "passwd", salt: Data("salt".utf8), iterations: 1, length: 64)
        #expect(Hex.encode(derived) == expected)
    }

    @MainActor
    @Test func checkoutViewModelBuysWithBiometrics() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            let model = await CheckoutViewModel(client: user.nexus, gate: SoftwareBiometricGate.scripted([.success]), authenticator: user.authenticator)
            await model.buy(NexusHarness.order)
            let step = await model.step
            guard case .completed(let receipt) = step else { Issue.record("ended at \(step)"); return }
            #expect(receipt.balance == 4_500)
            let paths = user.transport.requests.suffix(3).map { "\($0.method) \($0.url.path)" }
            #expect(paths == ["GET /biometric/auth/options", "POST /biometric/auth/verify", "POST /user/topup"], "the seed's three calls")
        }
    }

    @MainActor
    @Test func checkoutViewModelFallsBackToPinAfterCancel() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            try await user.nexus.setPin("2580")
            let model = await CheckoutViewModel(client: user.nexus, gate: SoftwareBiometricGate.scripted([.cancelled]), authenticator: user.authenticator)
            await model.buy(NexusHarness.order)
            #expect(await model.step == .biometricFailed)
            #expect(await model.message == "Biometric failed")
            await model.usePin()
            await model.submitPin("1111")
            #expect(await model.step == .enteringPin(message: "Incorrect PIN. 4 attempts left."))
            await model.submitPin("2580")
            guard case .completed = await model.step else { Issue.record("not completed"); return }
            #expect(try await h.balance(user) == 4_500)
        }
    }

    @MainActor
    @Test func checkoutViewModelShowsVerificationFailure() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser()
            // A device whose counter went backwards: the server refuses the proof.
            _ = try await h.verify(user)
            _ = try await h.verify(user)
            try await user.store.setString("1", for: "nexus.credential.counter")
            let model = await CheckoutViewModel(client: user.nexus, gate: SoftwareBiometricGate.scripted([.success]), authenticator: user.authenticator)
            await model.buy(NexusHarness.order)
            #expect(await model.step == .verificationFailed(message: "Sign count did not increase (possible cloned authenticator)"))
            #expect(await model.message == "Verification failed. Try again or use PIN")
            #expect(try await h.balance(user) == 5_000)
        }
    }

    @MainActor
    @Test func checkoutViewModelReportsInsufficientBalance() async throws {
        try await NexusHarness.withServer { h in
            let user = try await h.enrolledUser(funding: 100)
            let model = await CheckoutViewModel(client: user.nexus, gate: SoftwareBiometricGate.scripted([.success]), authenticator: user.authenticator)
            await model.buy(NexusHarness.order)
            guard case .refused(let error) = await model.step else { Issue.record("not refused"); return }
            #expect(error.domainCode == "insufficient_balance")
            #expect(await model.message == "Insufficient balance")
        }
    }
    /// The checkout behind a network that answers 429 and 503, drops requests, loses answers,
    /// duplicates and delays (a seeded 40 % of requests): 12 orders, each with the biometric
    /// step-up or the PIN, each retried with the screen's Retry until it ends. Every order ends
    /// completed or refused; the wallet holds exactly one top-up per completed order (the ids the
    /// receipts show) and its balance is the funding less exactly those.
    @MainActor
    @Test func checkoutBehindAFaultyNetworkNeverPaysTwice() async throws {
        try await NexusHarness.withServer { @MainActor (h: NexusHarness) async throws in
            let user = try await h.enrolledUser(funding: 50_000)
            try await user.nexus.setPin("2580")
            let session = ClientSession(baseURL: URL(string: "http://localhost:8080")!, store: InMemorySecureStore())
            try await session.setToken(user.token)
            let faulty = FaultInjectingTransport(user.transport, seed: 2027, percent: 40)
            let api = APIClient(session: session, transport: faulty, retry: RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(1), maxDelay: .milliseconds(4)))
            let nexus = NexusClient(api: api)
            var receipts: [TopupReceipt] = []
            var refused = 0
            for index in 0..<12 {
                let model = CheckoutViewModel(client: nexus, gate: SoftwareBiometricGate.scripted(Array(repeating: .success, count: 40)),
                                              authenticator: user.authenticator)
                if index.isMultiple(of: 2) {
                    await model.buy(NexusHarness.order)
                } else {
                    await model.buyWithPin(NexusHarness.order)
                    await model.submitPin("2580")
                }
                for _ in 0..<30 {
                    switch model.step {
                    case .failed: await model.retry()
                    case .verificationFailed, .biometricFailed: await model.usePin()
                    case .enteringPin: await model.submitPin("2580")
                    default: break
                    }
                    if case .completed = model.step { break }
                    if case .refused = model.step { break }
                }
                switch model.step {
                case .completed(let receipt): receipts.append(receipt)
                case .refused: refused += 1
                default: Issue.record("order \(index) ended at \(model.step)")
                }
            }
            let history = try await user.nexus.transactions(limit: 100).data.filter { $0.kind == .topup }
            #expect(receipts.count + refused == 12)
            #expect(Set(receipts.map(\.transactionId)).count == receipts.count, "no receipt names another order's top-up")
            #expect(Set(history.map(\.transactionId)) == Set(receipts.map(\.transactionId)), "one top-up per completed order, and no other")
            #expect(try await h.balance(user) == 50_000 - 500 * receipts.count)
            #expect(faulty.totalFaults > 10, "faults injected: \(faulty.faults)")
        }
    }
}

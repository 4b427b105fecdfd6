@testable import CutiE
import CutiEService
import Foundation
import PurseKit
import PurseHTTP
import PurseTestSupport
import Synchronization
import Testing

/// A transport that fails the next `failures` message posts as if offline, then passes through.
final class FlakyTransport: HTTPTransport {
    let inner: any HTTPTransport
    let failures = Mutex(0)

    init(_ inner: any HTTPTransport) { self.inner = inner }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.url.path.hasSuffix("/messages"), failures.withLock({ count in
            guard count > 0 else { return false }
            count -= 1
            return true
        }) {
            throw PurseError.offline("no connection")
        }
        return try await inner.send(request)
    }
}

@Suite("Cuti-E: the screens' view models")
@MainActor
struct CutiEViewModelTests {
    @Test("feedback: validation, sending, sent")
    func feedback() async throws {
        try await CutiEHarness.withServer { h in
            let device = h.device()
            let model = await CutiEFeedbackViewModel(cutie: device.cutie)
            await MainActor.run {
                #expect(model.validationMessage == "Write a message" && !model.canSend)
                model.message = String(repeating: "x", count: 5001)
                #expect(model.validationMessage == "At most 5000 characters")
                model.message = "The map does not load"
                model.category = .bug
                #expect(model.canSend)
            }
            await model.send()
            await MainActor.run {
                guard case .sent(let id) = model.state else { Issue.record("not sent: \(model.state)"); return }
                #expect(id.hasPrefix("conv_") && model.message.isEmpty)
            }
        }
    }

    @Test("inbox: empty state, then conversations with unread badges")
    func inbox() async throws {
        try await CutiEHarness.withServer { h in
            let device = h.device()
            let inbox = await CutiEInboxViewModel(cutie: device.cutie)
            await inbox.refresh()
            await MainActor.run { #expect(inbox.isEmpty) }
            let id = try await device.cutie.createConversation(category: .question, message: "How do I export?")
            let admin = try await h.adminSession()
            _ = try await h.adminReply(id, "Settings → Export", session: admin)
            await inbox.refresh()
            await MainActor.run {
                #expect(!inbox.isEmpty && inbox.totalUnread == 1)
                #expect(inbox.unreadBadge(for: inbox.conversations[0]) == "1")
            }
        }
    }

    @Test("conversation: an optimistic message fails offline, the retry stores it once")
    func conversation() async throws {
        try await CutiEHarness.withServer { h in
            let cutie = CutiE()
            let flaky = FlakyTransport(RouterTransport(client: h.client))
            let clock = h.server.clock
            cutie.configure(appId: "app_sandbox", apiURL: URL(string: "http://localhost")!, transport: flaky, store: InMemorySecureStore(),
                            preferences: InMemoryPreferences(), retry: .none, now: { clock.now })
            let id = try await cutie.createConversation(category: .bug, message: "First")
            let model = await CutiEConversationViewModel(conversationId: id, cutie: cutie)
            await model.load()
            flaky.failures.withLock { $0 = 1 }
            await MainActor.run { model.draft = "Second" }
            await model.send()
            let failed = await MainActor.run { () -> String? in
                #expect(model.rows.count == 2)
                guard case .failed = model.rows.last?.delivery else { Issue.record("not failed"); return nil }
                return model.rows.last?.id
            }
            await model.retry(try #require(failed))
            await model.load()
            await MainActor.run {
                #expect(model.rows.map(\.text) == ["First", "Second"])
                #expect(model.rows.allSatisfy { $0.delivery == .sent })
            }
            #expect(try await cutie.getConversation(id: id).messages?.count == 2)
        }
    }

    @Test("linking screens: the QR code, the other device confirms, the first sees it linked")
    func linking() async throws {
        try await CutiEHarness.withServer { h in
            let phone = h.device()
            let tablet = h.device()
            let show = await CutiELinkDeviceViewModel(cutie: phone.cutie, poller: Poller(interval: .milliseconds(20), multiplier: 1, maxAttempts: 200))
            let waiting = Task { await show.start() }
            var token: LinkToken?
            for _ in 0..<200 {
                if case .showing(let shown) = await MainActor.run(body: { show.state }) { token = shown; break }
                try await Task.sleep(for: .milliseconds(10))
            }
            let shown = try #require(token)
            await MainActor.run { #expect(show.qrSVG?.hasPrefix("<svg") == true) }
            let confirm = await CutiEConfirmLinkViewModel(cutie: tablet.cutie)
            await MainActor.run {
                confirm.code = "not a code"
                #expect(!confirm.canConfirm)
                confirm.code = shown.linkToken
                confirm.deviceName = "iPad"
            }
            await confirm.confirm()
            await waiting.value
            await MainActor.run {
                #expect(show.state == .linked)
                guard case .linked = confirm.state else { Issue.record("not linked: \(confirm.state)"); return }
            }
            let devices = await CutiELinkedDevicesViewModel(cutie: phone.cutie)
            await devices.load()
            await MainActor.run { #expect(devices.devices.map(\.deviceName).contains("iPad")) }
        }
    }
    /// Behind a network that answers 429 and 503, drops requests, loses answers, duplicates and
    /// delays (a seeded 40 % of requests), with no automatic retries: 20 conversations started from
    /// the feedback form and 12 messages from the conversation screen, each sent again from the
    /// screen until it is sent. The server holds exactly 20 conversations and each message once
    /// (a retried message lands after the ones sent meanwhile).
    @Test("feedback and messages behind a faulty network: each stored once")
    func faultyNetworkStoresEachOnce() async throws {
        try await CutiEHarness.withServer { h in
            let cutie = CutiE()
            let faulty = FaultInjectingTransport(RouterTransport(client: h.client), seed: 2028, percent: 40)
            let clock = h.server.clock
            cutie.configure(appId: "app_sandbox", apiURL: URL(string: "http://localhost")!, transport: faulty, store: InMemorySecureStore(),
                            preferences: InMemoryPreferences(), retry: .none, now: { clock.now })
            var conversations: [String] = []
            for index in 0..<20 {
                let form = await CutiEFeedbackViewModel(cutie: cutie)
                await MainActor.run { form.message = "Report \(index)" }
                for _ in 0..<30 {
                    await form.send()
                    if case .sent(let id) = await form.state { conversations.append(id); break }
                }
            }
            #expect(conversations.count == 20)
            let model = await CutiEConversationViewModel(conversationId: conversations[0], cutie: cutie)
            for index in 0..<12 {
                await MainActor.run { model.draft = "Message \(index)" }
                await model.send()
            }
            for _ in 0..<30 {
                let failed = await MainActor.run { model.rows.filter { if case .failed = $0.delivery { true } else { false } }.map(\.id) }
                if failed.isEmpty { break }
                for id in failed { await model.retry(id) }
            }
            #expect(await MainActor.run { model.rows.allSatisfy { $0.delivery == .sent } })
            var listed: [Conversation]?
            for _ in 0..<10 where listed == nil { listed = try? await cutie.getConversations() }
            #expect(Set((listed ?? []).map(\.id)) == Set(conversations), "one conversation per form sent")
            var stored: [String]?
            for _ in 0..<10 where stored == nil { stored = try? await cutie.getConversation(id: conversations[0]).messages?.map(\.message) }
            #expect(stored?.first == "Report 0" && stored?.sorted() == (["Report 0"] + (0..<12).map { "Message \($0)" }).sorted())
            #expect(faulty.totalFaults > 10, "faults injected: \(faulty.faults)")
        }
    }
}

import Foundation
import Observation
import PurseFormats
import PurseHTTP

/// `CutiEFeedbackView`: pick a category, write a message (and an optional title), send.
@MainActor
@Observable
public final class CutiEFeedbackViewModel {
    public enum State: Equatable, Sendable {
        case editing
        case sending
        case sent(conversationId: String)
        case failed(String)
    }

    public var category: ConversationCategory = .feedback
    public var title = ""
    public var message = ""
    public private(set) var state: State = .editing
    @ObservationIgnored let cutie: CutiE
    /// The key of the last attempt and what it sent: sending the same form again after a failure
    /// (its answer may have been lost) reuses the key, so the conversation starts once.
    @ObservationIgnored private var attempt: (key: String, content: [String])?
    public static let maxLength = 5000

    public init(cutie: CutiE = .shared) { self.cutie = cutie }

    /// Why the form cannot be sent yet, or nil.
    public var validationMessage: String? {
        if message.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { return "Write a message" }
        if message.unicodeScalars.count > Self.maxLength { return "At most \(Self.maxLength) characters" }
        if title.unicodeScalars.count > 200 { return "The title is too long" }
        return nil
    }

    public var canSend: Bool { validationMessage == nil && state != .sending }

    public func send() async {
        guard canSend else { return }
        state = .sending
        let content = [category.rawValue, title, message]
        let key = attempt.flatMap { $0.content == content ? $0.key : nil } ?? IdempotencyKey.make()
        attempt = (key, content)
        do {
            let id = try await cutie.createConversation(category: category, message: message, title: title.isEmpty ? nil : title, idempotencyKey: key)
            attempt = nil
            state = .sent(conversationId: id)
            message = ""
            title = ""
        } catch {
            state = .failed(error.description)
        }
    }

    public func reset() { state = .editing }
}

/// `CutiEInboxView`: the conversations with unread badges, pull to refresh, an empty state.
@MainActor
@Observable
public final class CutiEInboxViewModel {
    public private(set) var conversations: [Conversation] = []
    public private(set) var totalUnread = 0
    public private(set) var isLoading = false
    public private(set) var errorMessage: String?
    public private(set) var hasLoaded = false
    @ObservationIgnored let cutie: CutiE

    public init(cutie: CutiE = .shared) { self.cutie = cutie }

    /// Nothing to show once loaded: the "No conversations yet" screen.
    public var isEmpty: Bool { hasLoaded && conversations.isEmpty && errorMessage == nil }

    public func unreadBadge(for conversation: Conversation) -> String? {
        guard let count = conversation.unreadCount, count > 0 else { return nil }
        return count > 99 ? "99+" : String(count)
    }

    /// Loads or reloads (pull to refresh); a failure keeps what was shown.
    public func refresh() async {
        guard !isLoading else { return }
        isLoading = true
        defer { isLoading = false }
        do {
            let inbox = try await cutie.inbox()
            conversations = inbox.conversations
            totalUnread = inbox.totalUnread
            errorMessage = nil
            hasLoaded = true
        } catch {
            errorMessage = error.description
        }
    }
}

/// `CutiEConversationView`: the thread, and sending with an optimistic message that turns
/// into the stored one, or into a failed one the user can retry (stored once either way).
@MainActor
@Observable
public final class CutiEConversationViewModel {
    public struct Row: Identifiable, Equatable, Sendable {
        public enum Delivery: Equatable, Sendable { case sent, sending, failed(String) }
        /// The server's message id, or the client id while it is not stored.
        public let id: String
        public let text: String
        public let isFromUser: Bool
        public let senderName: String?
        public let createdAt: Int64
        public var delivery: Delivery
    }

    public let conversationId: String
    public private(set) var conversation: Conversation?
    public private(set) var rows: [Row] = []
    public var draft = ""
    public private(set) var isLoading = false
    public private(set) var errorMessage: String?
    @ObservationIgnored let cutie: CutiE
    @ObservationIgnored var pendingTexts: [String: String] = [:]

    public init(conversationId: String, cutie: CutiE = .shared) {
        self.conversationId = conversationId
        self.cutie = cutie
    }

    public var canSend: Bool {
        !draft.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty && conversation?.status != .closed
    }

    /// Loads the thread and marks support's replies read.
    public func load() async {
        isLoading = true
        defer { isLoading = false }
        do {
            let loaded = try await cutie.getConversation(id: conversationId)
            conversation = loaded
            let stored = (loaded.messages ?? []).map {
                Row(id: $0.id, text: $0.message, isFromUser: $0.isFromUser, senderName: $0.senderName, createdAt: $0.createdAt, delivery: .sent)
            }
            let storedClientIDs = Set((loaded.messages ?? []).compactMap(\.clientID))
            let unsent = rows.filter { $0.delivery != .sent && !storedClientIDs.contains($0.id) }
            rows = stored + unsent
            errorMessage = nil
            if loaded.hasUnread { try await cutie.markAllRead(conversationId: conversationId) }
        } catch {
            errorMessage = error.description
        }
    }

    /// Sends the draft: shown at once, then confirmed or marked failed.
    public func send() async {
        guard canSend else { return }
        let text = draft
        draft = ""
        let clientID = IdempotencyKey.make()
        pendingTexts[clientID] = text
        rows.append(Row(id: clientID, text: text, isFromUser: true, senderName: nil, createdAt: Int64(Date().timeIntervalSince1970 * 1000), delivery: .sending))
        await deliver(clientID)
    }

    /// Sends a failed message again (the same client id: the server keeps one copy).
    public func retry(_ rowID: String) async {
        guard let index = rows.firstIndex(where: { $0.id == rowID }), case .failed = rows[index].delivery else { return }
        rows[index].delivery = .sending
        await deliver(rowID)
    }

    func deliver(_ clientID: String) async {
        guard let text = pendingTexts[clientID] else { return }
        do {
            let stored = try await cutie.sendMessage(text, to: conversationId, clientId: clientID)
            pendingTexts[clientID] = nil
            if let index = rows.firstIndex(where: { $0.id == clientID }) {
                rows[index] = Row(id: stored.id, text: stored.message, isFromUser: true, senderName: stored.senderName, createdAt: stored.createdAt, delivery: .sent)
            }
        } catch {
            if let index = rows.firstIndex(where: { $0.id == clientID }) { rows[index].delivery = .failed(error.description) }
        }
    }
}

/// The linking screen of the device that invites: a link token as a QR code, and its status
/// until the other device confirms or it expires.
@MainActor
@Observable
public final class CutiELinkDeviceViewModel {
    public enum State: Equatable, Sendable {
        case idle
        case creating
        case showing(LinkToken)
        case linked
        case expired
        case failed(String)
    }

    public private(set) var state: State = .idle
    public private(set) var qrCode: QRCode?
    @ObservationIgnored let cutie: CutiE
    @ObservationIgnored let poller: Poller

    public init(cutie: CutiE = .shared, poller: Poller = Poller(interval: .seconds(2), multiplier: 1, maxAttempts: 300)) {
        self.cutie = cutie
        self.poller = poller
    }

    /// The QR code as SVG, for a web view or an image.
    public var qrSVG: String? { qrCode?.svg() }

    /// Makes a token and shows it, then waits (polling its status) for the other device.
    public func start() async {
        state = .creating
        do {
            let token = try await cutie.initiateLinkToken()
            qrCode = cutie.linkQRCode(for: token)
            state = .showing(token)
            let cutie = self.cutie
            let status = try await poller.poll { () async throws -> PollStatus<LinkStatus> in
                let status = try await cutie.checkLinkStatus(token: token.linkToken).status
                return status == .pending ? .pending : .done(status)
            }
            state = status == .confirmed ? .linked : .expired
        } catch let error as CutiEError {
            state = .failed(error.description)
        } catch {
            state = .expired
        }
    }
}

/// The linking screen of the device that joins: the scanned (or typed) code and a name for this device.
@MainActor
@Observable
public final class CutiEConfirmLinkViewModel {
    public enum State: Equatable, Sendable { case editing, confirming, linked(groupId: String), failed(String) }

    public var code = ""
    public var deviceName = ""
    public private(set) var state: State = .editing
    @ObservationIgnored let cutie: CutiE

    public init(cutie: CutiE = .shared) { self.cutie = cutie }

    public var canConfirm: Bool { code.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("lnk_") && state != .confirming }

    public func confirm() async {
        guard canConfirm else { return }
        state = .confirming
        do {
            let group = try await cutie.confirmLink(token: code, deviceName: deviceName.isEmpty ? nil : deviceName).groupId
            state = .linked(groupId: group)
        } catch .serverError(404, _) {
            state = .failed("That code is not valid")
        } catch .serverError(let status, let message) where (400..<500).contains(status) {
            state = .failed(message)
        } catch {
            state = .failed(error.description)
        }
    }
}

/// The linked devices list, with unlinking.
@MainActor
@Observable
public final class CutiELinkedDevicesViewModel {
    public private(set) var devices: [LinkedDevice] = []
    public private(set) var errorMessage: String?
    @ObservationIgnored let cutie: CutiE

    public init(cutie: CutiE = .shared) { self.cutie = cutie }

    public func load() async {
        do {
            devices = try await cutie.getLinkedDevices().devices
            errorMessage = nil
        } catch {
            errorMessage = error.description
        }
    }

    public func unlink(_ device: LinkedDevice) async {
        do {
            try await cutie.unlinkDevice(device.deviceId)
            await load()
        } catch {
            errorMessage = error.description
        }
    }
}
